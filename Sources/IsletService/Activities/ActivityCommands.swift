public import Foundation
public import IsletCore
public import Storage

/// A remote start: a push-to-start to every device of the audience holding a token
/// for the activity's type.
public struct StartActivity: Sendable {
    /// The app, as authenticated.
    public var app: AppRecord
    /// The new activity's id.
    public var activityID: String
    /// Its type (the app's `ActivityAttributes` type name).
    public var activityType: String
    /// Its attributes; Islet adds `islet_activity_id`.
    public var attributes: JSONValue?
    /// The first content state.
    public var contentState: JSONValue?
    /// An alert shown with the start.
    public var alert: PushAlert?
    /// Who it goes to; `nil` only for an activity on a channel that the app starts
    /// on its devices itself.
    public var audience: Audience?
    /// When Islet ends it.
    public var endAt: Date?
    /// `aps.stale-date`.
    public var staleDate: Date?
    /// `aps.relevance-score`.
    public var relevanceScore: Double?
    /// `apns-priority`.
    public var priority: Int?
    /// The idempotency key, if the command has one.
    public var idempotency: IdempotencyKey?
    /// Who may follow it; `nil` takes the default: `audience` when the start names
    /// one, `anyone` when it names none.
    public var join: JoinRule?
    /// Update tokens, broadcast channels, or Islet's choice.
    public var delivery: DeliveryRequest = .tokens
    /// The channel to use (its `channel_id`), with `channel` delivery.
    public var channelID: String?
    /// The environment of the channel Islet creates for an activity without an
    /// audience (production when not given).
    public var channelEnvironment: APNsEnvironment?
    /// The attributes and content state were stored by Islet (already checked and
    /// converted): a renewal starts its successor with them.
    var storedContent = false
    /// The channels the start uses, once prepared (`ActivityService.prepareChannels`).
    var channelPlan: ChannelPlan?

    /// Who may follow it: `join`, or its default.
    public var effectiveJoin: JoinRule { join ?? (audience == nil ? .anyone : .audience) }

    /// Creates the command.
    public init(
        app: AppRecord, activityID: String, activityType: String, attributes: JSONValue?, contentState: JSONValue?,
        alert: PushAlert?, audience: Audience?, endAt: Date?, staleDate: Date?, relevanceScore: Double?,
        priority: Int?, idempotency: IdempotencyKey?
    ) {
        self.app = app
        self.activityID = activityID
        self.activityType = activityType
        self.attributes = attributes
        self.contentState = contentState
        self.alert = alert
        self.audience = audience
        self.endAt = endAt
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.idempotency = idempotency
    }
}

/// A new content state for every device holding the activity.
public struct UpdateActivity: Sendable {
    /// The app, as authenticated.
    public var app: AppRecord
    /// The activity.
    public var activityID: String
    /// The new content state.
    public var contentState: JSONValue?
    /// An alert shown with the update.
    public var alert: PushAlert?
    /// A new end time.
    public var endAt: Date?
    /// `aps.stale-date`.
    public var staleDate: Date?
    /// `aps.relevance-score`.
    public var relevanceScore: Double?
    /// `apns-priority`.
    public var priority: Int?
    /// The idempotency key, if the command has one.
    public var idempotency: IdempotencyKey?

    /// Creates the command.
    public init(
        app: AppRecord, activityID: String, contentState: JSONValue?, alert: PushAlert?, endAt: Date?,
        staleDate: Date?, relevanceScore: Double?, priority: Int?, idempotency: IdempotencyKey?
    ) {
        self.app = app
        self.activityID = activityID
        self.contentState = contentState
        self.alert = alert
        self.endAt = endAt
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.idempotency = idempotency
    }
}

/// The end of an activity on every device holding it.
public struct EndActivity: Sendable {
    /// The app, as authenticated.
    public var app: AppRecord
    /// The activity.
    public var activityID: String
    /// The final content state; without one the last is sent again.
    public var contentState: JSONValue?
    /// When the device removes it from the Lock Screen.
    public var dismissalDate: Date?
    /// Why it ends (`server` for a command, `scheduled` for its end time).
    public var cause: EndCause
    /// The idempotency key, if the command has one.
    public var idempotency: IdempotencyKey?

    /// Creates the command.
    public init(
        app: AppRecord, activityID: String, contentState: JSONValue?, dismissalDate: Date?, cause: EndCause = .server,
        idempotency: IdempotencyKey?
    ) {
        self.app = app
        self.activityID = activityID
        self.contentState = contentState
        self.dismissalDate = dismissalDate
        self.cause = cause
        self.idempotency = idempotency
    }
}

/// What a start queued.
public struct StartResult: ReplayableResult, Hashable {
    /// The activity.
    public let activityID: String
    /// How many devices it goes to.
    public let targets: Int
    /// How many of those wait, their device having had all the starts it may have
    /// in an hour.
    public let deferred: Int
    /// Keys the device ignores, as `content_state.foo: …`.
    public let warnings: [String]
    /// How its updates and end go.
    public var delivery: ActivityDelivery = .tokens
    /// Why, when Islet chose (`auto`).
    public var deliveryReason: String?
    /// Its channels (`channel_id`s), with channel delivery.
    public var channels: [String] = []
    /// How many of the targets subscribe to a channel (the others get a token start).
    public var channelTargets = 0
    /// How many of the targets are Android devices (reached through FCM).
    public var androidTargets = 0

    public var accepted: Bool { true }

    public var limited: (downgraded: Int, deferred: Int) { (0, deferred) }

    public var json: JSONValue {
        var answer: [String: JSONValue] = [
            "activity_id": .string(activityID), "targets": .integer(Int64(targets)),
            "deferred": .integer(Int64(deferred)), "delivery": .string(delivery.rawValue),
        ]
        if let deliveryReason { answer["delivery_reason"] = .string(deliveryReason) }
        if delivery == .channel {
            answer["channels"] = .array(channels.map(JSONValue.string))
            answer["channel_targets"] = .integer(Int64(channelTargets))
        }
        if androidTargets > 0 { answer["android_targets"] = .integer(Int64(androidTargets)) }
        if !warnings.isEmpty { answer["warnings"] = .array(warnings.map(JSONValue.string)) }
        return .object(answer)
    }

    public init(json: JSONValue) throws {
        guard let activityID = json["activity_id"]?.stringValue, let targets = json["targets"]?.int64Value else {
            throw StoreError(.corrupt, "a stored start answer lacks activity_id or targets")
        }
        self.init(
            activityID: activityID, targets: Int(targets), deferred: Int(json["deferred"]?.int64Value ?? 0),
            warnings: json["warnings"]?.stringArray ?? [])
        delivery = json["delivery"]?.stringValue.flatMap(ActivityDelivery.init(rawValue:)) ?? .tokens
        deliveryReason = json["delivery_reason"]?.stringValue
        channels = json["channels"]?.stringArray ?? []
        channelTargets = Int(json["channel_targets"]?.int64Value ?? 0)
        androidTargets = Int(json["android_targets"]?.int64Value ?? 0)
    }

    init(activityID: String, targets: Int, deferred: Int = 0, warnings: [String]) {
        self.activityID = activityID
        self.targets = targets
        self.deferred = deferred
        self.warnings = warnings
    }
}

/// What an update or end queued, or, for an end, that the activity had already
/// ended and nothing was sent.
public struct ActivitySendResult: ReplayableResult, Hashable {
    /// The activity.
    public let activityID: String
    /// How many devices it goes to.
    public let targets: Int
    /// How many queued updates it replaced.
    public let superseded: Int
    /// How many of its pushes go at priority 5 instead of 10, their copy's
    /// priority-10 budget spent.
    public let priorityDowngraded: Int
    /// Keys the device ignores.
    public let warnings: [String]
    /// The activity had ended before; nothing was queued.
    public let alreadyEnded: Bool
    /// Of the pushes, how many are broadcasts to the activity's channels (each
    /// reaching every subscriber); the others go to copies' own tokens.
    public var broadcasts = 0
    /// Of the targets, how many are Android devices (reached through FCM).
    public var androidTargets = 0

    public var accepted: Bool { !alreadyEnded }

    public var limited: (downgraded: Int, deferred: Int) { (priorityDowngraded, 0) }

    public var json: JSONValue {
        if alreadyEnded {
            return .object([
                "activity_id": .string(activityID), "targets": 0, "status": "ended",
                "detail": "The activity had already ended; nothing was sent.",
            ])
        }
        var answer: [String: JSONValue] = [
            "activity_id": .string(activityID), "targets": .integer(Int64(targets)),
            "superseded": .integer(Int64(superseded)), "priority_downgraded": .integer(Int64(priorityDowngraded)),
        ]
        if broadcasts > 0 { answer["broadcasts"] = .integer(Int64(broadcasts)) }
        if androidTargets > 0 { answer["android_targets"] = .integer(Int64(androidTargets)) }
        if !warnings.isEmpty { answer["warnings"] = .array(warnings.map(JSONValue.string)) }
        return .object(answer)
    }

    public init(json: JSONValue) throws {
        guard let activityID = json["activity_id"]?.stringValue, let targets = json["targets"]?.int64Value else {
            throw StoreError(.corrupt, "a stored send answer lacks activity_id or targets")
        }
        self.init(
            activityID: activityID, targets: Int(targets), superseded: Int(json["superseded"]?.int64Value ?? 0),
            priorityDowngraded: Int(json["priority_downgraded"]?.int64Value ?? 0),
            warnings: json["warnings"]?.stringArray ?? [], alreadyEnded: json["status"]?.stringValue == "ended")
        broadcasts = Int(json["broadcasts"]?.int64Value ?? 0)
        androidTargets = Int(json["android_targets"]?.int64Value ?? 0)
    }

    init(
        activityID: String, targets: Int, superseded: Int, priorityDowngraded: Int = 0, warnings: [String],
        alreadyEnded: Bool
    ) {
        self.activityID = activityID
        self.targets = targets
        self.superseded = superseded
        self.priorityDowngraded = priorityDowngraded
        self.warnings = warnings
        self.alreadyEnded = alreadyEnded
    }
}

extension JSONValue {
    /// The strings of an array of strings.
    var stringArray: [String]? {
        guard case .array(let items) = self else { return nil }
        return items.compactMap(\.stringValue)
    }
}
