public import Foundation
public import Storage

extension SQLSession {
    /// Records that `nodeID`, started at `startedAt`, is alive at `now`, in one
    /// statement.
    public func recordHeartbeat(nodeID: String, startedAt: Date, now: Date) throws {
        try run(
            """
            INSERT INTO nodes (node_id, started_at, last_heartbeat_at)
            VALUES (\(nodeID), \(startedAt.unixMilliseconds), \(now.unixMilliseconds))
            ON CONFLICT (node_id) DO UPDATE SET started_at = excluded.started_at,
                last_heartbeat_at = excluded.last_heartbeat_at, stopped_at = NULL
            """)
    }

    /// Records that `nodeID` stopped cleanly at `at`.
    public func recordNodeStopped(nodeID: String, at: Date) throws {
        try run("UPDATE nodes SET stopped_at = \(at.unixMilliseconds) WHERE node_id = \(nodeID)")
    }

    /// Every node seen since `since`, by id, with how many pushes each holds.
    public func nodes(seenSince since: Date) throws -> [NodeRecord] {
        try query(
            """
            SELECT node_id, started_at, last_heartbeat_at, stopped_at,
                (SELECT count(*) FROM pushes WHERE status = 'sending' AND claimed_by = nodes.node_id)
                    + (SELECT CAST(coalesce(sum(size), 0) AS BIGINT) FROM send_windows WHERE claimed_by = nodes.node_id)
                    AS claimed
            FROM nodes WHERE last_heartbeat_at >= \(since.unixMilliseconds) ORDER BY node_id
            """
        ).map { row in
            NodeRecord(
                nodeID: try row.string("node_id"), startedAt: try row.date("started_at"),
                lastHeartbeatAt: try row.date("last_heartbeat_at"), claimedPushes: Int(try row.int64("claimed")),
                stoppedAt: row.optionalDate("stopped_at"))
        }
    }

    /// Forgets nodes not seen since `before`. Answers how many.
    @discardableResult
    public func forgetNodes(seenBefore before: Date) throws -> Int {
        try run("DELETE FROM nodes WHERE last_heartbeat_at < \(before.unixMilliseconds)")
    }

    /// Takes the periodic job `name` until the transaction ends. On PostgreSQL, a
    /// transaction-scoped advisory lock whose key is the job's name in this schema,
    /// tried without waiting; SQLite has one node, whose jobs are always its own.
    public func claimPeriodicJob(_ name: String) throws -> Bool {
        switch dialect {
        case .sqlite:
            return true
        case .postgresql:
            let row = try query(
                "SELECT pg_try_advisory_xact_lock(hashtext(current_schema() || ':' || \(name))) AS taken").first
            return try row?.bool("taken") ?? false
        }
    }

    /// The `NOTIFY` channel of the connection's schema, as SQL: `islet_` and 16 hex
    /// digits of the schema name's MD5, a valid channel name whatever the schema is
    /// called.
    public static let channelSQL = "'islet_' || left(md5(current_schema()), 16)"

    /// Tells every node of the database of `notice` when the transaction commits:
    /// `pg_notify` on the channel of this schema (see ``channelSQL``), which
    /// PostgreSQL delivers at commit, once per distinct payload. SQLite has one
    /// node, and nothing to tell.
    public func notifyNodes(_ notice: StoreNotice) throws {
        guard dialect == .postgresql else { return }
        _ = try query("SELECT pg_notify(\(raw: Self.channelSQL), \(notice.payload))")
    }
}

extension StoreNotice {
    /// The notice as a `NOTIFY` payload: `pushes`, `timers`, `app:<id>`,
    /// `events:<id>` or `resync`.
    public var payload: String {
        switch self {
        case .pushesQueued: "pushes"
        case .timersChanged: "timers"
        case .appChanged(let appID): "app:" + appID
        case .eventsWanted(let appID): "events:" + appID
        case .resync: "resync"
        }
    }

    /// The notice a payload carries, or nil for one this version does not know.
    public init?(payload: String) {
        if payload == "pushes" {
            self = .pushesQueued
        } else if payload == "timers" {
            self = .timersChanged
        } else if payload == "resync" {
            self = .resync
        } else if payload.hasPrefix("app:") {
            self = .appChanged(appID: String(payload.dropFirst(4)))
        } else if payload.hasPrefix("events:") {
            self = .eventsWanted(appID: String(payload.dropFirst(7)))
        } else {
            return nil
        }
    }
}
