public import Foundation
public import IsletCore
public import Storage

/// Events a transaction has emitted, written when it is about to commit (see
/// ``SQLSession/flushEvents()``). `@unchecked Sendable`: a session, and so its
/// outbox, lives inside one transaction, run by one thread from start to commit.
final class EventOutbox: @unchecked Sendable {
    private var pending: [NewEvent] = []

    func add(_ events: [NewEvent]) { pending.append(contentsOf: events) }

    func take() -> [NewEvent] {
        defer { pending = [] }
        return pending
    }
}

extension SQLSession {
    /// The advisory lock that orders event sequences by commit on PostgreSQL.
    private static let eventOrderLock: Int64 = 0x6973_6c65_7465_7601

    /// Emits events: they are written with the rest of the transaction, when it
    /// commits (``flushEvents()``).
    public func appendEvents(_ events: [NewEvent]) throws {
        outbox.add(events)
    }

    /// Writes the events the transaction emitted; the store calls it right before
    /// committing. On PostgreSQL it first takes a transaction-scoped advisory lock,
    /// held until the commit, so that sequences are handed out in commit order
    /// across every node (a reader past one sequence never finds a smaller one
    /// appear later); taken last, after every row lock, it cannot deadlock with them.
    /// SQLite has one writer, whose order is the commit order.
    public func flushEvents() throws {
        let events = outbox.take()
        guard !events.isEmpty else { return }
        if dialect == .postgresql {
            try run("SELECT pg_advisory_xact_lock(\(Self.eventOrderLock))")
            try forEachChunk(of: events) { chunk in
                try run(
                    """
                    INSERT INTO events (app_id, type, activity_id, occurred_at, data)
                    SELECT t.app_id, t.type, t.activity_id, t.occurred_at, t.data
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0.appID) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.type.rawValue) }))::text[],
                        \(SQLValue.array(chunk.map { $0.activityID.map(SQLValue.text) ?? .null }))::text[],
                        \(SQLValue.array(chunk.map { .integer($0.occurredAt.unixMilliseconds) }))::int8[],
                        \(SQLValue.array(chunk.map { .text($0.dataText) }))::text[])
                        WITH ORDINALITY AS t(app_id, type, activity_id, occurred_at, data, n)
                    ORDER BY t.n
                    """)
            }
            return
        }
        try runEach(events) { event in
            """
            INSERT INTO events (app_id, type, activity_id, occurred_at, data)
            VALUES (\(event.appID), \(event.type.rawValue), \(event.activityID), \(event.occurredAt.unixMilliseconds),
                \(event.dataText))
            """
        }
    }

    private static let eventColumns: SQL = "seq, app_id, type, activity_id, occurred_at, data"

    /// Events after `sequence`, in order, of `appID` (every app when nil) and of the
    /// types `patterns` take.
    public func events(appID: String?, after sequence: Int64, patterns: [EventPattern], limit: Int) throws -> [EventRecord] {
        var conditions: SQL = "seq > \(sequence)"
        if let appID { conditions = "\(sql: conditions) AND app_id = \(appID)" }
        if !patterns.isEmpty, !patterns.contains(where: { $0.text == "*" }) {
            let exact = patterns.filter { !$0.text.hasSuffix(".*") }.map(\.text)
            let families = patterns.filter { $0.text.hasSuffix(".*") }.map { String($0.text.dropLast(1)) }
            var alternatives: [SQL] = []
            if !exact.isEmpty { alternatives.append("type \(in: exact)") }
            // Families have no `_` or `%` in their names: a prefix match.
            for family in families { alternatives.append("type LIKE \(family + "%")") }
            var joined: SQL = "(\(sql: alternatives[0])"
            for alternative in alternatives.dropFirst() { joined = "\(sql: joined) OR \(sql: alternative)" }
            conditions = "\(sql: conditions) AND \(sql: joined))"
        }
        return try query(
            """
            SELECT \(sql: Self.eventColumns) FROM events WHERE \(sql: conditions) ORDER BY seq LIMIT \(limit)
            """
        ).map(Self.eventRecord)
    }

    /// The event at `sequence` of `appID`.
    public func event(appID: String, sequence: Int64) throws -> EventRecord? {
        try query("SELECT \(sql: Self.eventColumns) FROM events WHERE seq = \(sequence) AND app_id = \(appID)")
            .first.map(Self.eventRecord)
    }

    /// The newest event's sequence.
    public func latestEventSequence() throws -> Int64 {
        try query("SELECT max(seq) AS n FROM events").first?.optionalInt64("n") ?? 0
    }

    /// Deletes up to `limit` events older than `before`, with the finished deliveries
    /// of them.
    @discardableResult
    public func purgeEvents(before: Date, limit: Int) throws -> Int {
        let cutoff = before.unixMilliseconds
        let rows = try query(
            "SELECT seq FROM events WHERE occurred_at < \(cutoff) ORDER BY seq LIMIT \(limit)")
        guard let row = rows.last else { return 0 }
        let last = try row.int64("seq")
        try run(
            """
            DELETE FROM webhook_deliveries WHERE event_seq <= \(last) AND status IN ('succeeded', 'failed')
                AND event_seq IN (SELECT seq FROM events WHERE seq <= \(last) AND occurred_at < \(cutoff))
            """)
        return try run(
            """
            DELETE FROM events WHERE seq <= \(last) AND occurred_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM webhook_deliveries d WHERE d.event_seq = events.seq)
            """)
    }

    static func eventRecord(_ row: SQLRow) throws -> EventRecord {
        EventRecord(
            sequence: try row.int64("seq"), appID: try row.string("app_id"), type: try row.string("type"),
            activityID: row.optionalString("activity_id"), occurredAt: try row.date("occurred_at"),
            dataText: row.optionalString("data") ?? "null")
    }
}
