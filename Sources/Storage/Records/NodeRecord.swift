public import Foundation

/// An Islet node of the database, as its heartbeats show it.
public struct NodeRecord: Sendable, Hashable {
    /// Its id (`--node-id`).
    public var nodeID: String
    /// When it started, as it said last.
    public var startedAt: Date
    /// Its latest heartbeat.
    public var lastHeartbeatAt: Date
    /// Pushes it holds in flight.
    public var claimedPushes: Int
    /// When it stopped cleanly, after its latest heartbeat; `nil` while it runs (or
    /// when it died without saying so).
    public var stoppedAt: Date?

    /// A node's row.
    public init(nodeID: String, startedAt: Date, lastHeartbeatAt: Date, claimedPushes: Int, stoppedAt: Date? = nil) {
        self.nodeID = nodeID
        self.startedAt = startedAt
        self.lastHeartbeatAt = lastHeartbeatAt
        self.claimedPushes = claimedPushes
        self.stoppedAt = stoppedAt
    }
}
