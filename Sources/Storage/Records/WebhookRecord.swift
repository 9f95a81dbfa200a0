public import Foundation
import IsletCore

/// A webhook endpoint of an app, as stored.
public struct WebhookRecord: Sendable, Hashable {
    /// The public id (`wh_…`).
    public var webhookID: String
    /// The app.
    public var appID: String
    /// Where deliveries go.
    public var url: String
    /// The event patterns it takes.
    public var events: [String]
    /// What it is for, as its owner wrote.
    public var description: String?
    /// The signing secret (`whsec_…`).
    public var secret: String
    /// The secret replaced by the last rotation, which still signs until
    /// `previousSecretUntil` (receivers switch without losing a delivery).
    public var previousSecret: String?
    /// Until when `previousSecret` signs too.
    public var previousSecretUntil: Date?
    /// Whether it receives deliveries.
    public var enabled: Bool
    /// Why Islet disabled it, when it did.
    public var disabledReason: String?
    /// Since when every attempt to it has failed (nil while it succeeds).
    public var failingSince: Date?
    /// The last event sequence it has been given deliveries for.
    public var cursor: Int64
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        webhookID: String, appID: String, url: String, events: [String], description: String?, secret: String,
        previousSecret: String? = nil, previousSecretUntil: Date? = nil, enabled: Bool = true,
        disabledReason: String? = nil, failingSince: Date? = nil, cursor: Int64, createdAt: Date, updatedAt: Date
    ) {
        self.webhookID = webhookID
        self.appID = appID
        self.url = url
        self.events = events
        self.description = description
        self.secret = secret
        self.previousSecret = previousSecret
        self.previousSecretUntil = previousSecretUntil
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.failingSince = failingSince
        self.cursor = cursor
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }

    /// Whether it takes events of `type`.
    public func takes(_ type: String) -> Bool {
        EventPattern.any(events.compactMap(EventPattern.init), match: type)
    }
}

/// Where a webhook delivery is.
public enum WebhookDeliveryStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its first attempt or for a retry.
    case pending
    /// Being sent now.
    case delivering
    /// The endpoint answered 2xx.
    case succeeded
    /// Every attempt failed for 24 hours, or the webhook was disabled or removed.
    case failed
}

/// One event to be delivered to one webhook, as stored.
public struct WebhookDeliveryRecord: Sendable, Hashable {
    /// Its row id; the public id is `dlv_` and this.
    public var sequence: Int64
    /// The webhook.
    public var webhookID: String
    /// The app.
    public var appID: String
    /// The event's sequence.
    public var eventSequence: Int64
    /// The event's type.
    public var eventType: String
    /// Deliveries of one key go out one at a time, in order (the activity's id).
    public var orderingKey: String?
    /// Where it is.
    public var status: WebhookDeliveryStatus
    /// Attempts made.
    public var attempts: Int
    /// When it is tried next (while pending).
    public var nextAttemptAt: Date?
    /// The HTTP status of the last attempt, when the endpoint answered.
    public var responseStatus: Int?
    /// What went wrong on the last attempt.
    public var error: String?
    /// How long the last attempt took.
    public var durationMilliseconds: Int?
    /// When it was made.
    public var createdAt: Date
    /// When it was last tried.
    public var lastAttemptAt: Date?

    /// Creates a record.
    public init(
        sequence: Int64, webhookID: String, appID: String, eventSequence: Int64, eventType: String, orderingKey: String?,
        status: WebhookDeliveryStatus, attempts: Int, nextAttemptAt: Date?, responseStatus: Int?, error: String?,
        durationMilliseconds: Int?, createdAt: Date, lastAttemptAt: Date?
    ) {
        self.sequence = sequence
        self.webhookID = webhookID
        self.appID = appID
        self.eventSequence = eventSequence
        self.eventType = eventType
        self.orderingKey = orderingKey
        self.status = status
        self.attempts = attempts
        self.nextAttemptAt = nextAttemptAt
        self.responseStatus = responseStatus
        self.error = error
        self.durationMilliseconds = durationMilliseconds
        self.createdAt = createdAt
        self.lastAttemptAt = lastAttemptAt
    }

    /// The public id of the delivery at `sequence`.
    public static func id(_ sequence: Int64) -> String { "dlv_\(sequence)" }

    /// The sequence of the public id `id`, when it is one.
    public static func sequence(of id: String) -> Int64? {
        guard id.hasPrefix("dlv_"), let number = Int64(id.dropFirst(4)), number >= 0 else { return nil }
        return number
    }
}

/// A delivery claimed for sending, with what sending it takes.
public struct ClaimedWebhookDelivery: Sendable, Hashable {
    /// The delivery.
    public var delivery: WebhookDeliveryRecord
    /// Where it goes.
    public var url: String
    /// The secrets that sign it (the current one first).
    public var secrets: [String]
    /// The event it carries.
    public var event: EventRecord

    /// Creates a claim.
    public init(delivery: WebhookDeliveryRecord, url: String, secrets: [String], event: EventRecord) {
        self.delivery = delivery
        self.url = url
        self.secrets = secrets
        self.event = event
    }
}

/// What one attempt of a delivery came to.
public struct WebhookAttempt: Sendable, Hashable {
    /// `succeeded`, `pending` (tried again at `nextAttemptAt`) or `failed`.
    public var status: WebhookDeliveryStatus
    /// The HTTP status, when the endpoint answered.
    public var responseStatus: Int?
    /// What went wrong.
    public var error: String?
    /// How long it took.
    public var durationMilliseconds: Int
    /// When it is tried again (for `pending`).
    public var nextAttemptAt: Date?

    /// An attempt's outcome.
    public init(
        status: WebhookDeliveryStatus, responseStatus: Int?, error: String?, durationMilliseconds: Int, nextAttemptAt: Date?
    ) {
        self.status = status
        self.responseStatus = responseStatus
        self.error = error
        self.durationMilliseconds = durationMilliseconds
        self.nextAttemptAt = nextAttemptAt
    }
}
