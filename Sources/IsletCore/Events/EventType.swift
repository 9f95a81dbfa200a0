/// What an event says happened. Each is written in the transaction of the change
/// it describes, so that none is lost and none describes a change rolled back.
public enum EventType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A remote start was queued, or a device reported an activity the app started.
    case activityStarted = "activity.started"
    /// An update was queued to the devices holding the activity.
    case activityUpdated = "activity.updated"
    /// The activity ended, with its cause.
    case activityEnded = "activity.ended"
    /// A device's update token for an activity arrived (after a push-to-start, or
    /// for an activity the app started itself).
    case activityTokenRegistered = "activity.token_registered"
    /// APNs accepted a push-to-start, and no update token came back in time: the
    /// activity most likely never appeared on the device.
    case activityStartUnconfirmed = "activity.start_unconfirmed"
    /// Someone tapped the activity on a device (the app reported it), attributed to
    /// a push.
    case activityTapped = "activity.tapped"
    /// A device said it showed a send of the activity (a receipt, for a type with
    /// receipts on).
    case activityReceived = "activity.received"
    /// APNs accepted a push.
    case pushSent = "push.sent"
    /// APNs refused a push, or every retry failed.
    case pushFailed = "push.failed"
    /// A push was not sent and never will be (a newer one replaced it, its
    /// activity ended, its token went away).
    case pushDropped = "push.dropped"
    /// A send to an activity's copies is over: every window of it settled (or it
    /// was stopped, a newer update superseding it), with what it came to.
    case sendCompleted = "send.completed"
    /// APNs refused a token as no longer valid, and what Islet did about it.
    case tokenRejected = "token.rejected"
    /// A device's device token was refused, so it gets no more alerts.
    case deviceUnreachable = "device.unreachable"
    /// A scheduled send or a timeline entry was sent at its time.
    case scheduleFired = "schedule.fired"
    /// A scheduled send or a timeline entry could not be sent at its time.
    case scheduleDropped = "schedule.dropped"
    /// A webhook failed for too long and was disabled.
    case webhookDisabled = "webhook.disabled"
    /// The app has 95% of the channels APNs allows in an environment: a start with
    /// `delivery: auto` went on tokens instead of creating another.
    case channelLimitNear = "channel.limit_near"

    /// The family: the part before the dot (`activity`, `push`, …).
    public var family: Substring { rawValue.prefix { $0 != "." } }
}

/// Which event types a webhook or a stream takes: an exact type (`push.failed`), a
/// family (`activity.*`) or everything (`*`).
public struct EventPattern: Sendable, Hashable, CustomStringConvertible {
    /// As written.
    public let text: String

    /// The pattern `text`, when it names a type, a family of types, or `*`.
    public init?(_ text: String) {
        if text == "*" || EventType(rawValue: text) != nil {
            self.text = text
            return
        }
        guard text.hasSuffix(".*") else { return nil }
        let family = text.dropLast(2)
        guard EventType.allCases.contains(where: { $0.family == family }) else { return nil }
        self.text = text
    }

    /// The family of the types it takes (`activity` for `activity.*` and for
    /// `activity.started`); `nil` for `*`, which takes every family.
    public var family: Substring? {
        text == "*" ? nil : Self.family(of: text)
    }

    /// The family of an event type as written: what comes before its first dot.
    public static func family(of type: String) -> Substring {
        type.prefix { $0 != "." }
    }

    /// Whether `type` is one this pattern takes.
    public func matches(_ type: String) -> Bool {
        if text == "*" { return true }
        if text.hasSuffix(".*") { return type.hasPrefix(text.dropLast(1)) }
        return text == type
    }

    /// Whether any of `patterns` takes `type` (an empty list takes every type).
    public static func any(_ patterns: [EventPattern], match type: String) -> Bool {
        patterns.isEmpty || patterns.contains { $0.matches(type) }
    }

    public var description: String { text }

    /// What a pattern may be, for error messages.
    public static let explanation =
        "an event type (\(EventType.allCases.map(\.rawValue).joined(separator: ", "))), a family such as activity.*, or *"
}
