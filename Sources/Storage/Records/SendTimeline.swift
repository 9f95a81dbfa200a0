public import Foundation
public import IsletCore

/// One send of an activity as its timeline shows it: what it said (its payload) and
/// what it came to.
public struct SendTimelineEntry: Sendable, Hashable {
    /// The send's id.
    public var sendID: Int64
    /// Start, update or end (alert: an app-wide notification, not the activity's).
    public var event: PushEvent
    /// The tokens it went to: `channel` for a broadcast, `fcm` for Android copies.
    public var tokenKind: PushTokenKind
    /// `queued`, `claimed`, `completed`, `superseded` or `dropped`.
    public var state: String
    /// Why the whole send was dropped, when it was.
    public var dropReason: String?
    /// The pushes it makes: copies reached by windows and rows apart.
    public var targets: Int64
    /// Those APNs (or FCM) accepted.
    public var sent: Int64
    /// Those that failed or were dropped.
    public var failed: Int64
    /// Those whose device said it showed the send (receipts).
    public var received: Int64
    /// Taps counted on its pushes.
    public var taps: Int64
    /// When it was made.
    public var createdAt: Date
    /// What it said: the APNs payload, or the FCM message's data.
    public var payload: Data

    /// Creates an entry.
    public init(
        sendID: Int64, event: PushEvent, tokenKind: PushTokenKind, state: String, dropReason: String?, targets: Int64,
        sent: Int64, failed: Int64, received: Int64, taps: Int64, createdAt: Date, payload: Data
    ) {
        self.sendID = sendID
        self.event = event
        self.tokenKind = tokenKind
        self.state = state
        self.dropReason = dropReason
        self.targets = targets
        self.sent = sent
        self.failed = failed
        self.received = received
        self.taps = taps
        self.createdAt = createdAt
        self.payload = payload
    }
}
