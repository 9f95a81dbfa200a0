public import Foundation
public import Storage

/// The Islet nodes sharing the database, as their heartbeats show them.
public final class NodeService: Sendable {
    private let environment: ServiceEnvironment

    /// How long a node that stopped beating is still listed.
    public static let memory: TimeInterval = 24 * 3600

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// This node's id.
    public var nodeID: String { environment.nodeID }

    /// Every node seen within a day, by id, with the pushes each holds in flight.
    public func list() async throws(ServiceError) -> [NodeRecord] {
        let since = environment.clock.now().addingTimeInterval(-Self.memory)
        return try await environment.read { try $0.nodes(seenSince: since) }
    }
}
