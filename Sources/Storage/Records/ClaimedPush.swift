public import Foundation
public import IsletCore

/// A push claimed by the delivery worker: everything needed to send it.
public struct ClaimedPush: Sendable {
    /// The push's row id; 0 for a push of a send's window, which has no row.
    public var id: Int64
    /// The app.
    public var appID: String
    /// The activity, for Live Activity pushes.
    public var activityID: String?
    /// The activity type, for a push-to-start.
    public var activityType: String?
    /// The device.
    public var deviceID: String
    /// The kind of token.
    public var tokenKind: PushTokenKind
    /// The token.
    public var token: String
    /// The environment it goes to now.
    public var environment: APNsEnvironment
    /// Whether it was already switched to the other environment once.
    public var environmentSwitched: Bool
    /// `apns-id`, the same on every attempt.
    public var apnsID: String
    /// Attempts made before this one.
    public var attempts: Int
    /// Rounds made before this one: answers to an attempt that reached the push
    /// service (a push the transport never handed to the network makes none).
    public var rounds: Int
    /// When it was first queued.
    public var createdAt: Date
    /// The payload and headers (at priority 5 when the push was downgraded).
    public var content: SendContent
    /// Whether it goes at priority 5 instead of its send's 10: its copy's
    /// priority-10 budget was spent.
    public var priorityDowngraded: Bool
    /// The window of its send it goes in, when it has no row of its own (see
    /// ``SendWindow``).
    public var window: SendWindow?

    /// Creates a record.
    public init(
        id: Int64, appID: String, activityID: String?, activityType: String?, deviceID: String,
        tokenKind: PushTokenKind, token: String, environment: APNsEnvironment, environmentSwitched: Bool,
        apnsID: String, attempts: Int, rounds: Int, createdAt: Date, content: SendContent,
        priorityDowngraded: Bool = false
    ) {
        self.id = id
        self.appID = appID
        self.activityID = activityID
        self.activityType = activityType
        self.deviceID = deviceID
        self.tokenKind = tokenKind
        self.token = token
        self.environment = environment
        self.environmentSwitched = environmentSwitched
        self.apnsID = apnsID
        self.attempts = attempts
        self.rounds = rounds
        self.createdAt = createdAt
        self.content = content
        self.priorityDowngraded = priorityDowngraded
    }
}

/// A window of a send: the copies of its audience after one device id and through
/// another, handed to one node at a time under a lease. Its pushes have no rows:
/// the window is settled as a whole, once every push in it was answered.
public struct SendWindow: Sendable, Hashable {
    /// The send.
    public var sendID: Int64
    /// The last device id the window takes.
    public var through: String
    /// Creates a reference.
    public init(sendID: Int64, through: String) {
        self.sendID = sendID
        self.through = through
    }
}

/// What a window's pushes came to, once all of them were answered: how many APNs
/// or FCM accepted plainly (no row), and how many were given rows of their own.
public struct WindowTally: Sendable, Hashable {
    /// The pushes in the window.
    public var size: Int
    /// Answered so far.
    public var answered = 0
    /// Accepted plainly.
    public var sent = 0
    /// Given a row of their own (a failure, a retry, a switched environment).
    public var exceptions = 0
    /// Creates a tally for a window of `size` pushes.
    public init(size: Int) {
        self.size = size
    }
    /// Whether every push of the window was answered.
    public var isComplete: Bool { answered >= size }
}
