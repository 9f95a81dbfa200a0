public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    private static let activityColumns: SQL = """
        seq, activity_id, activity_type, origin, status, attributes, content_state, last_timestamp, started_at,
        updated_at, ended_at, end_cause, end_at, start_alert, renewed_to, renewed_from, not_renewed, delivery,
        join_rule, created_by, creator_user_id
        """

    static let copyColumns: SQL = """
        device_id, status, update_token, environment, token_registered_at, created_at, updated_at, ended_at, end_cause,
        subscribed, joined, last_received_send_id, last_received_at, (SELECT d.platform FROM devices d
            WHERE d.app_id = activity_instances.app_id AND d.device_id = activity_instances.device_id) AS platform
        """

    /// The activity `activityID` of `appID`.
    public func activity(appID: String, activityID: String) throws -> ActivityRecord? {
        try query(
            "SELECT \(sql: Self.activityColumns) FROM activities WHERE app_id = \(appID) AND activity_id = \(activityID)"
        ).first.map(Self.activityRecord)
    }

    /// The activity `activityID` of `appID`, its row locked until the transaction
    /// ends (`FOR UPDATE` on PostgreSQL; SQLite has one writer, whose transaction
    /// holds the whole file).
    public func lockedActivity(appID: String, activityID: String) throws -> ActivityRecord? {
        try query(lockedActivitySQL(appID: appID, activityID: activityID)).first.map(Self.activityRecord)
    }

    func lockedActivitySQL(appID: String, activityID: String) -> SQL {
        let lock: SQL = dialect == .postgresql ? " FOR UPDATE" : ""
        return """
            SELECT \(sql: Self.activityColumns) FROM activities WHERE app_id = \(appID) AND activity_id = \(activityID)\
            \(sql: lock)
            """
    }

    /// Activities of `appID`, newest first.
    public func activities(appID: String, filter: ActivityFilter) throws -> [ActivityRecord] {
        var sql: SQL = "SELECT \(sql: Self.activityColumns) FROM activities WHERE app_id = \(appID)"
        if let status = filter.status {
            let cutoff = filter.expiredBefore?.unixMilliseconds ?? Int64.min
            if status == .ended {
                sql.append(" AND (status = 'ended' OR started_at <= \(cutoff))")
            } else {
                sql.append(" AND status = \(status.rawValue) AND started_at > \(cutoff)")
            }
        }
        if let type = filter.activityType {
            sql.append(" AND activity_type = \(type)")
        }
        if let before = filter.before {
            sql.append(" AND seq < \(before)")
        }
        sql.append(" ORDER BY seq DESC LIMIT \(filter.limit)")
        return try query(sql).map(Self.activityRecord)
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
            // The channels of an earlier activity of this id are not the new one's.
            try run("UPDATE channels SET activity_id = NULL WHERE app_id = \(appID) AND activity_id = \(activityID)")
            try run("DELETE FROM activity_instances WHERE app_id = \(appID) AND activity_id = \(activityID)")
            try run("DELETE FROM activity_audience WHERE app_id = \(appID) AND activity_id = \(activityID)")
            try run("DELETE FROM activities WHERE app_id = \(appID) AND activity_id = \(activityID)")
        }
        guard let row = try recoveringFromConflict({ try query(
            """
            INSERT INTO activities (app_id, activity_id, activity_type, origin, status, attributes, content_state,
                last_timestamp, started_at, end_at)
            VALUES (\(appID), \(activityID), \(activityType), \(origin.rawValue), 'started', \(attributes?.jsonText),
                \(contentState?.jsonText), \(lastTimestamp), \(now.unixMilliseconds), \(endAt?.unixMilliseconds))
            RETURNING seq
            """) }).first
        else { throw StoreError(.corrupt, "the activity's insert returned no sequence") }
        if endAt != nil { try notifyNodes(.timersChanged) }
        return try row.int64("seq")
    }

    /// Adds an activity the app started on a device, unless one of that id exists,
    /// in one statement. Answers the activity added, or nil when one existed.
    @discardableResult
    public func insertLocalActivity(
        appID: String, activityID: String, activityType: String, createdBy deviceID: String, now: Date
    ) throws -> ActivityRecord? {
        try query(
            """
            INSERT INTO activities (app_id, activity_id, activity_type, origin, status, started_at, created_by,
                creator_user_id)
            VALUES (\(appID), \(activityID), \(activityType), \(ActivityRecord.Origin.local.rawValue), 'started',
                \(now.unixMilliseconds), \(deviceID),
                (SELECT user_id FROM devices WHERE app_id = \(appID) AND device_id = \(deviceID)))
            ON CONFLICT (app_id, activity_id) DO NOTHING
            RETURNING \(sql: Self.activityColumns)
            """
        ).first.map(Self.activityRecord)
    }

    /// Sets when Islet ends the activity.
    public func setEndAt(appID: String, activityID: String, endAt: Date) throws {
        try notifyNodes(.timersChanged)
        try run(
            """
            UPDATE activities SET end_at = \(endAt.unixMilliseconds) WHERE app_id = \(appID) AND activity_id = \(activityID)
            """)
    }

    /// Activities whose end time has come and that have not ended, oldest first.
    public func dueScheduledEnds(now: Date, limit: Int) throws -> [(appID: String, activityID: String)] {
        try query(
            """
            SELECT app_id, activity_id FROM activities
            WHERE end_at IS NOT NULL AND status != 'ended' AND end_at <= \(now.unixMilliseconds)
            ORDER BY end_at LIMIT \(limit)
            """
        ).map { (try $0.string("app_id"), try $0.string("activity_id")) }
    }

    /// Records an update: the new content state and timestamp.
    public func recordUpdate(appID: String, activityID: String, contentState: JSONValue, timestamp: Int64, now: Date) throws {
        try run(
            """
            UPDATE activities SET status = 'updated', content_state = \(contentState.jsonText),
                last_timestamp = \(timestamp), updated_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND activity_id = \(activityID)
            """)
    }

    /// Ends an activity and every copy of it not yet ended. A content state or
    /// timestamp it lacks leaves the stored one.
    public func endActivity(
        appID: String, activityID: String, cause: EndCause, contentState: JSONValue?, timestamp: Int64?, at date: Date
    ) throws {
        let millis = date.unixMilliseconds
        var changes: SQL = "status = 'ended', ended_at = \(millis), end_cause = \(cause.rawValue)"
        if let contentState {
            changes.append(", content_state = \(contentState.jsonText)")
        }
        if let timestamp {
            changes.append(", last_timestamp = \(timestamp)")
        }
        try run(
            """
            UPDATE activities SET \(sql: changes)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status != 'ended'
            """)
        try run(
            """
            UPDATE activity_instances SET status = 'ended', ended_at = \(millis), end_cause = \(cause.rawValue),
                updated_at = \(millis)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status != 'ended'
            """)
    }

    /// Ends every activity started at or before `startedBefore` that has not
    /// ended, as expired `total` seconds after its start, with every copy of it, and
    /// drops its starts and updates still queued. Answers how many activities.
    @discardableResult
    public func expireActivities(startedBefore: Date, total: TimeInterval, now: Date) throws -> ExpiredActivities {
        let cutoff = startedBefore.unixMilliseconds
        let millis = now.unixMilliseconds
        let dropped = try query(
            """
            UPDATE pushes SET status = 'dropped', reason = 'ActivityExpired', updated_at = \(millis)
            WHERE status = 'queued' AND event IN ('start', 'update') AND (app_id, activity_id) IN
                (SELECT app_id, activity_id FROM activities WHERE status != 'ended' AND started_at <= \(cutoff))
            RETURNING \(sql: Self.droppedColumns)
            """
        ).map(Self.droppedPush)
        let expired = try query(
            """
            UPDATE activities SET status = 'ended', end_cause = 'expired', ended_at = started_at + \(Int64(total * 1000))
            WHERE status != 'ended' AND started_at <= \(cutoff)
            RETURNING app_id, activity_id
            """
        ).map { ActivityKey(appID: try $0.string("app_id"), activityID: try $0.string("activity_id")) }
        let result = ExpiredActivities(activities: expired, droppedPushes: dropped)
        guard !expired.isEmpty else { return result }
        for key in expired {
            try dropOpenSends(
                appID: key.appID, activityID: key.activityID, events: [.start, .update], reason: "ActivityExpired", now: now)
        }
        try run(
            """
            UPDATE activity_instances SET status = 'ended', end_cause = 'expired',
                ended_at = (SELECT a.ended_at FROM activities a
                    WHERE a.app_id = activity_instances.app_id AND a.activity_id = activity_instances.activity_id),
                updated_at = \(millis)
            WHERE status != 'ended' AND EXISTS (SELECT 1 FROM activities a
                WHERE a.app_id = activity_instances.app_id AND a.activity_id = activity_instances.activity_id
                    AND a.status = 'ended')
            """)
        return result
    }

    /// Copies whose start APNs accepted at or before `sentBefore` and that have no
    /// update token yet, not reported before; each is marked reported. `CROSS JOIN`
    /// makes SQLite take the pending copies (few) as the outer loop and find each
    /// one's start push by `pushes_starts`; it chose to scan every push of the queue
    /// instead, a million in a large fan-out, holding the writer meanwhile.
    public func claimUnconfirmedStarts(sentBefore: Date, now: Date, limit: Int) throws -> [UnconfirmedStart] {
        let lock: SQL = dialect == .postgresql ? " FOR UPDATE OF i SKIP LOCKED" : ""
        var found = try query(
            """
            SELECT i.app_id, i.activity_id, i.device_id, p.apns_id, p.sent_at
            FROM activity_instances i CROSS JOIN pushes p
            WHERE i.status = 'pending' AND i.update_token IS NULL AND i.start_unconfirmed_at IS NULL
                AND p.app_id = i.app_id AND p.activity_id = i.activity_id AND p.device_id = i.device_id
                AND p.event = 'start' AND p.status = 'sent' AND p.created_at >= i.created_at
                AND p.sent_at <= \(sentBefore.unixMilliseconds)
            ORDER BY p.sent_at LIMIT \(limit)\(sql: lock)
            """
        ).map { row in
            UnconfirmedStart(
                appID: try row.string("app_id"), activityID: try row.string("activity_id"),
                deviceID: try row.string("device_id"), apnsID: try row.string("apns_id"), sentAt: try row.date("sent_at"))
        }
        // The starts by windows: a copy its send's windows reached (handed out, in
        // no window still in flight, no row of its own), once the send last
        // progressed at or before `sentBefore` (its windows' settling times are
        // not kept one by one: the send's last is the latest any of them was).
        let windowed = try query(
            """
            SELECT i.app_id, i.activity_id, i.device_id, s.id AS send_id, s.progressed_at AS sent_at
            FROM activity_instances i CROSS JOIN sends s
            WHERE i.status = 'pending' AND i.update_token IS NULL AND i.start_unconfirmed_at IS NULL
                AND i.start_send_id IS NOT NULL AND s.id = i.start_send_id AND s.audience = 'copies'
                AND s.token_kind = \(PushTokenKind.pushToStart.rawValue) AND s.claimed_through >= i.device_id
                AND s.progressed_at <= \(sentBefore.unixMilliseconds)
                AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id)
                AND NOT EXISTS (SELECT 1 FROM send_windows w WHERE w.send_id = s.id
                    AND w.after_device < i.device_id AND i.device_id <= w.through_device)
            ORDER BY s.progressed_at LIMIT \(limit)\(sql: lock)
            """
        ).map { row in
            UnconfirmedStart(
                appID: try row.string("app_id"), activityID: try row.string("activity_id"),
                deviceID: try row.string("device_id"),
                apnsID: APNsMessageID.derived(sendID: try row.int64("send_id"), deviceID: try row.string("device_id")),
                sentAt: try row.date("sent_at"))
        }
        found = Array((found + windowed).sorted { $0.sentAt < $1.sentAt }.prefix(limit))
        try runEach(found) { start in
            """
            UPDATE activity_instances SET start_unconfirmed_at = \(now.unixMilliseconds)
            WHERE app_id = \(start.appID) AND activity_id = \(start.activityID) AND device_id = \(start.deviceID)
            """
        }
        return found
    }

    /// Whether the activity has ended (or no longer exists).
    public func activityHasEnded(appID: String, activityID: String) throws -> Bool {
        try query("SELECT status FROM activities WHERE app_id = \(appID) AND activity_id = \(activityID)")
            .first?.optionalString("status").map { $0 == "ended" } ?? true
    }

    // MARK: - Instances

    /// Every device's copy of an activity, by device id.
    public func copies(appID: String, activityID: String) throws -> [CopyRecord] {
        try query(
            """
            SELECT \(sql: Self.copyColumns) FROM activity_instances
            WHERE app_id = \(appID) AND activity_id = \(activityID) ORDER BY device_id
            """
        ).map(Self.copyRecord)
    }

    /// One device's copy of an activity.
    public func copy(appID: String, activityID: String, deviceID: String) throws -> CopyRecord? {
        try query(
            """
            SELECT \(sql: Self.copyColumns) FROM activity_instances
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
            """
        ).first.map(Self.copyRecord)
    }

    /// Adds pending copies for the devices a start goes to (a device that has a copy
    /// keeps it).
    /// Marks the copies of `deviceIDs` as listening on the activity's channel: active
    /// from their start, with no update token to wait for.
    public func subscribeCopies(appID: String, activityID: String, deviceIDs: [String]) throws {
        if dialect == .postgresql {
            try forEachChunk(of: deviceIDs) { chunk in
                try run(
                    """
                    UPDATE activity_instances SET status = 'active', subscribed = true
                    WHERE app_id = \(appID) AND activity_id = \(activityID)
                        AND device_id = ANY(\(SQLValue.array(chunk.map { .text($0) }))::text[])
                    """)
            }
            return
        }
        _ = try runEach(deviceIDs) { deviceID in
            """
            UPDATE activity_instances SET status = 'active', subscribed = 1
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
            """
        }
    }

    public func insertPendingCopies(
        appID: String, activityID: String, targets: [PushTarget], startSendID: Int64?, now: Date
    ) throws {
        let millis = now.unixMilliseconds
        if dialect == .postgresql {
            // Bound as arrays, a few thousand targets a statement.
            try forEachChunk(of: targets) { chunk in
                try run(
                    """
                    INSERT INTO activity_instances (app_id, activity_id, device_id, status, environment, created_at, updated_at,
                        start_send_id)
                    SELECT \(appID)::text, \(activityID)::text, t.device_id, 'pending', t.environment, \(millis)::int8,
                        \(millis)::int8, \(startSendID)::int8
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0.deviceID) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.environment.rawValue) }))::text[]) AS t(device_id, environment)
                    ON CONFLICT (app_id, activity_id, device_id) DO NOTHING
                    """)
            }
            return
        }
        try runEach(targets) { target in
            """
            INSERT INTO activity_instances (app_id, activity_id, device_id, status, environment, created_at, updated_at,
                start_send_id)
            VALUES (\(appID), \(activityID), \(target.deviceID), 'pending', \(target.environment.rawValue), \(millis),
                \(millis), \(startSendID))
            ON CONFLICT (app_id, activity_id, device_id) DO NOTHING
            """
        }
    }

    @discardableResult
    public func insertAndroidCopies(
        appID: String, activityID: String, deviceIDs: [String], startSendID: Int64?, now: Date
    ) throws -> Int {
        let millis = now.unixMilliseconds
        if dialect == .postgresql {
            // Bound as an array, a few thousand devices a statement.
            var added = 0
            try forEachChunk(of: deviceIDs) { chunk in
                added += try run(
                    """
                    INSERT INTO activity_instances (app_id, activity_id, device_id, status, environment, created_at, updated_at,
                        start_send_id)
                    SELECT \(appID)::text, \(activityID)::text, t.device_id, 'active', 'production', \(millis)::int8,
                        \(millis)::int8, \(startSendID)::int8
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0) }))::text[]) AS t(device_id)
                    ON CONFLICT (app_id, activity_id, device_id) DO NOTHING
                    """)
            }
            return added
        }
        return try runEach(deviceIDs) { deviceID in
            """
            INSERT INTO activity_instances (app_id, activity_id, device_id, status, environment, created_at, updated_at,
                start_send_id)
            VALUES (\(appID), \(activityID), \(deviceID), 'active', 'production', \(millis), \(millis), \(startSendID))
            ON CONFLICT (app_id, activity_id, device_id) DO NOTHING
            """
        }
    }

    /// Registers or rotates a device's update token for an activity; the copy becomes
    /// active. Answers whether the device had no token for it before. Each step is
    /// one statement that reads and writes the row at once: an insert of a new copy
    /// (nothing when one exists), else the first token of a pending copy, else a
    /// rotation.
    public func registerUpdateToken(
        appID: String, activityID: String, deviceID: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool {
        let millis = now.unixMilliseconds
        let inserted = try run(
            """
            INSERT INTO activity_instances (app_id, activity_id, device_id, status, update_token, environment,
                token_registered_at, created_at, updated_at)
            VALUES (\(appID), \(activityID), \(deviceID), 'active', \(token), \(environment.rawValue), \(millis),
                \(millis), \(millis))
            ON CONFLICT (app_id, activity_id, device_id) DO NOTHING
            """) > 0
        if inserted { return true }
        let update: SQL = """
            UPDATE activity_instances SET status = 'active', update_token = \(token), \
            environment = \(environment.rawValue), token_registered_at = \(millis), updated_at = \(millis)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
            """
        if try run(update + " AND update_token IS NULL") > 0 { return true }
        try run(update)
        return false
    }

    /// Ends one device's copy (only while it holds `onlyToken`, when given). Answers
    /// whether it was not ended before.
    @discardableResult
    public func endCopy(
        appID: String, activityID: String, deviceID: String, cause: EndCause, onlyToken: String?, at date: Date
    ) throws -> Bool {
        let millis = date.unixMilliseconds
        var sql: SQL = """
            UPDATE activity_instances SET status = 'ended', end_cause = \(cause.rawValue), ended_at = \(millis),
                updated_at = \(millis)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID) AND status != 'ended'
            """
        if let onlyToken {
            sql.append(" AND update_token = \(onlyToken)")
        }
        return try run(sql) > 0
    }

    /// The update tokens of every copy of an activity that has not ended.
    public func updateTargets(appID: String, activityID: String) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, update_token AS token, environment FROM activity_instances
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status = 'active' AND update_token IS NOT NULL
            ORDER BY device_id
            """
        ).map(Self.target)
    }

    /// A page of the update tokens of an activity's copies that have not ended, after
    /// `afterDeviceID`, in device order (the primary key's: no sort).
    public func updateTargets(appID: String, activityID: String, afterDeviceID: String?, limit: Int) throws -> [PushTarget] {
        let after: SQL = afterDeviceID.map { " AND device_id > \($0)" } ?? ""
        return try query(
            """
            SELECT device_id, update_token AS token, environment FROM activity_instances
            WHERE app_id = \(appID) AND activity_id = \(activityID)\(sql: after) AND status = 'active'
                AND update_token IS NOT NULL
            ORDER BY device_id LIMIT \(limit)
            """
        ).map(Self.target)
    }

    public func androidUpdateTargets(
        appID: String, activityID: String, afterDeviceID: String?, limit: Int
    ) throws -> [PushTarget] {
        let after: SQL = afterDeviceID.map { " AND i.device_id > \($0)" } ?? ""
        return try query(
            """
            SELECT i.device_id, d.fcm_token AS token, d.environment FROM activity_instances i
            JOIN devices d ON d.app_id = i.app_id AND d.device_id = i.device_id
            WHERE i.app_id = \(appID) AND i.activity_id = \(activityID)\(sql: after) AND i.status = 'active'
                AND i.update_token IS NULL AND d.platform = 'android' AND d.fcm_token IS NOT NULL
                AND d.unreachable_at IS NULL
            ORDER BY i.device_id LIMIT \(limit)
            """
        ).map(Self.target)
    }

    static func activityRecord(_ row: SQLRow) throws -> ActivityRecord {
        var record = ActivityRecord(
            sequence: try row.int64("seq"), activityID: try row.string("activity_id"),
            activityType: try row.string("activity_type"),
            origin: try row.enumValue("origin", as: ActivityRecord.Origin.self),
            status: try row.enumValue("status", as: ActivityStatus.self), attributes: try row.json("attributes"),
            contentState: try row.json("content_state"), lastTimestamp: row.optionalInt64("last_timestamp"),
            startedAt: try row.date("started_at"), updatedAt: row.optionalDate("updated_at"),
            endedAt: row.optionalDate("ended_at"), endCause: row.optionalString("end_cause").flatMap(EndCause.init),
            endAt: row.optionalDate("end_at"), startAlert: try row.json("start_alert"),
            renewal: RenewalLinks(
                renewedTo: row.optionalString("renewed_to"), renewedFrom: row.optionalString("renewed_from"),
                notRenewed: try row.json("not_renewed").flatMap { value -> [String]? in
                    guard case .array(let items) = value else { return nil }
                    return items.compactMap(\.stringValue)
                } ?? []),
            delivery: try row.enumValue("delivery", as: ActivityDelivery.self))
        record.join = row.optionalString("join_rule").flatMap(JoinRule.init(rawValue:))
        record.createdBy = row.optionalString("created_by")
        record.creatorUserID = row.optionalString("creator_user_id")
        return record
    }

    /// Stores the alert an activity was started with.
    public func setStartAlert(appID: String, activityID: String, alert: JSONValue) throws {
        try run(
            """
            UPDATE activities SET start_alert = \(alert.jsonText) WHERE app_id = \(appID) AND activity_id = \(activityID)
            """)
    }

    /// Links an activity to its successor (and the successor back to it).
    public func recordRenewal(appID: String, from activityID: String, to successorID: String?, notRenewed: [String]) throws {
        let devices = JSONValue.array(notRenewed.map(JSONValue.string)).jsonText
        try run(
            """
            UPDATE activities SET renewed_to = \(successorID), not_renewed = \(devices)
            WHERE app_id = \(appID) AND activity_id = \(activityID)
            """)
        if let successorID {
            try run(
                """
                UPDATE activities SET renewed_from = \(activityID) WHERE app_id = \(appID) AND activity_id = \(successorID)
                """)
        }
    }

    static func copyRecord(_ row: SQLRow) throws -> CopyRecord {
        var record = CopyRecord(
            deviceID: try row.string("device_id"), status: try row.enumValue("status", as: CopyStatus.self),
            updateToken: row.optionalString("update_token"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            tokenRegisteredAt: row.optionalDate("token_registered_at"), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), endedAt: row.optionalDate("ended_at"),
            endCause: row.optionalString("end_cause").flatMap(EndCause.init), subscribed: try row.bool("subscribed"),
            platform: row.optionalString("platform") ?? "ios")
        record.joined = try row.bool("joined")
        record.lastReceivedSendID = row.optionalInt64("last_received_send_id")
        record.lastReceivedAt = row.optionalDate("last_received_at")
        return record
    }

    // MARK: - Who may follow

    /// Sets who may follow an activity the backend started, and adds `audience` to
    /// the devices it lets in.
    public func setJoin(appID: String, activityID: String, rule: JoinRule, adding audience: JoinAudience) throws {
        try run(
            "UPDATE activities SET join_rule = \(rule.rawValue) WHERE app_id = \(appID) AND activity_id = \(activityID)")
        try addJoinAudience(appID: appID, activityID: activityID, audience)
    }

    /// Adds `audience`'s values to the devices an activity lets in. Answers how many
    /// were not listed before.
    @discardableResult
    public func addJoinAudience(appID: String, activityID: String, _ audience: JoinAudience) throws -> Int {
        let rows = Self.audienceRows(audience)
        if dialect == .postgresql {
            var added = 0
            try forEachChunk(of: rows) { chunk in
                added += try run(
                    """
                    INSERT INTO activity_audience (app_id, activity_id, kind, value)
                    SELECT \(appID)::text, \(activityID)::text, t.kind, t.value
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0.kind) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.value) }))::text[]) AS t(kind, value)
                    ON CONFLICT (app_id, activity_id, kind, value) DO NOTHING
                    """)
            }
            return added
        }
        return try runEach(rows) { row in
            """
            INSERT INTO activity_audience (app_id, activity_id, kind, value)
            VALUES (\(appID), \(activityID), \(row.kind), \(row.value))
            ON CONFLICT (app_id, activity_id, kind, value) DO NOTHING
            """
        }
    }

    /// The devices an activity lets in beside those its start targeted.
    public func joinAudience(appID: String, activityID: String) throws -> JoinAudience {
        var lists: [String: [String]] = [:]
        for row in try query(
            """
            SELECT kind, value FROM activity_audience WHERE app_id = \(appID) AND activity_id = \(activityID)
            ORDER BY kind, value
            """)
        {
            lists[try row.string("kind"), default: []].append(try row.string("value"))
        }
        return JoinAudience(
            userIDs: lists["user_id"] ?? [], deviceIDs: lists["device_id"] ?? [], tags: lists["tag"] ?? [])
    }

    /// Whether a device is in an activity's join audience: its id, its user id or
    /// one of its tags is listed.
    public func inJoinAudience(appID: String, activityID: String, deviceID: String) throws -> Bool {
        try !query(
            """
            SELECT 1 AS found FROM activity_audience a
            WHERE a.app_id = \(appID) AND a.activity_id = \(activityID) AND (
                (a.kind = 'device_id' AND a.value = \(deviceID))
                OR (a.kind = 'user_id' AND a.value = (
                    SELECT d.user_id FROM devices d WHERE d.app_id = \(appID) AND d.device_id = \(deviceID)))
                OR (a.kind = 'tag' AND a.value IN (
                    SELECT t.tag FROM device_tags t WHERE t.app_id = \(appID) AND t.device_id = \(deviceID))))
            LIMIT 1
            """
        ).isEmpty
    }

    /// Adds an activity's join audience to its successor's.
    public func copyJoinAudience(appID: String, from activityID: String, to successorID: String) throws {
        try run(
            """
            INSERT INTO activity_audience (app_id, activity_id, kind, value)
            SELECT app_id, \(successorID), kind, value FROM activity_audience
            WHERE app_id = \(appID) AND activity_id = \(activityID)
            ON CONFLICT (app_id, activity_id, kind, value) DO NOTHING
            """)
    }

    /// Marks a device's copy as one it joined on its own.
    public func markJoined(appID: String, activityID: String, deviceID: String) throws {
        let joined: SQL = dialect == .postgresql ? "true" : "1"
        try run(
            """
            UPDATE activity_instances SET joined = \(sql: joined)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
            """)
    }

    private static func audienceRows(_ audience: JoinAudience) -> [(kind: String, value: String)] {
        audience.userIDs.map { ("user_id", $0) } + audience.deviceIDs.map { ("device_id", $0) }
            + audience.tags.map { ("tag", $0) }
    }
}
