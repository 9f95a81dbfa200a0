public import Foundation
public import IsletCore

/// What became of one push, for the store to record.
public struct PushOutcome: Sendable {
    /// The push's new status: sent, failed, or queued again.
    public var status: PushStatus
    /// Attempts made in this round (added to the push's count).
    public var attempts: Int
    /// The last APNs status, if there was an answer.
    public var apnsStatus: Int?
    /// The APNs reason, or Islet's.
    public var reason: String?
    /// `apns-unique-id`.
    public var apnsUniqueID: String?
    /// For a push queued again: when to try next.
    public var nextAttemptAt: Date?
    /// For a push queued again: the environment to try.
    public var environment: APNsEnvironment?

    /// Creates an outcome.
    public init(
        status: PushStatus, attempts: Int, apnsStatus: Int? = nil, reason: String? = nil, apnsUniqueID: String? = nil,
        nextAttemptAt: Date? = nil, environment: APNsEnvironment? = nil
    ) {
        self.status = status
        self.attempts = attempts
        self.apnsStatus = apnsStatus
        self.reason = reason
        self.apnsUniqueID = apnsUniqueID
        self.nextAttemptAt = nextAttemptAt
        self.environment = environment
    }
}

extension SQLiteSession {
    /// Stores what a send says, once for all its targets. Answers its id.
    public func insertSend(appID: String, activityID: String?, content: SendContent, now: Date) throws -> Int64 {
        try run(
            """
            INSERT INTO sends (app_id, activity_id, event, topic, push_type, priority, expiration, collapse_id,
                payload, created_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """,
            [appID, activityID, content.event.rawValue, content.topic, content.pushType.rawValue,
             content.priority.rawValue, content.expiration, content.collapseID, content.payload, now.unixMilliseconds])
        return connection.lastInsertRowID
    }

    /// Queues one push of `sendID` per target, each with its own `apns-id` from
    /// `mintID`. Answers how many.
    @discardableResult
    public func enqueuePushes(
        sendID: Int64, appID: String, activityID: String?, activityType: String?, event: PushEvent,
        tokenKind: PushTokenKind, targets: [PushTarget], now: Date, mintID: () -> String
    ) throws -> Int {
        let millis = now.unixMilliseconds
        let statement = try connection.prepare(
            """
            INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                environment, apns_id, status, next_attempt_at, created_at, updated_at)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 'queued', ?, ?, ?)
            """)
        for target in targets {
            try statement.run([
                sendID, appID, activityID, activityType, event.rawValue, target.deviceID, tokenKind.rawValue,
                target.token, target.environment.rawValue, mintID(), millis, millis, millis,
            ])
        }
        return targets.count
    }

    /// Drops the queued updates of an activity that a newer update or end replaces:
    /// the device shows only the newest content. Answers how many.
    @discardableResult
    public func supersedeQueuedUpdates(appID: String, activityID: String, now: Date) throws -> Int {
        try run(
            """
            UPDATE pushes SET status = 'dropped', reason = 'Superseded', updated_at = ?
            WHERE app_id = ? AND activity_id = ? AND status = 'queued' AND event = 'update'
            """, [now.unixMilliseconds, appID, activityID])
    }

    /// Drops an activity's queued pushes of `events` (an ended activity must not be
    /// started or updated by a push still waiting). Answers how many.
    @discardableResult
    public func dropQueuedPushes(appID: String, activityID: String, events: [PushEvent], reason: String, now: Date) throws -> Int {
        try run(
            """
            UPDATE pushes SET status = 'dropped', reason = ?, updated_at = ?
            WHERE app_id = ? AND activity_id = ? AND status = 'queued' AND event IN (SELECT value FROM json_each(?))
            """, [reason, now.unixMilliseconds, appID, activityID, Self.jsonArray(events.map(\.rawValue))])
    }

    /// Whether the activity has ended (or no longer exists).
    public func activityHasEnded(appID: String, activityID: String) throws -> Bool {
        try query("SELECT status FROM activities WHERE app_id = ? AND activity_id = ?", [appID, activityID])
            .first?.optionalString("status").map { $0 == "ended" } ?? true
    }

    /// Every push made for an activity since `since`, oldest first.
    public func pushes(appID: String, activityID: String, since: Date) throws -> [PushHistoryItem] {
        try query(
            """
            SELECT id, device_id, token_kind, event, status, environment, environment_switched, apns_status, reason,
                apns_id, apns_unique_id, attempts, created_at, updated_at, sent_at
            FROM pushes WHERE app_id = ? AND activity_id = ? AND created_at >= ? ORDER BY id
            """, [appID, activityID, since.unixMilliseconds]
        ).map { row in
            let stored = try row.string("status")
            return PushHistoryItem(
                id: try row.int64("id"), deviceID: try row.string("device_id"),
                tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self),
                event: try row.enumValue("event", as: PushEvent.self),
                status: stored == "sending" ? .queued : try row.enumValue("status", as: PushStatus.self),
                environment: try row.enumValue("environment", as: APNsEnvironment.self),
                environmentSwitched: try row.int64("environment_switched") != 0,
                apnsStatus: row.optionalInt64("apns_status").map(Int.init), reason: row.optionalString("reason"),
                apnsID: try row.string("apns_id"), apnsUniqueID: row.optionalString("apns_unique_id"),
                attempts: Int(try row.int64("attempts")), createdAt: try row.date("created_at"),
                updatedAt: try row.date("updated_at"), sentAt: row.optionalDate("sent_at"))
        }
    }

    /// Puts pushes left in flight by a stopped process back in the queue, to be sent
    /// again with the same `apns-id`. Answers how many.
    @discardableResult
    public func requeueInFlight(_ policy: InFlightPolicy, now: Date) throws -> Int {
        switch policy {
        case .requeueAll: break
        }
        return try run(
            "UPDATE pushes SET status = 'queued', next_attempt_at = ?, updated_at = ? WHERE status = 'sending'",
            [now.unixMilliseconds, now.unixMilliseconds])
    }

    /// Takes up to `limit` pushes that are due, oldest first, and marks them in
    /// flight, in one statement. `sends` caches what each send says (shared by all
    /// its pushes): only sends not in it are read, and it is trimmed when large.
    public func claimDuePushes(now: Date, limit: Int, sends: inout [Int64: SendContent]) throws -> [ClaimedPush] {
        let rows = try query(
            """
            UPDATE pushes SET status = 'sending', updated_at = ?1
            WHERE id IN (SELECT id FROM pushes WHERE status = 'queued' AND next_attempt_at <= ?1
                ORDER BY next_attempt_at, id LIMIT ?2)
            RETURNING id, send_id, app_id, activity_id, activity_type, device_id, token_kind, token, environment,
                environment_switched, apns_id, attempts, rounds, created_at
            """, [now.unixMilliseconds, limit])
        guard !rows.isEmpty else { return [] }
        if sends.count > 10_000 { sends.removeAll(keepingCapacity: true) }
        var claimed: [ClaimedPush] = []
        claimed.reserveCapacity(rows.count)
        for row in rows {
            let sendID = try row.int64("send_id")
            let content: SendContent
            if let cached = sends[sendID] {
                content = cached
            } else {
                content = try send(id: sendID)
                sends[sendID] = content
            }
            claimed.append(ClaimedPush(
                id: try row.int64("id"), appID: try row.string("app_id"), activityID: row.optionalString("activity_id"),
                activityType: row.optionalString("activity_type"), deviceID: try row.string("device_id"),
                tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self), token: try row.string("token"),
                environment: try row.enumValue("environment", as: APNsEnvironment.self),
                environmentSwitched: try row.int64("environment_switched") != 0, apnsID: try row.string("apns_id"),
                attempts: Int(try row.int64("attempts")), rounds: Int(try row.int64("rounds")),
                createdAt: try row.date("created_at"), content: content))
        }
        claimed.sort { $0.id < $1.id }
        return claimed
    }

    /// What send `id` says.
    func send(id: Int64) throws -> SendContent {
        guard let row = try query(
            "SELECT event, topic, push_type, priority, expiration, collapse_id, payload FROM sends WHERE id = ?", [id]
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

    /// Records what became of a push.
    public func recordOutcome(pushID: Int64, _ outcome: PushOutcome, now: Date) throws {
        let millis = now.unixMilliseconds
        if outcome.status == .sent && outcome.environment == nil && outcome.nextAttemptAt == nil {
            // The common case, in a statement of its own.
            try run(
                """
                UPDATE pushes SET status = 'sent', attempts = attempts + ?1, rounds = rounds + 1,
                    apns_status = ?2, reason = NULL, apns_unique_id = ?3, updated_at = ?4, sent_at = ?4
                WHERE id = ?5
                """, [outcome.attempts, outcome.apnsStatus, outcome.apnsUniqueID, millis, pushID])
            return
        }
        try run(
            """
            UPDATE pushes SET status = ?, attempts = attempts + ?, rounds = rounds + 1, apns_status = coalesce(?, apns_status),
                reason = ?, apns_unique_id = coalesce(?, apns_unique_id), updated_at = ?,
                next_attempt_at = coalesce(?, next_attempt_at),
                environment_switched = environment_switched OR (? IS NOT NULL AND ? != environment),
                environment = coalesce(?, environment),
                sent_at = CASE WHEN ? = 'sent' THEN ? ELSE sent_at END
            WHERE id = ?
            """,
            [outcome.status.rawValue, outcome.attempts, outcome.apnsStatus, outcome.reason, outcome.apnsUniqueID,
             millis, outcome.nextAttemptAt?.unixMilliseconds, outcome.environment?.rawValue,
             outcome.environment?.rawValue, outcome.environment?.rawValue, outcome.status.rawValue, millis, pushID])
    }

    /// The earliest time a queued push is due, if any is queued.
    public func nextDueTime() throws -> Date? {
        try query("SELECT min(next_attempt_at) AS due FROM pushes WHERE status = 'queued'").first?.optionalDate("due")
    }

    /// Pushes waiting to be sent or in flight. Two counts, so that each reads its
    /// partial index rather than the whole table.
    public func queueDepth() throws -> Int {
        Int(try query(
            """
            SELECT (SELECT count(*) FROM pushes WHERE status = 'queued')
                + (SELECT count(*) FROM pushes WHERE status = 'sending') AS n
            """).first?.int64("n") ?? 0)
    }

    // MARK: - Dead tokens

    /// Deletes a push-to-start token APNs refused, unless it was registered again
    /// after `refusedAt`. Answers whether it was deleted.
    public func deleteRefusedStartToken(appID: String, token: String, refusedAt: Date?) throws -> Bool {
        try run(
            "DELETE FROM start_tokens WHERE app_id = ? AND token = ? AND (?3 IS NULL OR registered_at <= ?3)",
            [appID, token, refusedAt?.unixMilliseconds]) > 0
    }

    /// Ends the copy of an activity whose update token APNs refused, unless the token
    /// was registered again after `refusedAt`. Answers whether it ended.
    public func endRefusedInstance(appID: String, activityID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool {
        try run(
            """
            UPDATE activity_instances SET status = 'ended', end_cause = 'token_rejected', ended_at = ?4, updated_at = ?4
            WHERE app_id = ?1 AND activity_id = ?2 AND update_token = ?3 AND status != 'ended'
                AND (?5 IS NULL OR token_registered_at <= ?5)
            """, [appID, activityID, token, now.unixMilliseconds, refusedAt?.unixMilliseconds]) > 0
    }

    /// Marks a device unreachable after APNs refused its device token, unless the
    /// token was registered again after `refusedAt`. Answers whether it was marked.
    public func markDeviceUnreachable(appID: String, token: String, refusedAt: Date?, now: Date) throws -> Bool {
        try run(
            """
            UPDATE devices SET unreachable_at = ?3
            WHERE app_id = ?1 AND apns_token = ?2 AND unreachable_at IS NULL
                AND (?4 IS NULL OR apns_token_registered_at <= ?4)
            """, [appID, token, now.unixMilliseconds, refusedAt?.unixMilliseconds]) > 0
    }

    /// After a push reached `token` only in `environment`, records that environment
    /// wherever the token is registered.
    public func correctEnvironment(appID: String, token: String, kind: PushTokenKind, environment: APNsEnvironment) throws {
        switch kind {
        case .device:
            try run("UPDATE devices SET environment = ? WHERE app_id = ? AND apns_token = ?", [environment.rawValue, appID, token])
        case .pushToStart:
            try run("UPDATE start_tokens SET environment = ? WHERE app_id = ? AND token = ?", [environment.rawValue, appID, token])
        case .liveActivityUpdate:
            try run(
                "UPDATE activity_instances SET environment = ? WHERE app_id = ? AND update_token = ?",
                [environment.rawValue, appID, token])
        }
    }
}
