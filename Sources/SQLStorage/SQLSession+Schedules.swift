public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    private static let scheduleColumns: SQL = """
        seq, schedule_id, app_id, kind, activity_id, send_at, status, reason, detail, targets, command, created_at,
        fired_at, timeline_generation, entry_index
        """

    private static let timelineColumns: SQL = """
        app_id, activity_id, generation, end_at, renew, renew_at, start_alert, updated_at
        """

    /// Adds schedule items, in order: on PostgreSQL one statement per 5,000 items,
    /// their values bound as arrays; on SQLite one prepared statement run per item.
    public func insertSchedules(appID: String, _ items: [NewSchedule], now: Date) throws {
        let created = now.unixMilliseconds
        if !items.isEmpty { try notifyNodes(.timersChanged) }
        if dialect == .postgresql {
            try forEachChunk(of: items) { chunk in
                try run(
                    """
                    INSERT INTO schedules (schedule_id, app_id, kind, activity_id, send_at, status, command, created_at,
                        timeline_generation, entry_index)
                    SELECT t.schedule_id, \(appID)::text, t.kind, t.activity_id, t.send_at, 'scheduled', t.command,
                        \(created)::int8, t.generation, t.entry_index
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0.scheduleID) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.kind.rawValue) }))::text[],
                        \(SQLValue.array(chunk.map { $0.activityID.map(SQLValue.text) ?? .null }))::text[],
                        \(SQLValue.array(chunk.map { .integer($0.sendAt.unixMilliseconds) }))::int8[],
                        \(SQLValue.array(chunk.map { .text($0.command.jsonText) }))::text[],
                        \(SQLValue.array(chunk.map { $0.timelineGeneration.map(SQLValue.integer) ?? .null }))::int8[],
                        \(SQLValue.array(chunk.map { $0.entryIndex.map { .integer(Int64($0)) } ?? .null }))::int8[])
                        WITH ORDINALITY AS t(schedule_id, kind, activity_id, send_at, command, generation, entry_index, n)
                    ORDER BY t.n
                    """)
            }
            return
        }
        try runEach(items) { item in
            """
            INSERT INTO schedules (schedule_id, app_id, kind, activity_id, send_at, status, command, created_at,
                timeline_generation, entry_index)
            VALUES (\(item.scheduleID), \(appID), \(item.kind.rawValue), \(item.activityID),
                \(item.sendAt.unixMilliseconds), 'scheduled', \(item.command.jsonText), \(created),
                \(item.timelineGeneration), \(item.entryIndex))
            """
        }
    }

    /// The item `scheduleID` of `appID`.
    public func schedule(appID: String, scheduleID: String) throws -> ScheduleRecord? {
        try query(
            """
            SELECT \(sql: Self.scheduleColumns) FROM schedules WHERE app_id = \(appID) AND schedule_id = \(scheduleID)
            """
        ).first.map(Self.scheduleRecord)
    }

    /// Items of `appID` by `filter`, soonest first.
    public func schedules(appID: String, filter: ScheduleFilter) throws -> [ScheduleRecord] {
        var sql: SQL = "SELECT \(sql: Self.scheduleColumns) FROM schedules WHERE app_id = \(appID)"
        if let activityID = filter.activityID { sql.append(" AND activity_id = \(activityID)") }
        if let status = filter.status { sql.append(" AND status = \(status.rawValue)") }
        if let kind = filter.kind { sql.append(" AND kind = \(kind.rawValue)") }
        if let after = filter.after {
            sql.append(" AND (send_at > \(after.sendAt) OR (send_at = \(after.sendAt) AND seq > \(after.sequence)))")
        }
        sql.append(" ORDER BY send_at, seq LIMIT \(filter.limit)")
        return try query(sql).map(Self.scheduleRecord)
    }

    /// Cancels an item still scheduled, in one statement.
    public func cancelSchedule(appID: String, scheduleID: String, now: Date) throws -> Bool {
        try run(
            """
            UPDATE schedules SET status = 'cancelled', reason = \(ScheduleReason.cancelled), fired_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND schedule_id = \(scheduleID) AND status = 'scheduled'
            """) == 1
    }

    /// Settles the items still scheduled of the activity's timelines.
    @discardableResult
    public func settlePendingTimeline(
        appID: String, activityID: String, status: ScheduleStatus, reason: String, now: Date
    ) throws -> Int {
        try run(
            """
            UPDATE schedules SET status = \(status.rawValue), reason = \(reason), fired_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status = 'scheduled'
                AND timeline_generation IS NOT NULL
            """)
    }

    /// The items still scheduled of `kind` for the activity.
    public func pendingSchedules(appID: String, activityID: String, kind: ScheduleKind) throws -> [ScheduleRecord] {
        try query(
            """
            SELECT \(sql: Self.scheduleColumns) FROM schedules
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND kind = \(kind.rawValue) AND status = 'scheduled'
            ORDER BY send_at, seq
            """
        ).map(Self.scheduleRecord)
    }

    /// The earliest time an item is due.
    public func nextScheduleTime() throws -> Date? {
        try query("SELECT min(send_at) AS earliest FROM schedules WHERE status = 'scheduled'")
            .first?.optionalDate("earliest")
    }

    /// The earliest time any timed work is due: a scheduled item, a timeline's
    /// renewal, the end time of an activity not ended. Three lookups of the first
    /// entry of a partial index each.
    public func nextTimedWork() throws -> Date? {
        try query(
            """
            SELECT min(due) AS earliest FROM (
                SELECT min(send_at) AS due FROM schedules WHERE status = 'scheduled'
                UNION ALL SELECT min(renew_at) FROM timelines WHERE renew_at IS NOT NULL
                UNION ALL SELECT min(end_at) FROM activities WHERE end_at IS NOT NULL AND status != 'ended'
            ) AS timed
            """
        ).first?.optionalDate("earliest")
    }

    /// Drops every due timeline entry that a newer due entry of its activity replaces.
    @discardableResult
    public func skipSupersededEntries(now: Date) throws -> Int {
        let at = now.unixMilliseconds
        return try run(
            """
            UPDATE schedules SET status = 'dropped', reason = \(ScheduleReason.superseded), fired_at = \(at)
            WHERE status = 'scheduled' AND kind = 'timeline_entry' AND send_at <= \(at)
                AND EXISTS (
                    SELECT 1 FROM schedules AS newer
                    WHERE newer.app_id = schedules.app_id AND newer.activity_id = schedules.activity_id
                        AND newer.status = 'scheduled' AND newer.kind = 'timeline_entry'
                        AND newer.send_at <= \(at) AND newer.send_at > schedules.send_at)
            """)
    }

    /// Up to `limit` due items, locked (skipping those another transaction holds).
    public func claimDueSchedules(now: Date, limit: Int) throws -> [ScheduleRecord] {
        let lock: SQL = dialect == .postgresql ? " FOR UPDATE SKIP LOCKED" : ""
        return try query(
            """
            SELECT \(sql: Self.scheduleColumns) FROM schedules
            WHERE status = 'scheduled' AND send_at <= \(now.unixMilliseconds)
            ORDER BY send_at, seq LIMIT \(limit)\(sql: lock)
            """
        ).map(Self.scheduleRecord)
    }

    /// Records what became of a claimed item.
    public func settleSchedule(
        sequence: Int64, status: ScheduleStatus, reason: String?, detail: String?, targets: Int?, at: Date
    ) throws {
        try run(
            """
            UPDATE schedules SET status = \(status.rawValue), reason = \(reason), detail = \(detail), targets = \(targets),
                fired_at = \(at.unixMilliseconds)
            WHERE seq = \(sequence) AND status = 'scheduled'
            """)
    }

    /// Moves an activity's pending timeline items to its successor.
    @discardableResult
    public func moveTimeline(appID: String, from activityID: String, to successorID: String) throws -> Int {
        try run(
            """
            UPDATE schedules SET activity_id = \(successorID)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status = 'scheduled'
                AND timeline_generation IS NOT NULL
            """)
    }

    /// The activity's timeline settings.
    public func timeline(appID: String, activityID: String) throws -> TimelineRecord? {
        try query(
            """
            SELECT \(sql: Self.timelineColumns) FROM timelines WHERE app_id = \(appID) AND activity_id = \(activityID)
            """
        ).first.map(Self.timelineRecord)
    }

    /// Stores or replaces an activity's timeline settings, atomically.
    public func putTimeline(_ timeline: TimelineRecord) throws {
        if timeline.renewAt != nil || timeline.endAt != nil { try notifyNodes(.timersChanged) }
        try run(
            """
            INSERT INTO timelines (app_id, activity_id, generation, end_at, renew, renew_at, start_alert, updated_at)
            VALUES (\(timeline.appID), \(timeline.activityID), \(timeline.generation), \(timeline.endAt?.unixMilliseconds),
                \(timeline.renew), \(timeline.renewAt?.unixMilliseconds), \(timeline.startAlert?.jsonText),
                \(timeline.updatedAt.unixMilliseconds))
            ON CONFLICT (app_id, activity_id) DO UPDATE SET generation = excluded.generation, end_at = excluded.end_at,
                renew = excluded.renew, renew_at = excluded.renew_at, start_alert = excluded.start_alert,
                updated_at = excluded.updated_at
            """)
    }

    /// The items of one generation of an activity's timeline, in order.
    public func timelineItems(appID: String, activityID: String, generation: Int64) throws -> [ScheduleRecord] {
        try query(
            """
            SELECT \(sql: Self.scheduleColumns) FROM schedules
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND timeline_generation = \(generation)
            ORDER BY send_at, seq
            """
        ).map(Self.scheduleRecord)
    }

    /// Timelines whose renewal has come.
    public func dueRenewals(now: Date, limit: Int) throws -> [TimelineRecord] {
        try query(
            """
            SELECT \(sql: Self.timelineColumns) FROM timelines
            WHERE renew_at IS NOT NULL AND renew_at <= \(now.unixMilliseconds)
            ORDER BY renew_at LIMIT \(limit)
            """
        ).map(Self.timelineRecord)
    }

    /// Items still scheduled.
    public func pendingScheduleCount() throws -> Int {
        Int(try query("SELECT count(*) AS n FROM schedules WHERE status = 'scheduled'").first?.int64("n") ?? 0)
    }

    private static func scheduleRecord(_ row: SQLRow) throws -> ScheduleRecord {
        ScheduleRecord(
            sequence: try row.int64("seq"), scheduleID: try row.string("schedule_id"), appID: try row.string("app_id"),
            kind: try row.enumValue("kind", as: ScheduleKind.self), activityID: row.optionalString("activity_id"),
            sendAt: try row.date("send_at"), status: try row.enumValue("status", as: ScheduleStatus.self),
            reason: row.optionalString("reason"), detail: row.optionalString("detail"),
            targets: row.optionalInt64("targets").map { Int($0) }, command: try row.json("command") ?? .null,
            createdAt: try row.date("created_at"), firedAt: row.optionalDate("fired_at"),
            timelineGeneration: row.optionalInt64("timeline_generation"),
            entryIndex: row.optionalInt64("entry_index").map { Int($0) })
    }

    private static func timelineRecord(_ row: SQLRow) throws -> TimelineRecord {
        TimelineRecord(
            appID: try row.string("app_id"), activityID: try row.string("activity_id"),
            generation: try row.int64("generation"), endAt: row.optionalDate("end_at"), renew: try row.bool("renew"),
            renewAt: row.optionalDate("renew_at"), startAlert: try row.json("start_alert"),
            updatedAt: try row.date("updated_at"))
    }
}
