import Foundation
import IsletLog
public import Storage

/// The Islet nodes sharing the database, as their heartbeats show them.
public final class NodeService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these, but for the health check and the schema version, which ask the
    /// database as a whole (`StoreSession`'s own `ping` and `schemaVersion`).
    typealias Stores = PushQueue & NodeStore & ScheduleStore

    private let environment: ServiceEnvironment

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// This node's id.
    public var nodeID: String { environment.nodeID }

    /// Whether this node's database answers: `nil` when it does, the reason when not.
    public func databaseProblem() async -> String? {
        do {
            try await environment.store.read { (session: any StoreSession) in try session.ping() }
            return nil
        } catch {
            return "\(error)"
        }
    }

    /// The database's backend (`sqlite`, `postgresql`).
    public var backend: String { environment.store.backend }

    /// The database schema's version; 0 when the database does not answer.
    public func schemaVersion() async -> Int {
        (try? await environment.store.read { (session: any StoreSession) in try session.schemaVersion() }) ?? 0
    }

    /// The whole database's gauges: pushes queued or in flight, and schedule items
    /// waiting for their time; -1 each when the database does not answer.
    public func gauges() async -> NodeGauges {
        let depth = (try? await environment.store.read { (session: any Stores) in try session.queueDepth() }) ?? -1
        let pending = (try? await environment.store.read { (session: any Stores) in
            try session.pendingScheduleCount()
        }) ?? -1
        return NodeGauges(queueDepth: depth, pendingSchedules: pending, rowsWritten: environment.store.rowsWritten)
    }

    /// Every node seen within a day, by id, with the pushes each holds in flight.
    public func list() async throws(ServiceError) -> [NodeRecord] {
        let since = environment.clock.now().addingTimeInterval(-NodeRecord.memory)
        return try await environment.read { (session: any Stores) in try session.nodes(seenSince: since) }
    }

    /// Forgets what only time makes stale: the nodes not seen for
    /// `NodeRecord.memory`, and the `Idempotency-Key` answers older than the
    /// replay window. Once across the nodes of a shared database. Answers how many
    /// of each.
    @discardableResult
    public func forgetStale() async -> (nodes: Int, answers: Int) {
        let now = environment.clock.now()
        let window = environment.idempotencyWindow
        do {
            let forgotten = try await environment.store.write { (session: any NodeCoordination & NodeStore & IdempotencyStore) in
                guard try session.claimPeriodicJob("forget") else { return (nodes: 0, answers: 0) }
                let answers = try session.purgeIdempotentAnswers(before: now.addingTimeInterval(-window))
                let nodes = try session.forgetNodes(seenBefore: now.addingTimeInterval(-NodeRecord.memory))
                return (nodes: nodes, answers: answers)
            }
            if forgotten.answers > 0 { environment.logger.debug("idempotency records purged", ("count", .int(forgotten.answers))) }
            return forgotten
        } catch {
            environment.logger.error("forgetting stale records failed", ("error", .string("\(error)")))
            return (0, 0)
        }
    }
}

/// The database's gauges as one node reads them (`/metrics`).
public struct NodeGauges: Sendable, Hashable {
    /// Pushes queued or in flight; -1 when the database did not answer.
    public let queueDepth: Int
    /// Schedule items and timeline entries waiting for their time; -1 likewise.
    public let pendingSchedules: Int
    /// Rows this node's writes inserted, changed or deleted, when its backend
    /// counts them (SQLite).
    public var rowsWritten: Int64?
}
