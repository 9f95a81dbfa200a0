/// The `aps.event` of a Live Activity push.
public enum LiveActivityEvent: String, Sendable, Hashable, CaseIterable, Codable {
    /// Starts an activity remotely; goes to a push-to-start token.
    case start
    /// Replaces a running activity's content; goes to the activity's update token.
    case update
    /// Ends an activity; goes to the activity's update token.
    case end

    /// The kind of token a push with this event must be addressed to.
    public var tokenKind: PushTokenKind {
        self == .start ? .pushToStart : .liveActivityUpdate
    }
}
