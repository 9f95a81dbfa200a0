public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    /// Stores what a send says, once for all its targets. Answers its id.
    public func replaceSendPayload(sendID: Int64, payload: Data) throws {
        guard try run("UPDATE sends SET payload = \(payload) WHERE id = \(sendID)") == 1 else {
            throw StoreError(.corrupt, "send \(sendID) is missing")
        }
    }

    public func insertSend(appID: String, activityID: String?, content: SendContent, now: Date) throws -> Int64 {
        guard let row = try query(
            """
            INSERT INTO sends (app_id, activity_id, event, topic, push_type, priority, expiration, collapse_id,
                payload, created_at)
            VALUES (\(appID), \(activityID), \(content.event.rawValue), \(content.topic), \(content.pushType.rawValue),
                \(content.priority.rawValue), \(content.expiration), \(content.collapseID), \(content.payload),
                \(now.unixMilliseconds))
            RETURNING id
            """).first
        else { throw StoreError(.corrupt, "the send's insert returned no id") }
        return try row.int64("id")
    }

    /// Queues one push of `sendID` per target, each with its own `apns-id` from
    /// `mintID`. Answers how many. The statement is rendered and prepared once.
    @discardableResult
    public func enqueuePushes(
        sendID: Int64, appID: String, activityID: String?, activityType: String?, event: PushEvent,
        tokenKind: PushTokenKind, targets: [PushTarget], now: Date, mintID: () -> String
    ) throws -> Int {
        let millis = now.unixMilliseconds
        if dialect == .postgresql {
            // One statement per 5,000 targets, their values bound as arrays: a
            // round trip per push would cost more than the push.
            try forEachChunk(of: targets) { chunk in
                try run(
                    """
                    INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                        environment, apns_id, status, next_attempt_at, created_at, updated_at, priority_downgraded,
                        deferred_until)
                    SELECT \(sendID)::int8, \(appID)::text, \(activityID)::text, \(activityType)::text, \(event.rawValue)::text,
                        t.device_id, \(tokenKind.rawValue)::text, t.token, t.environment, t.apns_id, 'queued',
                        coalesce(t.deferred_until, \(millis)::int8), \(millis)::int8, \(millis)::int8, t.downgraded,
                        t.deferred_until
                    FROM unnest(\(SQLValue.array(chunk.map { .text($0.deviceID) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.token) }))::text[],
                        \(SQLValue.array(chunk.map { .text($0.environment.rawValue) }))::text[],
                        \(SQLValue.array(chunk.map { _ in .text(mintID()) }))::text[],
                        \(SQLValue.array(chunk.map { .bool($0.priorityDowngraded) }))::boolean[],
                        \(SQLValue.array(chunk.map { $0.deferredUntil.map { .integer($0.unixMilliseconds) } ?? .null }))::int8[])
                        WITH ORDINALITY AS t(device_id, token, environment, apns_id, downgraded, deferred_until, n)
                    ORDER BY t.n
                    """)
            }
            if !targets.isEmpty { try notifyNodes(.pushesQueued) }
            return targets.count
        }
        try runEach(targets) { target in
            """
            INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                environment, apns_id, status, next_attempt_at, created_at, updated_at, priority_downgraded, deferred_until)
            VALUES (\(sendID), \(appID), \(activityID), \(activityType), \(event.rawValue), \(target.deviceID),
                \(tokenKind.rawValue), \(target.token), \(target.environment.rawValue), \(mintID()), 'queued',
                \(target.deferredUntil?.unixMilliseconds ?? millis), \(millis), \(millis), \(target.priorityDowngraded),
                \(target.deferredUntil?.unixMilliseconds))
            """
        }
        if !targets.isEmpty { try notifyNodes(.pushesQueued) }
        return targets.count
    }

    /// Drops the queued updates of an activity that a newer update or end replaces:
    /// the device shows only the newest content. Answers how many.
    @discardableResult
    public func supersedeQueuedUpdates(appID: String, activityID: String, now: Date) throws -> [DroppedPush] {
        try query(
            """
            UPDATE pushes SET status = 'dropped', reason = 'Superseded', updated_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status = 'queued' AND event = 'update'
            RETURNING \(sql: Self.droppedColumns)
            """
        ).map(Self.droppedPush)
    }

    static let droppedColumns: SQL = "id, app_id, activity_id, device_id, event, token_kind, apns_id, reason"

    static func droppedPush(_ row: SQLRow) throws -> DroppedPush {
        DroppedPush(
            pushID: try row.int64("id"), appID: try row.string("app_id"), activityID: row.optionalString("activity_id"),
            deviceID: try row.string("device_id"), event: try row.enumValue("event", as: PushEvent.self),
            tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self), apnsID: try row.string("apns_id"),
            reason: row.optionalString("reason") ?? "")
    }

    /// Drops an activity's queued pushes of `events` (an ended activity must not be
    /// started or updated by a push still waiting). Answers how many.
    @discardableResult
    public func dropQueuedPushes(
        appID: String, activityID: String, events: [PushEvent], reason: String, now: Date
    ) throws -> [DroppedPush] {
        try query(
            """
            UPDATE pushes SET status = 'dropped', reason = \(reason), updated_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND status = 'queued'
                AND event \(in: events.map(\.rawValue))
            RETURNING \(sql: Self.droppedColumns)
            """
        ).map(Self.droppedPush)
    }

    /// The columns ``historyItem(_:)`` reads.
    static let historyColumns = historyColumns(prefix: "")

    /// The columns ``historyItem(_:)`` reads, each after `prefix` (a table's alias
    /// and a dot, in a join).
    static func historyColumns(prefix: String) -> SQL {
        let names = [
            "id", "send_id", "device_id", "token_kind", "event", "status", "environment", "environment_switched",
            "apns_status", "reason", "apns_id", "service_message_id", "attempts", "created_at", "updated_at", "sent_at",
            "taps", "first_tapped_at", "priority_downgraded", "deferred_until",
        ]
        return SQL(raw: names.map { prefix + $0 }.joined(separator: ", "))
    }

    /// A push's row as its history shows it (one being sent, as queued).
    static func historyItem(_ row: SQLRow) throws -> PushHistoryItem {
        let stored = try row.string("status")
        var item = PushHistoryItem(
            id: try row.int64("id"), deviceID: try row.string("device_id"),
            tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self),
            event: try row.enumValue("event", as: PushEvent.self),
            status: stored == "sending" ? .queued : try row.enumValue("status", as: PushStatus.self),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            environmentSwitched: try row.bool("environment_switched"),
            apnsStatus: row.optionalInt64("apns_status").map(Int.init), reason: row.optionalString("reason"),
            apnsID: try row.string("apns_id"), serviceMessageID: row.optionalString("service_message_id"),
            attempts: Int(try row.int64("attempts")), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), sentAt: row.optionalDate("sent_at"),
            taps: Int(try row.int64("taps")), firstTappedAt: row.optionalDate("first_tapped_at"),
            priorityDowngraded: try row.bool("priority_downgraded"), deferredUntil: row.optionalDate("deferred_until"))
        item.sendID = try row.int64("send_id")
        return item
    }

    /// Every push made for an activity since `since`, oldest first.
    public func pushes(appID: String, activityID: String, since: Date) throws -> [PushHistoryItem] {
        let rows = try query(
            """
            SELECT \(sql: Self.historyColumns)
            FROM pushes WHERE app_id = \(appID) AND activity_id = \(activityID) AND created_at >= \(since.unixMilliseconds)
            ORDER BY id
            """
        ).map(Self.historyItem)
        let windows = try windowHistory(appID: appID, activityID: activityID, since: since)
        // By send; within a send by windows, in device order (its rows among them).
        let windowed = Set(windows.map(\.sendID))
        var items = windows.isEmpty ? rows : (rows + windows).sorted { first, second in
            if first.sendID != second.sendID { return first.sendID < second.sendID }
            if windowed.contains(first.sendID) { return first.deviceID < second.deviceID }
            return first.id < second.id
        }
        // Each push its device said it showed (receipts).
        let received = try receipts(appID: appID, activityID: activityID)
        if !received.isEmpty {
            for index in items.indices {
                items[index].receivedAt = received[SendDevice(sendID: items[index].sendID, deviceID: items[index].deviceID)]
            }
        }
        return items
    }

    /// Counts a tap on a push of a device's copy of an activity, once per push and
    /// time.
    public func recordTap(
        appID: String, activityID: String, deviceID: String, apnsID: String?, at: Date, sentBy: Date
    ) throws -> RecordedTap? {
        // The copy's pushes, newest first, by pushes_by_copy: a tap costs the same
        // in an activity of a million devices as in one of one.
        var chosen: SQL = """
            SELECT id, apns_id, coalesce(sent_at, created_at) AS arrived_from FROM pushes
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
            """
        if let apnsID {
            chosen.append(" AND apns_id = \(apnsID)")
        } else {
            chosen.append(" AND status = 'sent' AND sent_at <= \(sentBy.unixMilliseconds)")
        }
        chosen.append(" ORDER BY created_at DESC, id DESC LIMIT 1")
        var row = try query(chosen).first
        // A push of a send's window has no row until a tap needs one: found by its
        // derived apns-id, or as the newest send that reached the copy.
        var windowSend: Int64?
        if let apnsID {
            if row == nil { windowSend = APNsMessageID.derivedSend(apnsID, deviceID: deviceID) }
        } else if let found = try newestWindowSend(appID: appID, activityID: activityID, deviceID: deviceID, sentBy: sentBy),
            try row.map({ try $0.date("arrived_from") < found.sentAt }) ?? true
        {
            windowSend = found.sendID
        }
        if let windowSend,
            let id = try materializeWindowPush(appID: appID, activityID: activityID, deviceID: deviceID, sendID: windowSend)
        {
            row = try query("SELECT id, apns_id, coalesce(sent_at, created_at) AS arrived_from FROM pushes WHERE id = \(id)")
                .first
        }
        if apnsID != nil, row == nil { return nil }
        let pushID = try row?.int64("id") ?? 0
        let millis = at.unixMilliseconds
        // A tap is counted once per push and time, however often and in whatever
        // order it is reported again; on PostgreSQL a second insert of the same
        // tap waits for the first and then finds it.
        let counted = try run(
            """
            INSERT INTO taps (app_id, activity_id, device_id, push_id, tapped_at)
            VALUES (\(appID), \(activityID), \(deviceID), \(pushID), \(millis))
            ON CONFLICT (app_id, activity_id, device_id, push_id, tapped_at) DO NOTHING
            """) > 0
        if counted, row != nil {
            try run(
                """
                UPDATE pushes SET taps = taps + 1, last_tapped_at = \(millis),
                    first_tapped_at = CASE WHEN first_tapped_at IS NULL OR first_tapped_at > \(millis) THEN \(millis)
                        ELSE first_tapped_at END
                WHERE id = \(pushID)
                """)
        }
        return RecordedTap(
            apnsID: try row?.string("apns_id"), counted: counted, pushArrivedFrom: try row?.date("arrived_from"))
    }

    /// Priority-10 updates of an activity sent since `since`: no copy of it was sent
    /// more (by sends_by_activity).
    public func priority10Sends(appID: String, activityID: String, since: Date) throws -> Int {
        let rows = try query(
            """
            SELECT count(*) AS n FROM sends
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND created_at > \(since.unixMilliseconds)
                AND event = 'update' AND priority = 10
            """)
        return Int(try rows.first?.int64("n") ?? 0)
    }

    /// Each copy's use of its priority-10 budget since `since`, for the copies of
    /// devices after `afterDeviceID` and up to `throughDeviceID` (every copy without
    /// them). A copy's count is one search of pushes_by_copy from `since` (its
    /// rows) and one of sends_by_activity (the sends by windows that reached it
    /// with no row): its cost does not grow with the activity's age.
    public func priority10Usage(
        appID: String, activityID: String, since: Date, afterDeviceID: String?, throughDeviceID: String?
    ) throws -> [String: BudgetUsage] {
        var range: SQL = afterDeviceID.map { " AND i.device_id > \($0)" } ?? ""
        if let throughDeviceID { range.append(" AND i.device_id <= \(throughDeviceID)") }
        let rows = try query(
            """
            SELECT i.device_id, d.frequent_updates,
                (SELECT count(*) FROM pushes p JOIN sends s ON s.id = p.send_id
                    WHERE p.app_id = i.app_id AND p.activity_id = i.activity_id AND p.device_id = i.device_id
                        AND p.created_at > \(since.unixMilliseconds) AND p.event = 'update'
                        AND p.priority_downgraded = \(false) AND p.status NOT IN ('dropped', 'failed')
                        AND s.priority = 10)
                + (SELECT count(*) FROM sends s
                    WHERE s.app_id = i.app_id AND s.activity_id = i.activity_id AND s.audience = 'copies'
                        AND s.token_kind = \(PushTokenKind.liveActivityUpdate.rawValue) AND s.created_at > \(since.unixMilliseconds)
                        AND s.event = 'update' AND s.priority = 10 AND s.created_at >= i.created_at
                        AND i.update_token IS NOT NULL
                        AND (s.state NOT IN ('superseded', 'dropped') OR i.device_id <= s.claimed_through)
                        AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id))
                AS used
            FROM activity_instances i LEFT JOIN devices d ON d.app_id = i.app_id AND d.device_id = i.device_id
            WHERE i.app_id = \(appID) AND i.activity_id = \(activityID)\(sql: range)
            """)
        var usage: [String: BudgetUsage] = [:]
        usage.reserveCapacity(rows.count)
        for row in rows {
            usage[try row.string("device_id")] = BudgetUsage(
                used: Int(try row.int64("used")), frequentUpdates: row.optionalBool("frequent_updates"))
        }
        return usage
    }

    /// When each start push of `deviceIDs` goes (or went), of those going after
    /// `since` that were not dropped and did not fail: the time it was made,
    /// or the later one it was deferred to (rows by pushes_starts_by_device, the
    /// starts by windows by activity_instances_started).
    public func startTimes(appID: String, deviceIDs: [String], since: Date) throws -> [String: [Date]] {
        var times: [String: [Date]] = [:]
        try forEachChunk(of: deviceIDs) { chunk in
            let rows = try query(
                """
                SELECT device_id, coalesce(deferred_until, created_at) AS goes_at FROM pushes
                WHERE app_id = \(appID) AND device_id \(in: Array(chunk)) AND event = 'start'
                    AND coalesce(deferred_until, created_at) > \(since.unixMilliseconds)
                    AND status NOT IN ('dropped', 'failed')
                """)
            for row in rows {
                times[try row.string("device_id"), default: []].append(try row.date("goes_at"))
            }
            // The starts that reach a device by a send's windows, by the copies
            // they made (a copy with a row of its send was counted above): those
            // queued, and those sent; not those a stopped send never reached.
            let windowed = try query(
                """
                SELECT i.device_id, s.created_at AS goes_at
                FROM activity_instances i CROSS JOIN sends s
                WHERE i.app_id = \(appID) AND i.device_id \(in: Array(chunk)) AND i.start_send_id IS NOT NULL
                    AND s.id = i.start_send_id AND s.audience = 'copies' AND s.created_at > \(since.unixMilliseconds)
                    AND (s.state NOT IN ('superseded', 'dropped') OR i.device_id <= s.claimed_through)
                    AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id)
                """)
            for row in windowed {
                times[try row.string("device_id"), default: []].append(try row.date("goes_at"))
            }
        }
        return times
    }

    /// Puts pushes left in flight back in the queue, to be sent again with the same
    /// `apns-id`, by `policy`. Answers how many.
    @discardableResult
    public func requeueInFlight(_ policy: InFlightPolicy, now: Date) throws -> Int {
        let millis = now.unixMilliseconds
        let which: SQL
        switch policy {
        case .requeueAll: which = ""
        case .heldBy(let nodeID): which = " AND claimed_by = \(nodeID)"
        case .leaseExpired: which = " AND lease_until < \(millis)"
        }
        let rows = try run(
            """
            UPDATE pushes SET status = 'queued', claimed_by = NULL, lease_until = NULL, next_attempt_at = \(millis),
                updated_at = \(millis)
            WHERE status = 'sending'\(sql: which)
            """)
        return rows + (try requeueWindows(policy, now: now))
    }

    /// Takes up to `limit` pushes that are due, oldest first, and marks them in
    /// flight under `lease`, in one statement. On PostgreSQL the rows are locked as
    /// they are chosen and a row another node is claiming is skipped (`FOR UPDATE SKIP
    /// LOCKED`), so that two nodes claiming at once never take the same push. `sends`
    /// caches what each send says (shared by all its pushes): only sends not in it
    /// are read, and it is trimmed when large.
    public func claimDuePushes(
        now: Date, limit: Int, lease: PushLease, sends: inout [Int64: SendContent]
    ) throws -> [ClaimedPush] {
        let millis = now.unixMilliseconds
        let skipLocked: SQL = dialect == .postgresql ? " FOR UPDATE SKIP LOCKED" : ""
        let rows = try query(
            """
            UPDATE pushes SET status = 'sending', claimed_by = \(lease.nodeID), lease_until = \(lease.until.unixMilliseconds),
                updated_at = \(millis)
            WHERE id IN (SELECT id FROM pushes WHERE status = 'queued' AND next_attempt_at <= \(millis)
                ORDER BY next_attempt_at, id LIMIT \(limit)\(sql: skipLocked))
            RETURNING id, send_id, app_id, activity_id, activity_type, device_id, token_kind, token, environment,
                environment_switched, apns_id, attempts, rounds, created_at, priority_downgraded
            """)
        if sends.count > 10_000 { sends.removeAll(keepingCapacity: true) }
        var claimed: [ClaimedPush] = []
        claimed.reserveCapacity(rows.count)
        for row in rows {
            let sendID = try row.int64("send_id")
            var content: SendContent
            if let cached = sends[sendID] {
                content = cached
            } else {
                content = try send(id: sendID)
                sends[sendID] = content
            }
            let downgraded = try row.bool("priority_downgraded")
            if downgraded { content.priority = .powerConsidered }
            claimed.append(ClaimedPush(
                id: try row.int64("id"), appID: try row.string("app_id"), activityID: row.optionalString("activity_id"),
                activityType: row.optionalString("activity_type"), deviceID: try row.string("device_id"),
                tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self), token: try row.string("token"),
                environment: try row.enumValue("environment", as: APNsEnvironment.self),
                environmentSwitched: try row.bool("environment_switched"), apnsID: try row.string("apns_id"),
                attempts: Int(try row.int64("attempts")), rounds: Int(try row.int64("rounds")),
                createdAt: try row.date("created_at"), content: content, priorityDowngraded: downgraded))
        }
        claimed.sort { $0.id < $1.id }
        // What the rows leave of the limit goes to the sends' windows.
        if claimed.count < limit {
            claimed += try claimWindows(now: now, limit: limit - claimed.count, lease: lease, sends: &sends)
        }
        return claimed
    }

    /// Extends to `until` the lease of every push `nodeID` holds in flight. Answers
    /// how many.
    @discardableResult
    public func renewLeases(nodeID: String, until: Date) throws -> Int {
        let rows = try run(
            """
            UPDATE pushes SET lease_until = \(until.unixMilliseconds) WHERE status = 'sending' AND claimed_by = \(nodeID)
            """)
        let windows = try run(
            "UPDATE send_windows SET lease_until = \(until.unixMilliseconds) WHERE claimed_by = \(nodeID)")
        return rows + windows
    }

    /// What send `id` says.
    func send(id: Int64) throws -> SendContent {
        guard let row = try query(
            "SELECT event, topic, push_type, priority, expiration, collapse_id, payload FROM sends WHERE id = \(id)"
        ).first else { throw StoreError(.corrupt, "send \(id) is missing") }
        guard let priority = APNsPriority(rawValue: Int(try row.int64("priority"))) else {
            throw StoreError(.corrupt, "send priority")
        }
        return SendContent(
            event: try row.enumValue("event", as: PushEvent.self), topic: try row.string("topic"),
            pushType: try row.enumValue("push_type", as: APNsPushType.self), priority: priority,
            expiration: row.optionalInt64("expiration"), collapseID: row.optionalString("collapse_id"),
            payload: row["payload"].blob ?? Data())
    }

    /// Records, in one statement on PostgreSQL (one round trip for the whole batch),
    /// pushes APNs accepted that change nothing else.
    @discardableResult
    public func recordSent(_ pushes: [SentPush], by nodeID: String, now: Date) throws -> Set<Int64> {
        guard !pushes.isEmpty else { return [] }
        let millis = now.unixMilliseconds
        switch dialect {
        case .postgresql:
            let rows = try query(
                """
                UPDATE pushes AS p SET status = 'sent', attempts = p.attempts + v.attempts, rounds = p.rounds + 1,
                    apns_status = v.apns_status, reason = NULL, service_message_id = v.unique_id, claimed_by = NULL,
                    lease_until = NULL, updated_at = \(millis), sent_at = \(millis)
                FROM unnest(\(SQLValue.array(pushes.map { .integer($0.pushID) }))::int8[],
                    \(SQLValue.array(pushes.map { .integer(Int64($0.attempts)) }))::int8[],
                    \(SQLValue.array(pushes.map { $0.apnsStatus.map { .integer(Int64($0)) } ?? .null }))::int8[],
                    \(SQLValue.array(pushes.map { $0.serviceMessageID.map(SQLValue.text) ?? .null }))::text[])
                    AS v(id, attempts, apns_status, unique_id)
                WHERE p.id = v.id AND p.status = 'sending' AND p.claimed_by = \(nodeID)
                RETURNING p.id
                """)
            return Set(try rows.map { try $0.int64("id") })
        case .sqlite:
            // One writer: those held now are those the updates below record.
            let held = try query(
                """
                SELECT id FROM pushes WHERE id \(in: pushes.map(\.pushID)) AND status = 'sending' AND claimed_by = \(nodeID)
                """)
            try runEach(pushes) { push in
                """
                UPDATE pushes SET status = 'sent', attempts = attempts + \(push.attempts), rounds = rounds + 1,
                    apns_status = \(push.apnsStatus), reason = NULL, service_message_id = \(push.serviceMessageID),
                    claimed_by = NULL, lease_until = NULL, updated_at = \(millis), sent_at = \(millis)
                WHERE id = \(push.pushID) AND status = 'sending' AND claimed_by = \(nodeID)
                """
            }
            return Set(try held.map { try $0.int64("id") })
        }
    }

    /// Records what became of a push, if node `nodeID` still holds it in flight
    /// (answers whether it did). Only what the outcome gives is written: an
    /// APNs status, an `apns-unique-id`, a next attempt or an environment it lacks
    /// leaves the stored one; a new environment that differs from the stored one
    /// marks the push as switched.
    @discardableResult
    public func recordOutcome(pushID: Int64, _ outcome: PushOutcome, by nodeID: String, now: Date) throws -> Bool {
        let millis = now.unixMilliseconds
        if outcome.status == .sent && outcome.environment == nil && outcome.nextAttemptAt == nil {
            // The common case, in a statement of its own.
            return try run(
                """
                UPDATE pushes SET status = 'sent', attempts = attempts + \(outcome.attempts), rounds = rounds + 1,
                    apns_status = \(outcome.apnsStatus), reason = NULL, service_message_id = \(outcome.serviceMessageID),
                    claimed_by = NULL, lease_until = NULL, updated_at = \(millis), sent_at = \(millis)
                WHERE id = \(pushID) AND status = 'sending' AND claimed_by = \(nodeID)
                """) > 0
        }
        var changes: SQL = """
            status = \(outcome.status.rawValue), attempts = attempts + \(outcome.attempts), \
            rounds = rounds + \(outcome.attempts > 0 ? 1 : 0), \
            reason = \(outcome.reason), claimed_by = NULL, lease_until = NULL, updated_at = \(millis)
            """
        if let apnsStatus = outcome.apnsStatus {
            changes.append(", apns_status = \(apnsStatus)")
        }
        if let messageID = outcome.serviceMessageID {
            changes.append(", service_message_id = \(messageID)")
        }
        if let next = outcome.nextAttemptAt {
            changes.append(", next_attempt_at = \(next.unixMilliseconds)")
        }
        if let environment = outcome.environment {
            // Both read the row as it was: the switch compares with the old environment.
            changes.append(
                """
                , environment_switched = (environment_switched OR environment != \(environment.rawValue)), \
                environment = \(environment.rawValue)
                """)
        }
        if outcome.status == .sent {
            changes.append(", sent_at = \(millis)")
        }
        return try run(
            "UPDATE pushes SET \(sql: changes) WHERE id = \(pushID) AND status = 'sending' AND claimed_by = \(nodeID)") > 0
    }

    /// The earliest time a queued push is due, if any is queued.
    public func nextDueTime() throws -> Date? {
        // A queued row's time, a queued send's that waits for no earlier one, or a
        // window handed back (due at its send's time).
        let times = try query(
            """
            SELECT (SELECT min(next_attempt_at) FROM pushes WHERE status = 'queued') AS pushes,
                (SELECT min(s.created_at) FROM sends s WHERE \(sql: Self.queued("s")) AND \(sql: Self.inOrder)) AS sends,
                (SELECT min(s.created_at) FROM send_windows w JOIN sends s ON s.id = w.send_id
                    WHERE w.claimed_by IS NULL) AS windows
            """).first
        return [times?.optionalDate("pushes"), times?.optionalDate("sends"), times?.optionalDate("windows")]
            .compactMap { $0 }.min()
    }

    /// Pushes waiting to be sent or in flight. Two counts, so that each reads its
    /// partial index rather than the whole table.
    public func queueDepth() throws -> Int {
        Int(try query(
            """
            SELECT (SELECT count(*) FROM pushes WHERE status = 'queued')
                + (SELECT count(*) FROM pushes WHERE status = 'sending')
                + (SELECT CAST(coalesce(sum(total - sent - exceptions), 0) AS BIGINT) FROM sends
                    WHERE state IN ('queued', 'claimed'))
                AS n
            """).first?.int64("n") ?? 0)
    }

    // MARK: - Dead tokens

    /// The condition that a token registered at `column` was not registered again
    /// after APNs refused it at `refusedAt` (none when the refusal time is unknown).
    private static func registeredBy(_ refusedAt: Date?, column: String) -> SQL {
        guard let refusedAt else { return "" }
        return " AND \(raw: column) <= \(refusedAt.unixMilliseconds)"
    }

    /// Deletes a push-to-start token APNs refused, unless it was registered again
    /// after `refusedAt`. Answers whether it was deleted.
    public func deleteRefusedStartToken(appID: String, token: String, refusedAt: Date?) throws -> Bool {
        try run(
            """
            DELETE FROM start_tokens WHERE app_id = \(appID) AND token = \(token)\
            \(sql: Self.registeredBy(refusedAt, column: "registered_at"))
            """) > 0
    }

    /// Ends the copy of an activity whose update token APNs refused, unless the token
    /// was registered again after `refusedAt`. Answers whether it ended.
    public func endRefusedCopy(appID: String, activityID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool {
        let millis = now.unixMilliseconds
        return try run(
            """
            UPDATE activity_instances SET status = 'ended', end_cause = 'token_rejected', ended_at = \(millis),
                updated_at = \(millis)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND update_token = \(token) AND status != 'ended'\
            \(sql: Self.registeredBy(refusedAt, column: "token_registered_at"))
            """) > 0
    }

    /// Marks a device unreachable after APNs refused its device token, unless the
    /// token was registered again after `refusedAt`. Answers whether it was marked.
    public func markDeviceUnreachable(appID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool {
        try run(
            """
            UPDATE devices SET unreachable_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND apns_token = \(token) AND unreachable_at IS NULL\
            \(sql: Self.registeredBy(refusedAt, column: "apns_token_registered_at"))
            """) > 0
    }

    /// Marks an Android device unreachable after FCM refused its registration
    /// token, unless the token was registered again after `refusedAt`. Answers
    /// whether it was marked.
    public func markAndroidDeviceUnreachable(appID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool {
        try run(
            """
            UPDATE devices SET unreachable_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND fcm_token = \(token) AND unreachable_at IS NULL\
            \(sql: Self.registeredBy(refusedAt, column: "fcm_token_registered_at"))
            """) > 0
    }

    /// After a push reached `token` only in `environment`, records that environment
    /// wherever the token is registered.
    public func correctEnvironment(appID: String, token: String, kind: PushTokenKind, environment: APNsEnvironment) throws {
        let value = environment.rawValue
        switch kind {
        case .device:
            try run("UPDATE devices SET environment = \(value) WHERE app_id = \(appID) AND apns_token = \(token)")
        case .pushToStart:
            try run("UPDATE start_tokens SET environment = \(value) WHERE app_id = \(appID) AND token = \(token)")
        case .liveActivityUpdate:
            try run(
                "UPDATE activity_instances SET environment = \(value) WHERE app_id = \(appID) AND update_token = \(token)")
        case .channel, .fcm:
            // A channel lives in one environment, FCM has one: neither switches.
            break
        }
    }
}
