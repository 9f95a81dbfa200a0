public import Foundation

/// The claim a node holds on pushes it is sending: whose, and until when unless it
/// renews it.
public struct PushLease: Sendable, Hashable {
    /// The node sending them.
    public var nodeID: String
    /// When another node may take them over.
    public var until: Date

    /// A lease of `nodeID` until `until`.
    public init(nodeID: String, until: Date) {
        self.nodeID = nodeID
        self.until = until
    }
}
