public import Foundation
public import IsletCore

/// What a send to an activity's copies came to, as the activity's answer shows it.
public struct SendSummary: Sendable, Hashable {
    /// The send's id (as its content state names it, for receipts).
    public var sendID: Int64
    /// Start, update or end.
    public var event: PushEvent
    /// The tokens it went to.
    public var tokenKind: PushTokenKind
    /// `queued`, `claimed` (every window handed out), `completed`, `superseded` or
    /// `dropped`.
    public var state: String
    /// The copies it reaches.
    public var targets: Int64
    /// Those APNs (or FCM) accepted.
    public var sent: Int64
    /// Those whose device said it showed it (receipts).
    public var received: Int64
    /// When it was made.
    public var createdAt: Date

    /// Creates a summary.
    public init(
        sendID: Int64, event: PushEvent, tokenKind: PushTokenKind, state: String, targets: Int64, sent: Int64,
        received: Int64, createdAt: Date
    ) {
        self.sendID = sendID
        self.event = event
        self.tokenKind = tokenKind
        self.state = state
        self.targets = targets
        self.sent = sent
        self.received = received
        self.createdAt = createdAt
    }
}
