public import Foundation
import IsletCore
import IsletCrypto
import IsletLog
public import Storage

/// Which webhook URLs are accepted, and how many webhooks an app may have.
public struct WebhookPolicy: Sendable {
    /// Whether plain `http` URLs are accepted (`--webhooks-allow-http`).
    public var allowHTTP: Bool
    /// Whether loopback, private, link-local and metadata addresses are accepted
    /// (`--webhooks-allow-private`).
    public var allowPrivate: Bool
    /// Why `host` (resolved, at `port`) may not receive webhooks, or nil when it may:
    /// resolution and address ranges, checked when a webhook is saved (and by the
    /// sender again on every connection).
    public var addressRefusal: @Sendable (_ host: String, _ port: Int) async -> String?
    /// Webhooks an app may have, at most (`--max-webhooks-per-app`).
    public var maxPerApp: Int

    /// The default of `maxPerApp`.
    public static let defaultMaxPerApp = 50

    /// A policy.
    public init(
        allowHTTP: Bool = false, allowPrivate: Bool = false, maxPerApp: Int = WebhookPolicy.defaultMaxPerApp,
        addressRefusal: @escaping @Sendable (_ host: String, _ port: Int) async -> String? = { _, _ in nil }
    ) {
        self.allowHTTP = allowHTTP
        self.allowPrivate = allowPrivate
        self.maxPerApp = maxPerApp
        self.addressRefusal = addressRefusal
    }
}

/// A new webhook.
public struct CreateWebhook: Sendable {
    /// The app.
    public var appID: String
    /// Where deliveries go.
    public var url: String
    /// The event patterns it takes.
    public var events: [String]
    /// What it is for.
    public var description: String?

    /// A command.
    public init(appID: String, url: String, events: [String], description: String?) {
        self.appID = appID
        self.url = url
        self.events = events
        self.description = description
    }
}

/// Changes to a webhook: each field given replaces the stored one.
public struct UpdateWebhook: Sendable {
    /// The app.
    public var appID: String
    /// The webhook.
    public var webhookID: String
    /// A new URL.
    public var url: String?
    /// New event patterns.
    public var events: [String]?
    /// A new description (an empty one removes it).
    public var description: String?
    /// Enables (the failure count starts again) or disables it.
    public var enabled: Bool?

    /// A command.
    public init(appID: String, webhookID: String, url: String? = nil, events: [String]? = nil, description: String? = nil, enabled: Bool? = nil) {
        self.appID = appID
        self.webhookID = webhookID
        self.url = url
        self.events = events
        self.description = description
        self.enabled = enabled
    }
}

/// A page of an app's webhooks, oldest first.
public struct WebhookPage: Sendable {
    /// The webhooks.
    public let items: [WebhookRecord]
    /// Where the next page starts, when there may be one.
    public let nextCursor: WebhookCursor?
}

/// A page of deliveries, newest first.
public struct WebhookDeliveryPage: Sendable {
    /// The deliveries.
    public let items: [WebhookDeliveryRecord]
    /// Where the next page starts (a delivery sequence), when there may be one.
    public let nextCursor: Int64?
}

/// Webhook endpoints of an app: saved after their URL is checked (scheme, and the
/// addresses it resolves to), each with a signing secret shown once, rotated on
/// demand; their deliveries listed and retried. Sending is `WebhookDispatcher`'s.
public struct WebhookService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = AppStore & EventStore & WebhookStore

    private let environment: ServiceEnvironment
    private let policy: WebhookPolicy

    /// How long the secret replaced by a rotation still signs deliveries too.
    public static let rotationOverlap: TimeInterval = 24 * 3600
    /// Longest URL accepted.
    static let maxURLLength = 2_048
    /// Longest description accepted.
    static let maxDescriptionLength = 500

    /// Creates the service.
    public init(environment: ServiceEnvironment, policy: WebhookPolicy) {
        self.environment = environment
        self.policy = policy
    }

    /// Whether plain `http` URLs are accepted.
    public var allowsHTTP: Bool { policy.allowHTTP }

    /// Saves a webhook; its record holds the secret, shown to the caller this once.
    /// Only events after this moment are delivered to it. An app that has
    /// `maxPerApp` webhooks already gets `conflict`, naming the cap.
    public func create(_ command: CreateWebhook) async throws(ServiceError) -> WebhookRecord {
        try await checkURL(command.url)
        let events = try Self.checkEvents(command.events)
        let description = try Self.checkDescription(command.description)
        let secret = try WebhookSignature.newSecret()
        let id = try Self.newID()
        let now = environment.clock.now()
        return try await environment.write { (session: any Stores) -> WebhookRecord in
            guard try session.app(id: command.appID) != nil else { throw ServiceError(.notFound, "No app \(command.appID).") }
            let count = try session.lockedWebhookCount(appID: command.appID)
            guard count < policy.maxPerApp else {
                throw ServiceError(
                    .conflict,
                    "App \(command.appID) has \(count) webhooks, the most an app may have (\(policy.maxPerApp), "
                        + "--max-webhooks-per-app); remove one first.",
                    reason: "webhook_limit")
            }
            let webhook = WebhookRecord(
                webhookID: id, appID: command.appID, url: command.url, events: events,
                description: description, secret: secret, cursor: try session.latestEventSequence(), createdAt: now,
                updatedAt: now)
            try session.insertWebhook(webhook)
            return webhook
        }
    }

    /// The app's webhooks, oldest first.
    public func list(appID: String) async throws(ServiceError) -> [WebhookRecord] {
        try await environment.read { (session: any Stores) in try session.webhooks(appID: appID) }
    }

    /// A page of the app's webhooks, oldest first, after `after`.
    public func list(appID: String, after: WebhookCursor?, limit: Int) async throws(ServiceError) -> WebhookPage {
        let items = try await environment.read { (session: any Stores) in
            try session.webhooks(appID: appID, after: after, limit: limit)
        }
        let last = items.count == limit ? items.last : nil
        return WebhookPage(items: items, nextCursor: last.map { WebhookCursor(createdAt: $0.createdAt, webhookID: $0.webhookID) })
    }

    /// One webhook, or `notFound`.
    public func show(appID: String, webhookID: String) async throws(ServiceError) -> WebhookRecord {
        try await environment.read { (session: any Stores) in
            try Self.webhook(session, appID: appID, webhookID: webhookID)
        }
    }

    /// Changes a webhook. Enabling one that Islet disabled clears its failures.
    public func update(_ command: UpdateWebhook) async throws(ServiceError) -> WebhookRecord {
        if let url = command.url { try await checkURL(url) }
        let events = try command.events.map(Self.checkEvents)
        var checked: String??
        if let text = command.description { checked = .some(try Self.checkDescription(text)) }
        let description = checked
        let now = environment.clock.now()
        return try await environment.write { (session: any Stores) -> WebhookRecord in
            var webhook = try Self.webhook(session, appID: command.appID, webhookID: command.webhookID)
            if let url = command.url { webhook.url = url }
            if let events { webhook.events = events }
            if let description { webhook.description = description }
            if let enabled = command.enabled, enabled != webhook.enabled {
                webhook.enabled = enabled
                webhook.failingSince = nil
                webhook.disabledReason = enabled ? nil : "disabled by its owner"
                if !enabled {
                    try session.failPendingDeliveries(webhookID: webhook.webhookID, reason: "the webhook was disabled", now: now)
                }
            }
            webhook.updatedAt = now
            try session.updateWebhook(webhook)
            return webhook
        }
    }

    /// Removes a webhook and its deliveries, or `notFound`.
    public func delete(appID: String, webhookID: String) async throws(ServiceError) {
        let removed = try await environment.write { (session: any Stores) in
            try session.deleteWebhook(appID: appID, webhookID: webhookID)
        }
        guard removed else { throw ServiceError(.notFound, "No webhook \(webhookID).") }
    }

    /// Gives a webhook a new secret, answered this once; the old one keeps signing
    /// (as a second signature) for `rotationOverlap`, so that receivers switch
    /// without refusing a delivery.
    public func rotateSecret(appID: String, webhookID: String) async throws(ServiceError) -> WebhookRecord {
        let secret = try WebhookSignature.newSecret()
        let now = environment.clock.now()
        return try await environment.write { (session: any Stores) -> WebhookRecord in
            var webhook = try Self.webhook(session, appID: appID, webhookID: webhookID)
            webhook.previousSecret = webhook.secret
            webhook.previousSecretUntil = now.addingTimeInterval(Self.rotationOverlap)
            webhook.secret = secret
            webhook.updatedAt = now
            try session.updateWebhook(webhook)
            return webhook
        }
    }

    /// A page of a webhook's deliveries, newest first.
    public func deliveries(
        appID: String, webhookID: String, before: Int64?, limit: Int
    ) async throws(ServiceError) -> WebhookDeliveryPage {
        let items = try await environment.read { (session: any Stores) -> [WebhookDeliveryRecord] in
            _ = try Self.webhook(session, appID: appID, webhookID: webhookID)
            return try session.deliveries(appID: appID, webhookID: webhookID, before: before, limit: limit)
        }
        return WebhookDeliveryPage(items: items, nextCursor: items.count == limit ? items.last?.sequence : nil)
    }

    /// Sends a delivery again now (with the same `webhook-id`): `conflict` while it
    /// is being sent, `notFound` when there is no such delivery.
    public func retry(appID: String, webhookID: String, deliveryID: String) async throws(ServiceError) -> WebhookDeliveryRecord {
        guard let sequence = WebhookDeliveryRecord.sequence(of: deliveryID) else {
            throw ServiceError(.notFound, "No delivery \(deliveryID).")
        }
        let now = environment.clock.now()
        let delivery = try await environment.write { (session: any Stores) -> WebhookDeliveryRecord in
            let webhook = try Self.webhook(session, appID: appID, webhookID: webhookID)
            guard try session.delivery(appID: appID, webhookID: webhookID, sequence: sequence) != nil else {
                throw ServiceError(.notFound, "No delivery \(deliveryID) of webhook \(webhookID).")
            }
            guard webhook.enabled else {
                throw ServiceError(.conflict, "Webhook \(webhookID) is disabled; enable it (PATCH enabled: true) first.")
            }
            guard try session.retryDelivery(appID: appID, webhookID: webhookID, sequence: sequence, now: now) else {
                throw ServiceError(.conflict, "Delivery \(deliveryID) is being sent right now.")
            }
            guard let delivery = try session.delivery(appID: appID, webhookID: webhookID, sequence: sequence) else {
                throw ServiceError(.notFound, "No delivery \(deliveryID) of webhook \(webhookID).")
            }
            return delivery
        }
        return delivery
    }

    // MARK: - Rules

    private static func webhook(_ session: any WebhookStore, appID: String, webhookID: String) throws -> WebhookRecord {
        guard let webhook = try session.webhook(appID: appID, webhookID: webhookID) else {
            throw ServiceError(.notFound, "No webhook \(webhookID).")
        }
        return webhook
    }

    private static func newID() throws(ServiceError) -> String {
        do {
            return "wh_" + (try SecureRandom.bytes(10)).map { String(format: "%02x", $0) }.joined()
        } catch {
            throw ServiceError(.failed, "No random bytes for a webhook id: \(error)")
        }
    }

    /// The URL's rules: https (or http when allowed), a host, no credentials, and
    /// (unless private addresses are allowed) only public addresses behind the host.
    func checkURL(_ text: String) async throws(ServiceError) {
        func refuse(_ message: String) -> ServiceError {
            ServiceError.invalid("The webhook URL is refused: \(message).", field: "url", message)
        }
        guard text.utf8.count <= Self.maxURLLength else { throw refuse("longer than \(Self.maxURLLength) bytes") }
        guard let components = URLComponents(string: text), let scheme = components.scheme?.lowercased() else {
            throw refuse("not an absolute URL")
        }
        switch scheme {
        case "https": break
        case "http" where policy.allowHTTP: break
        case "http": throw refuse("must be https (plain http needs --webhooks-allow-http)")
        default: throw refuse("must be https, not \(scheme)")
        }
        guard var host = components.host, !host.isEmpty else { throw refuse("has no host") }
        guard components.user == nil, components.password == nil else { throw refuse("must not carry credentials") }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        let port = components.port ?? (scheme == "https" ? 443 : 80)
        guard !policy.allowPrivate else { return }
        if let reason = await policy.addressRefusal(host, port) {
            throw refuse("\(reason) (private addresses need --webhooks-allow-private)")
        }
    }

    static func checkEvents(_ events: [String]) throws(ServiceError) -> [String] {
        guard !events.isEmpty else {
            throw ServiceError.invalid("A webhook takes at least one event type.", field: "events", "must list at least one event type or pattern")
        }
        var seen: [String] = []
        for (index, text) in events.enumerated() {
            guard EventPattern(text) != nil else {
                throw ServiceError.invalid(
                    "\(text) is no event type.", field: "events[\(index)]", "must be \(EventPattern.explanation)")
            }
            if !seen.contains(text) { seen.append(text) }
        }
        return seen
    }

    static func checkDescription(_ text: String?) throws(ServiceError) -> String? {
        guard let text else { return nil }
        guard text.count <= maxDescriptionLength else {
            throw ServiceError.invalid(
                "The description is too long.", field: "description", "must be at most \(maxDescriptionLength) characters")
        }
        return text.isEmpty ? nil : text
    }
}
