public import Foundation
public import IsletCore

/// What became of one push, for the store to record.
public struct PushOutcome: Sendable {
    /// The push's new status: sent, failed, or queued again.
    public var status: PushStatus
    /// Attempts made in this round (added to the push's count).
    public var attempts: Int
    /// The last APNs status, if there was an answer.
    public var apnsStatus: Int?
    /// The APNs reason, or Islet's.
    public var reason: String?
    /// The push service's id of the message: APNs's `apns-unique-id` (the sandbox
    /// gives one), or FCM's message name (`projects/…/messages/…`).
    public var serviceMessageID: String?
    /// For a push queued again: when to try next.
    public var nextAttemptAt: Date?
    /// For a push queued again: the environment to try.
    public var environment: APNsEnvironment?

    /// Creates an outcome.
    public init(
        status: PushStatus, attempts: Int, apnsStatus: Int? = nil, reason: String? = nil, serviceMessageID: String? = nil,
        nextAttemptAt: Date? = nil, environment: APNsEnvironment? = nil
    ) {
        self.status = status
        self.attempts = attempts
        self.apnsStatus = apnsStatus
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.nextAttemptAt = nextAttemptAt
        self.environment = environment
    }
}
