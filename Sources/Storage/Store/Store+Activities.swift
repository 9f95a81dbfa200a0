public import Foundation
public import IsletCore

/// Filters for listing activities.
public struct ActivityFilter: Sendable {
    /// Only this status, as of now: an activity started before `expiredBefore`
    /// reads as ended whatever its stored status.
    public var status: ActivityStatus?
    /// Activities started at or before this have run out of every window.
    public var expiredBefore: Date?
    /// Only this type.
    public var activityType: String?
    /// Only activities older than this sequence (the cursor).
    public var before: Int64?
    /// At most this many.
    public var limit: Int

    /// Creates a filter.
    public init(status: ActivityStatus? = nil, activityType: String? = nil, before: Int64? = nil, limit: Int = 50) {
        self.status = status
        self.activityType = activityType
        self.before = before
        self.limit = limit
    }
}

extension SQLiteSession {
    private static let activityColumns = """
        seq, activity_id, activity_type, origin, status, attributes, content_state, last_timestamp, started_at,
        updated_at, ended_at, end_cause, end_at
        """

    /// The activity `activityID` of `appID`.
    public func activity(appID: String, activityID: String) throws -> ActivityRecord? {
        try query(
            "SELECT \(Self.activityColumns) FROM activities WHERE app_id = ? AND activity_id = ?", [appID, activityID]
        ).first.map(Self.activityRecord)
    }

    /// Activities of `appID`, newest first.
    public func activities(appID: String, filter: ActivityFilter) throws -> [ActivityRecord] {
        var sql = "SELECT \(Self.activityColumns) FROM activities WHERE app_id = ?"
        var values: [any SQLiteBindable] = [appID]
        if let status = filter.status {
            let cutoff = filter.expiredBefore?.unixMilliseconds ?? Int64.min
            if status == .ended {
                sql += " AND (status = 'ended' OR started_at <= ?)"
                values.append(cutoff)
            } else {
                sql += " AND status = ? AND started_at > ?"
                values.append(status.rawValue)
                values.append(cutoff)
            }
        }
        if let type = filter.activityType {
            sql += " AND activity_type = ?"
            values.append(type)
        }
        if let before = filter.before {
            sql += " AND seq < ?"
            values.append(before)
        }
        sql += " ORDER BY seq DESC LIMIT ?"
        values.append(filter.limit)
        return try query(sql, values).map(Self.activityRecord)
    }

    /// Adds an activity; with `replacing`, first removes an ended one of the same id
    /// and its copies (its pushes stay in the history). Answers its sequence.
    @discardableResult
    public func insertActivity(
        appID: String, activityID: String, activityType: String, origin: ActivityRecord.Origin,
        attributes: JSONValue?, contentState: JSONValue?, lastTimestamp: Int64?, endAt: Date?,
        replacing: Bool, now: Date
    ) throws -> Int64 {
        if replacing {
            try run("DELETE FROM activity_instances WHERE app_id = ? AND activity_id = ?", [appID, activityID])
            try run("DELETE FROM activities WHERE app_id = ? AND activity_id = ?", [appID, activityID])
        }
        try run(
            """
            INSERT INTO activities (app_id, activity_id, activity_type, origin, status, attributes, content_state,
                last_timestamp, started_at, end_at)
            VALUES (?, ?, ?, ?, 'started', ?, ?, ?, ?, ?)
            """,
            [appID, activityID, activityType, origin.rawValue, attributes?.jsonText, contentState?.jsonText,
             lastTimestamp, now.unixMilliseconds, endAt?.unixMilliseconds])
        return connection.lastInsertRowID
    }

    /// Sets when Islet ends the activity.
    public func setEndAt(appID: String, activityID: String, endAt: Date) throws {
        try run(
            "UPDATE activities SET end_at = ? WHERE app_id = ? AND activity_id = ?",
            [endAt.unixMilliseconds, appID, activityID])
    }

    /// Activities whose end time has come and that have not ended, oldest first.
    public func dueScheduledEnds(now: Date, limit: Int) throws -> [(appID: String, activityID: String)] {
        try query(
            """
            SELECT app_id, activity_id FROM activities
            WHERE end_at IS NOT NULL AND status != 'ended' AND end_at <= ? ORDER BY end_at LIMIT ?
            """, [now.unixMilliseconds, limit]
        ).map { (try $0.string("app_id"), try $0.string("activity_id")) }
    }

    /// Records an update: the new content state and timestamp.
    public func recordUpdate(appID: String, activityID: String, contentState: JSONValue, timestamp: Int64, now: Date) throws {
        try run(
            """
            UPDATE activities SET status = 'updated', content_state = ?, last_timestamp = ?, updated_at = ?
            WHERE app_id = ? AND activity_id = ?
            """, [contentState.jsonText, timestamp, now.unixMilliseconds, appID, activityID])
    }

    /// Ends an activity and every copy of it not yet ended.
    public func endActivity(
        appID: String, activityID: String, cause: EndCause, contentState: JSONValue?, timestamp: Int64?, at date: Date
    ) throws {
        try run(
            """
            UPDATE activities SET status = 'ended', ended_at = ?, end_cause = ?,
                content_state = coalesce(?, content_state), last_timestamp = coalesce(?, last_timestamp)
            WHERE app_id = ? AND activity_id = ? AND status != 'ended'
            """, [date.unixMilliseconds, cause.rawValue, contentState?.jsonText, timestamp, appID, activityID])
        try run(
            """
            UPDATE activity_instances SET status = 'ended', ended_at = ?, end_cause = ?, updated_at = ?
            WHERE app_id = ? AND activity_id = ? AND status != 'ended'
            """, [date.unixMilliseconds, cause.rawValue, date.unixMilliseconds, appID, activityID])
    }

    /// Ends every activity started at or before `startedBefore` that has not
    /// ended, as expired `total` seconds after its start, with every copy of it, and
    /// drops its starts and updates still queued. Answers how many activities.
    @discardableResult
    public func expireActivities(startedBefore: Date, total: TimeInterval, now: Date) throws -> Int {
        let cutoff = startedBefore.unixMilliseconds
        let millis = now.unixMilliseconds
        try run(
            """
            UPDATE pushes SET status = 'dropped', reason = 'ActivityExpired', updated_at = ?2
            WHERE status = 'queued' AND event IN ('start', 'update') AND (app_id, activity_id) IN
                (SELECT app_id, activity_id FROM activities WHERE status != 'ended' AND started_at <= ?1)
            """, [cutoff, millis])
        let expired = try run(
            """
            UPDATE activities SET status = 'ended', end_cause = 'expired', ended_at = started_at + ?2
            WHERE status != 'ended' AND started_at <= ?1
            """, [cutoff, Int64(total * 1000)])
        guard expired > 0 else { return 0 }
        try run(
            """
            UPDATE activity_instances SET status = 'ended', end_cause = 'expired',
                ended_at = (SELECT a.ended_at FROM activities a
                    WHERE a.app_id = activity_instances.app_id AND a.activity_id = activity_instances.activity_id),
                updated_at = ?1
            WHERE status != 'ended' AND EXISTS (SELECT 1 FROM activities a
                WHERE a.app_id = activity_instances.app_id AND a.activity_id = activity_instances.activity_id
                    AND a.status = 'ended')
            """, [millis])
        return expired
    }

    // MARK: - Instances

    /// Every device's copy of an activity, by device id.
    public func instances(appID: String, activityID: String) throws -> [InstanceRecord] {
        try query(
            """
            SELECT device_id, status, update_token, environment, token_registered_at, created_at, updated_at,
                ended_at, end_cause
            FROM activity_instances WHERE app_id = ? AND activity_id = ? ORDER BY device_id
            """, [appID, activityID]
        ).map(Self.instanceRecord)
    }

    /// One device's copy of an activity.
    public func instance(appID: String, activityID: String, deviceID: String) throws -> InstanceRecord? {
        try query(
            """
            SELECT device_id, status, update_token, environment, token_registered_at, created_at, updated_at,
                ended_at, end_cause
            FROM activity_instances WHERE app_id = ? AND activity_id = ? AND device_id = ?
            """, [appID, activityID, deviceID]
        ).first.map(Self.instanceRecord)
    }

    /// Adds pending copies for the devices a start goes to.
    public func insertPendingInstances(appID: String, activityID: String, targets: [PushTarget], now: Date) throws {
        let millis = now.unixMilliseconds
        for target in targets {
            try run(
                """
                INSERT INTO activity_instances (app_id, activity_id, device_id, status, environment, created_at, updated_at)
                VALUES (?, ?, ?, 'pending', ?, ?, ?)
                ON CONFLICT DO NOTHING
                """, [appID, activityID, target.deviceID, target.environment.rawValue, millis, millis])
        }
    }

    /// Registers or rotates a device's update token for an activity. Answers whether
    /// the device had no token for it before.
    public func registerUpdateToken(
        appID: String, activityID: String, deviceID: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool {
        let existing = try instance(appID: appID, activityID: activityID, deviceID: deviceID)
        let millis = now.unixMilliseconds
        try run(
            """
            INSERT INTO activity_instances (app_id, activity_id, device_id, status, update_token, environment,
                token_registered_at, created_at, updated_at)
            VALUES (?1, ?2, ?3, 'active', ?4, ?5, ?6, ?6, ?6)
            ON CONFLICT (app_id, activity_id, device_id) DO UPDATE SET
                status = 'active', update_token = excluded.update_token, environment = excluded.environment,
                token_registered_at = excluded.token_registered_at, updated_at = excluded.updated_at
            """, [appID, activityID, deviceID, token, environment.rawValue, millis])
        return existing?.updateToken == nil
    }

    /// Ends one device's copy. Answers whether it was not ended before.
    @discardableResult
    public func endInstance(
        appID: String, activityID: String, deviceID: String, cause: EndCause, onlyToken: String?, at date: Date
    ) throws -> Bool {
        var sql = """
            UPDATE activity_instances SET status = 'ended', end_cause = ?, ended_at = ?, updated_at = ?
            WHERE app_id = ? AND activity_id = ? AND device_id = ? AND status != 'ended'
            """
        var values: [any SQLiteBindable] = [cause.rawValue, date.unixMilliseconds, date.unixMilliseconds, appID, activityID, deviceID]
        if let onlyToken {
            sql += " AND update_token = ?"
            values.append(onlyToken)
        }
        return try run(sql, values) > 0
    }

    /// The update tokens of every copy of an activity that has not ended.
    public func updateTargets(appID: String, activityID: String) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, update_token AS token, environment FROM activity_instances
            WHERE app_id = ? AND activity_id = ? AND status = 'active' AND update_token IS NOT NULL
            ORDER BY device_id
            """, [appID, activityID]
        ).map(Self.target)
    }

    private static func activityRecord(_ row: SQLiteRow) throws -> ActivityRecord {
        ActivityRecord(
            sequence: try row.int64("seq"), activityID: try row.string("activity_id"),
            activityType: try row.string("activity_type"),
            origin: try row.enumValue("origin", as: ActivityRecord.Origin.self),
            status: try row.enumValue("status", as: ActivityStatus.self), attributes: try row.json("attributes"),
            contentState: try row.json("content_state"), lastTimestamp: row.optionalInt64("last_timestamp"),
            startedAt: try row.date("started_at"), updatedAt: row.optionalDate("updated_at"),
            endedAt: row.optionalDate("ended_at"), endCause: row.optionalString("end_cause").flatMap(EndCause.init),
            endAt: row.optionalDate("end_at"))
    }

    private static func instanceRecord(_ row: SQLiteRow) throws -> InstanceRecord {
        InstanceRecord(
            deviceID: try row.string("device_id"), status: try row.enumValue("status", as: InstanceStatus.self),
            updateToken: row.optionalString("update_token"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            tokenRegisteredAt: row.optionalDate("token_registered_at"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), endedAt: row.optionalDate("ended_at"),
            endCause: row.optionalString("end_cause").flatMap(EndCause.init))
    }
}
