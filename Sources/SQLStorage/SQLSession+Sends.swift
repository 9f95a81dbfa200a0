public import Foundation
public import IsletCore
public import Storage

// A send to an activity's copies is one row of `sends`: its payload, its audience
// (the copies it reaches, in device order), how far its windows were handed out
// (`claimed_through`) and what they settled (`sent`, `exceptions`). The worker
// claims a window of the audience at a time (a row of `send_windows`, under its
// node's lease), sends it, and settles it in one write. A device gets a row of
// `pushes` only when its story differs from the send's: a failure, a retry, a
// switched environment, a downgrade (queued as a row from the start), a tap.
extension SQLSession {
    // MARK: - The audience

    /// The copies a send reaches, as a query's FROM and WHERE over `i` (and `d`, an
    /// Android device, or `s`, a start token): the copies that held a token, or an
    /// Android device's own token, when the send was made, and had not ended before
    /// it; a start's, the copies it made (with their devices' push-to-start tokens
    /// of its type, or FCM's). `after` and `through` bound the device ids; none of
    /// them has a row of this send.
    static func audience(_ send: OpenSend, after: String?, through: String?) -> SQL {
        let (appID, activityID, createdAt) = (send.appID, send.activityID, send.createdAt)
        var sql: SQL
        switch (send.kind, send.event) {
        case (.fcm, _):
            sql = """
                SELECT i.device_id, d.fcm_token AS token, d.environment, i.status,
                    (d.unreachable_at IS NOT NULL) AS unreachable
                FROM activity_instances i JOIN devices d ON d.app_id = i.app_id AND d.device_id = i.device_id
                WHERE i.app_id = \(appID) AND i.activity_id = \(activityID) AND i.update_token IS NULL
                    AND d.platform = 'android' AND d.fcm_token IS NOT NULL
                    AND (d.unreachable_at IS NULL OR d.unreachable_at >= \(createdAt))
                """
            if send.event == .start { sql.append(" AND i.start_send_id = \(send.id)") }
        case (.pushToStart, _):
            // A start token deleted since (APNs refused it, or the device took it
            // back) leaves its copy unreachable.
            sql = """
                SELECT i.device_id, coalesce(s.token, '') AS token, coalesce(s.environment, i.environment) AS environment,
                    i.status, (s.token IS NULL) AS unreachable
                FROM activity_instances i LEFT JOIN start_tokens s ON s.app_id = i.app_id AND s.device_id = i.device_id
                    AND s.activity_type = \(send.activityType ?? "")
                WHERE i.app_id = \(appID) AND i.activity_id = \(activityID) AND i.start_send_id = \(send.id)
                """
        default:
            sql = """
                SELECT i.device_id, i.update_token AS token, i.environment, i.status, (i.update_token IS NULL) AS unreachable
                FROM activity_instances i
                WHERE i.app_id = \(appID) AND i.activity_id = \(activityID) AND i.update_token IS NOT NULL
                """
        }
        // An end is queued before its transaction ends the copies, at the same
        // moment: it reaches those ended at its time. A copy ended at the moment
        // of an update is in its audience (the update is told to it as dropped).
        let endedSince: SQL = "i.ended_at >= \(createdAt)"
        sql.append(
            """
             AND i.created_at <= \(createdAt) AND (i.status != 'ended' OR \(sql: endedSince))
             AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = \(send.id) AND p.device_id = i.device_id)
            """)
        if let after { sql.append(" AND i.device_id > \(after)") }
        if let through { sql.append(" AND i.device_id <= \(through)") }
        return sql
    }

    /// The condition that send `s` has no earlier send to the same activity's
    /// copies by the same transport (APNs, or FCM) still unfinished: its windows go
    /// once the earlier one's have all been answered, so that no push of a copy
    /// overtakes an earlier one to it (an end its start, say, which would leave the
    /// phone showing an activity that is over).
    static let inOrder: SQL = """
        NOT EXISTS (SELECT 1 FROM sends o WHERE o.app_id = s.app_id AND o.activity_id = s.activity_id
            AND o.audience = 'copies' AND o.finished_at IS NULL AND o.id < s.id
            AND (o.token_kind = 'fcm') = (s.token_kind = 'fcm'))
        """

    /// The condition that a send (of table alias `alias`) is queued, written so
    /// that the open sends' partial indexes (sends_open, sends_open_by_activity)
    /// serve it: SQLite uses a partial index only for a query that repeats its
    /// condition, and the sends of the whole history are many.
    static func queued(_ alias: String?) -> SQL {
        let column = alias.map { "\($0).state" } ?? "state"
        return "\(raw: column) IN ('queued', 'claimed') AND \(raw: column) = 'queued'"
    }

    /// What the worker needs of an open send.
    struct OpenSend {
        var id: Int64
        var appID: String
        var activityID: String
        var activityType: String?
        var event: PushEvent
        var kind: PushTokenKind
        var createdAt: Int64
        var claimedThrough: String?
    }

    static let openSendColumns: SQL = "id, app_id, activity_id, activity_type, event, token_kind, created_at, claimed_through"

    static func openSend(_ row: SQLRow) throws -> OpenSend {
        OpenSend(
            id: try row.int64("id"), appID: try row.string("app_id"), activityID: try row.string("activity_id"),
            activityType: row.optionalString("activity_type"), event: try row.enumValue("event", as: PushEvent.self),
            kind: try row.enumValue("token_kind", as: PushTokenKind.self), createdAt: try row.int64("created_at"),
            claimedThrough: row.optionalString("claimed_through"))
    }

    /// Queues send `sendID` to the activity's copies that take `kind` (their own
    /// update tokens, or FCM for the Android ones; a start's, the copies it made,
    /// by their push-to-start tokens or FCM), by windows: no row per device. A copy
    /// that already has a row of the send (a downgraded or deferred one) goes by
    /// it. Answers how many copies the windows reach.
    @discardableResult
    public func queueToCopies(
        sendID: Int64, appID: String, activityID: String, activityType: String?, kind: PushTokenKind, now: Date
    ) throws -> Int {
        let millis = now.unixMilliseconds
        guard let send = try query(
            """
            UPDATE sends SET audience = 'copies', token_kind = \(kind.rawValue), activity_type = \(activityType)
            WHERE id = \(sendID)
            RETURNING \(sql: Self.openSendColumns)
            """).first.map(Self.openSend)
        else {
            throw StoreError(.corrupt, "send \(sendID) is missing")
        }
        let audience = Self.audience(send, after: nil, through: nil)
        // The copies that take it now: an end's are still on, as its transaction
        // ends them after this.
        let total = Int(
            try query("SELECT count(*) AS n FROM (\(sql: audience)) a WHERE a.status != 'ended' AND NOT a.unreachable")
                .first?.int64("n") ?? 0)
        // A send that reaches no copy is over at once: no worker needs to look at it,
        // and the history's retention may take it like any finished send.
        try run(
            """
            UPDATE sends SET state = \(total > 0 ? "queued" : "completed"), total = \(total), progressed_at = \(millis),
                finished_at = \(total > 0 ? nil : millis)
            WHERE id = \(sendID)
            """)
        if total > 0 { try notifyNodes(.pushesQueued) }
        return total
    }

    // MARK: - Windows

    /// Claims windows of open sends, up to `limit` pushes in all: first the windows
    /// a node handed back or whose lease ran out (sent again with the same
    /// `apns-id`s, less the copies that have rows by now), then new ones past each
    /// send's `claimed_through`, oldest send first, once the earlier sends to its
    /// activity's copies are over (`inOrder`). A copy of the audience that can
    /// no longer take the send (it ended since, or its device became unreachable)
    /// gets a row of its own, dropped.
    func claimWindows(now: Date, limit: Int, lease: PushLease, sends: inout [Int64: SendContent]) throws -> [ClaimedPush] {
        let millis = now.unixMilliseconds
        let skipLocked: SQL = dialect == .postgresql ? " FOR UPDATE SKIP LOCKED" : ""
        var claimed: [ClaimedPush] = []
        while claimed.count < limit {
            guard let row = try query(
                """
                SELECT send_id, through_device, after_device FROM send_windows WHERE claimed_by IS NULL
                ORDER BY send_id, through_device LIMIT 1\(sql: skipLocked)
                """).first
            else { break }
            let window = SendWindow(sendID: try row.int64("send_id"), through: try row.string("through_device"))
            let after = try row.string("after_device")
            guard let send = try query("SELECT \(sql: Self.openSendColumns) FROM sends WHERE id = \(window.sendID)")
                .first.map(Self.openSend)
            else { throw StoreError(.corrupt, "send \(window.sendID) is missing") }
            let pushes = try windowPushes(
                send, after: after.isEmpty ? nil : after, through: window.through, limit: nil, now: now, sends: &sends)
            try run(
                """
                UPDATE send_windows SET claimed_by = \(lease.nodeID), lease_until = \(lease.until.unixMilliseconds),
                    size = \(pushes.count)
                WHERE send_id = \(window.sendID) AND through_device = \(window.through)
                """)
            if pushes.isEmpty {
                try settleWindow(window, WindowTally(size: 0), by: lease.nodeID, now: now)
            }
            claimed += pushes
        }
        while claimed.count < limit {
            guard let send = try query(
                """
                SELECT \(sql: Self.openSendColumns) FROM sends s
                WHERE \(sql: Self.queued("s")) AND s.created_at <= \(millis) AND \(sql: Self.inOrder)
                ORDER BY s.id LIMIT 1\(sql: skipLocked)
                """).first.map(Self.openSend)
            else { break }
            let wanted = limit - claimed.count
            let (pushes, last, read) = try windowPushes(send, wanted: wanted, now: now, sends: &sends)
            if read < wanted {
                try run("UPDATE sends SET state = 'claimed' WHERE id = \(send.id)")
            }
            if let last {
                try run(
                    """
                    INSERT INTO send_windows (send_id, through_device, after_device, size, claimed_by, lease_until)
                    VALUES (\(send.id), \(last), \(send.claimedThrough ?? ""), \(pushes.count), \(lease.nodeID),
                        \(lease.until.unixMilliseconds))
                    """)
                try run("UPDATE sends SET claimed_through = \(last) WHERE id = \(send.id)")
                if pushes.isEmpty {
                    try settleWindow(SendWindow(sendID: send.id, through: last), WindowTally(size: 0), by: lease.nodeID, now: now)
                }
            } else {
                try finishSendIfDone(send.id, now: now)
            }
            claimed += pushes
        }
        return claimed
    }

    /// The next `wanted` copies of `send`'s audience past its `claimed_through`:
    /// the pushes of those that take it, the last device id read, and how many
    /// were read.
    private func windowPushes(
        _ send: OpenSend, wanted: Int, now: Date, sends: inout [Int64: SendContent]
    ) throws -> (pushes: [ClaimedPush], last: String?, read: Int) {
        var last: String?
        var read = 0
        let pushes = try windowPushes(
            send, after: send.claimedThrough, through: nil, limit: wanted, now: now, sends: &sends,
            seen: { deviceID in
                last = deviceID
                read += 1
            })
        return (pushes, last, read)
    }

    /// The pushes of the copies of `send`'s audience after `after` and through
    /// `through`, at most `limit` copies read; each copy read is passed to `seen`.
    /// Copies that can no longer take the send get a dropped row.
    private func windowPushes(
        _ send: OpenSend, after: String?, through: String?, limit: Int?, now: Date, sends: inout [Int64: SendContent],
        seen: (String) -> Void = { _ in }
    ) throws -> [ClaimedPush] {
        var audience = Self.audience(send, after: after, through: through)
        audience.append(" ORDER BY i.device_id")
        if let limit { audience.append(" LIMIT \(limit)") }
        let rows = try query(audience)
        guard !rows.isEmpty else { return [] }
        let content: SendContent
        if let cached = sends[send.id] {
            content = cached
        } else {
            content = try self.send(id: send.id)
            sends[send.id] = content
        }
        let createdAt = Date(unixMilliseconds: send.createdAt)
        var pushes: [ClaimedPush] = []
        pushes.reserveCapacity(rows.count)
        var gone: [(deviceID: String, token: String, environment: String, reason: String)] = []
        for row in rows {
            let deviceID = try row.string("device_id")
            seen(deviceID)
            let status = try row.string("status")
            let token = try row.string("token")
            // An end goes to the copies it ended; an update or a start only to those
            // still on.
            if try row.bool("unreachable") {
                let reason = send.kind == .pushToStart ? "StartTokenRemoved" : "DeviceUnreachable"
                gone.append((deviceID, token, try row.string("environment"), reason))
                continue
            }
            if status == "ended" && send.event != .end {
                gone.append((deviceID, token, try row.string("environment"), "ActivityEnded"))
                continue
            }
            var push = ClaimedPush(
                id: 0, appID: send.appID, activityID: send.activityID, activityType: send.activityType, deviceID: deviceID,
                tokenKind: send.kind, token: token, environment: try row.enumValue("environment", as: APNsEnvironment.self),
                environmentSwitched: false, apnsID: APNsMessageID.derived(sendID: send.id, deviceID: deviceID), attempts: 0,
                rounds: 0, createdAt: createdAt, content: content)
            push.window = SendWindow(sendID: send.id, through: through ?? "")
            pushes.append(push)
        }
        // The window's id is its last device: known once every row was read.
        if through == nil, let last = rows.last {
            let end = try last.string("device_id")
            for index in pushes.indices { pushes[index].window?.through = end }
        }
        let millis = now.unixMilliseconds
        try runEach(gone) { copy in
            """
            INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                environment, apns_id, status, reason, next_attempt_at, created_at, updated_at)
            VALUES (\(send.id), \(send.appID), \(send.activityID), \(send.activityType), \(send.event.rawValue),
                \(copy.deviceID), \(send.kind.rawValue), \(copy.token), \(copy.environment),
                \(APNsMessageID.derived(sendID: send.id, deviceID: copy.deviceID)), 'dropped', \(copy.reason),
                \(millis), \(send.createdAt), \(millis))
            """
        }
        if !gone.isEmpty {
            try run("UPDATE sends SET exceptions = exceptions + \(gone.count) WHERE id = \(send.id)")
        }
        return pushes
    }

    /// Records the outcome of a window's push that is not the send's ordinary one
    /// (a failure, a retry, a switched environment) as a row of its own, while node
    /// `nodeID` still holds the window. Answers whether it did. A retry's row is
    /// queued, and goes on as any queued push.
    @discardableResult
    public func recordWindowOutcome(_ push: ClaimedPush, _ outcome: PushOutcome, by nodeID: String, now: Date) throws -> Bool {
        guard let window = push.window, try holdsWindow(window, nodeID: nodeID) else { return false }
        let millis = now.unixMilliseconds
        let environment = outcome.environment ?? push.environment
        try run(
            """
            INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                environment, environment_switched, apns_id, status, attempts, rounds, apns_status, reason, service_message_id,
                next_attempt_at, created_at, updated_at, sent_at, priority_downgraded)
            VALUES (\(window.sendID), \(push.appID), \(push.activityID), \(push.activityType), \(push.content.event.rawValue),
                \(push.deviceID), \(push.tokenKind.rawValue), \(push.token), \(environment.rawValue),
                \(environment != push.environment), \(push.apnsID), \(outcome.status.rawValue), \(outcome.attempts),
                \(outcome.attempts > 0 ? 1 : 0), \(outcome.apnsStatus), \(outcome.reason), \(outcome.serviceMessageID),
                \(outcome.nextAttemptAt?.unixMilliseconds ?? millis), \(push.createdAt.unixMilliseconds), \(millis),
                \(outcome.status == .sent ? millis : nil), \(false))
            """)
        if outcome.status == .queued { try notifyNodes(.pushesQueued) }
        return true
    }

    private func holdsWindow(_ window: SendWindow, nodeID: String) throws -> Bool {
        try !query(
            """
            SELECT 1 AS held FROM send_windows
            WHERE send_id = \(window.sendID) AND through_device = \(window.through) AND claimed_by = \(nodeID)
            """
        ).isEmpty
    }

    /// Settles a window every push of which was answered, while node `nodeID` still
    /// holds it: the window goes, and its send counts what it sent; a send whose
    /// windows are all settled is finished (`send.completed`). Answers whether the
    /// node held it.
    @discardableResult
    public func settleWindow(_ window: SendWindow, _ tally: WindowTally, by nodeID: String, now: Date) throws -> Bool {
        let removed = try run(
            """
            DELETE FROM send_windows
            WHERE send_id = \(window.sendID) AND through_device = \(window.through) AND claimed_by = \(nodeID)
            """)
        guard removed > 0 else { return false }
        try run(
            """
            UPDATE sends SET sent = sent + \(tally.sent), exceptions = exceptions + \(tally.exceptions),
                progressed_at = \(now.unixMilliseconds)
            WHERE id = \(window.sendID)
            """)
        try finishSendIfDone(window.sendID, now: now)
        return true
    }

    /// Finishes a send whose windows were all handed out and settled (or that was
    /// dropped and has none in flight), with its `send.completed` event.
    func finishSendIfDone(_ sendID: Int64, now: Date) throws {
        let millis = now.unixMilliseconds
        guard let row = try query(
            """
            UPDATE sends SET state = CASE WHEN state = 'claimed' THEN 'completed' ELSE state END, finished_at = \(millis)
            WHERE id = \(sendID) AND finished_at IS NULL AND state IN ('claimed', 'superseded', 'dropped')
                AND NOT EXISTS (SELECT 1 FROM send_windows w WHERE w.send_id = \(sendID))
            RETURNING id, app_id, activity_id, event, token_kind, state, drop_reason, total, sent, exceptions, created_at,
                claimed_through
            """).first
        else { return }
        try appendEvents([try sendCompleted(row, now: now)])
        // A later send to the activity's copies that waited for this one may go.
        if try !query(
            """
            SELECT 1 AS waiting FROM sends WHERE app_id = \(try row.string("app_id"))
                AND activity_id = \(row.optionalString("activity_id")) AND \(sql: Self.queued(nil)) AND id > \(sendID)
            LIMIT 1
            """
        ).isEmpty {
            try notifyNodes(.pushesQueued)
        }
    }

    /// `send.completed`, with what the send came to.
    private func sendCompleted(_ row: SQLRow, now: Date) throws -> NewEvent {
        let sendID = try row.int64("id")
        let appID = try row.string("app_id")
        let activityID = row.optionalString("activity_id")
        var counts: [String: Int64] = [:]
        for status in try query(
            "SELECT status, count(*) AS n FROM pushes WHERE send_id = \(sendID) GROUP BY status")
        {
            counts[try status.string("status")] = try status.int64("n")
        }
        let state = try row.string("state")
        let total = try row.int64("total")
        let plain = try row.int64("sent")
        let withRows = counts.values.reduce(0, +)
        var data: [String: JSONValue] = [
            "send_id": .integer(sendID), "event": .string(try row.string("event")),
            "token_kind": .string(try row.string("token_kind")), "status": .string(state),
            "targets": .integer(total), "sent": .integer(plain + (counts["sent"] ?? 0)),
            "failed": .integer(counts["failed"] ?? 0), "retrying": .integer(counts["queued"] ?? 0),
            "dropped": .integer(max(0, total - plain - withRows) + (counts["dropped"] ?? 0)),
            "created_at": .string(RFC3339.string(try row.date("created_at"))),
        ]
        if let activityID { data["activity_id"] = .string(activityID) }
        if let reason = row.optionalString("drop_reason") { data["reason"] = .string(reason) }
        return NewEvent(appID: appID, type: .sendCompleted, activityID: activityID, occurredAt: now, data: .object(data))
    }

    /// Stops the open sends of an activity whose event is one of `events`: the
    /// copies their windows had not reached are dropped (`reason`); windows in
    /// flight finish. Answers how many pushes were dropped.
    @discardableResult
    public func dropOpenSends(appID: String, activityID: String, events: [PushEvent], reason: String, now: Date) throws -> Int {
        let stopped = try query(
            """
            UPDATE sends SET state = \(reason == "Superseded" ? "superseded" : "dropped"), drop_reason = \(reason)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND state IN ('queued', 'claimed')
                AND event \(in: events.map(\.rawValue))
            RETURNING \(sql: Self.openSendColumns)
            """
        ).map(Self.openSend)
        var dropped = 0
        for send in stopped {
            let rest = Self.audience(send, after: send.claimedThrough, through: nil)
            dropped += Int(try query("SELECT count(*) AS n FROM (\(sql: rest)) a").first?.int64("n") ?? 0)
            try finishSendIfDone(send.id, now: now)
        }
        return dropped
    }

    /// Puts the windows left in flight back, by `policy`, to be claimed again.
    /// Answers how many pushes they hold.
    func requeueWindows(_ policy: InFlightPolicy, now: Date) throws -> Int {
        var which: SQL = "claimed_by IS NOT NULL"
        switch policy {
        case .requeueAll: break
        case .heldBy(let nodeID): which.append(" AND claimed_by = \(nodeID)")
        case .leaseExpired: which.append(" AND lease_until < \(now.unixMilliseconds)")
        }
        let rows = try query(
            "UPDATE send_windows SET claimed_by = NULL, lease_until = NULL WHERE \(sql: which) RETURNING size")
        return try rows.reduce(0) { $0 + Int(try $1.int64("size")) }
    }

    // MARK: - The history

    /// The pushes of an activity's sends by windows since `since` that have no row:
    /// each copy of a send's audience, sent when its window settled, queued while
    /// it waits or is in flight, dropped when its send stopped before reaching it.
    func windowHistory(appID: String, activityID: String, since: Date) throws -> [PushHistoryItem] {
        let sends = try query(
            """
            SELECT \(sql: Self.openSendColumns), state, drop_reason, progressed_at FROM sends
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND audience = 'copies'
                AND created_at >= \(since.unixMilliseconds)
            ORDER BY id
            """)
        var items: [PushHistoryItem] = []
        for row in sends {
            let send = try Self.openSend(row)
            let state = try row.string("state")
            let reason = row.optionalString("drop_reason")
            let created = Date(unixMilliseconds: send.createdAt)
            let progressed = row.optionalDate("progressed_at") ?? created
            let stopped = state == "superseded" || state == "dropped"
            let audience = Self.audience(send, after: nil, through: nil)
            // Reached: within what was handed out and in no window still in flight.
            let handed: SQL = send.claimedThrough.map { "a.device_id <= \($0)" } ?? "1 = 0"
            let copies = try query(
                """
                SELECT a.device_id, a.environment, (\(sql: handed)) AS handed,
                    EXISTS (SELECT 1 FROM send_windows w WHERE w.send_id = \(send.id)
                        AND w.through_device >= a.device_id AND w.after_device < a.device_id) AS in_window
                FROM (\(sql: audience)) a ORDER BY a.device_id
                """)
            for copy in copies {
                let inWindow = try copy.bool("in_window")
                let reached = try copy.bool("handed") && !inWindow
                let status: PushStatus = reached ? .sent : stopped && !inWindow ? .dropped : .queued
                let deviceID = try copy.string("device_id")
                var item = PushHistoryItem(
                    id: 0, deviceID: deviceID, tokenKind: send.kind, event: send.event, status: status,
                    environment: try copy.enumValue("environment", as: APNsEnvironment.self), environmentSwitched: false,
                    apnsStatus: reached ? 200 : nil, reason: status == .dropped ? reason : nil,
                    apnsID: APNsMessageID.derived(sendID: send.id, deviceID: deviceID), serviceMessageID: nil,
                    attempts: reached ? 1 : 0, createdAt: created, updatedAt: reached || stopped ? progressed : created,
                    sentAt: reached ? progressed : nil)
                item.sendID = send.id
                items.append(item)
            }
        }
        return items
    }

    /// Gives a push of a window that reached `deviceID` a row of its own (sent), to
    /// count a tap on it: answers the row's id, or nil when send `sendID` is not
    /// the activity's, never reached the device, or reaches it later.
    func materializeWindowPush(appID: String, activityID: String, deviceID: String, sendID: Int64) throws -> Int64? {
        guard let row = try query(
            """
            SELECT \(sql: Self.openSendColumns), progressed_at FROM sends
            WHERE id = \(sendID) AND app_id = \(appID) AND activity_id = \(activityID) AND audience = 'copies'
            """).first
        else { return nil }
        let send = try Self.openSend(row)
        guard let through = send.claimedThrough else { return nil }
        let audience = Self.audience(send, after: nil, through: through)
        guard let copy = try query(
            """
            SELECT a.device_id, a.token, a.environment FROM (\(sql: audience)) a
            WHERE a.device_id = \(deviceID) AND NOT EXISTS (SELECT 1 FROM send_windows w WHERE w.send_id = \(send.id)
                AND w.after_device < a.device_id AND a.device_id <= w.through_device)
            """).first
        else { return nil }
        let sentAt = row.optionalInt64("progressed_at") ?? send.createdAt
        guard let inserted = try query(
            """
            INSERT INTO pushes (send_id, app_id, activity_id, activity_type, event, device_id, token_kind, token,
                environment, apns_id, status, attempts, rounds, apns_status, next_attempt_at, created_at, updated_at, sent_at)
            VALUES (\(send.id), \(appID), \(activityID), \(send.activityType), \(send.event.rawValue), \(deviceID),
                \(send.kind.rawValue), \(try copy.string("token")), \(try copy.string("environment")),
                \(APNsMessageID.derived(sendID: send.id, deviceID: deviceID)), 'sent', 1, 1, 200, \(sentAt),
                \(send.createdAt), \(sentAt), \(sentAt))
            RETURNING id
            """).first
        else { return nil }
        try run("UPDATE sends SET sent = sent - 1, exceptions = exceptions + 1 WHERE id = \(send.id)")
        return try inserted.int64("id")
    }

    /// The newest send by windows of the activity that reached `deviceID` by
    /// `sentBy`, and when: what a tap that names no push counts on.
    func newestWindowSend(appID: String, activityID: String, deviceID: String, sentBy: Date) throws -> (sendID: Int64, sentAt: Date)? {
        let sends = try query(
            """
            SELECT \(sql: Self.openSendColumns), progressed_at FROM sends
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND audience = 'copies' AND claimed_through IS NOT NULL
                AND created_at <= \(sentBy.unixMilliseconds) AND claimed_through >= \(deviceID)
            ORDER BY id DESC LIMIT 8
            """)
        for row in sends {
            let send = try Self.openSend(row)
            let audience = Self.audience(send, after: nil, through: send.claimedThrough)
            let reached = try !query(
                """
                SELECT 1 AS reached FROM (\(sql: audience)) a WHERE a.device_id = \(deviceID)
                    AND NOT EXISTS (SELECT 1 FROM send_windows w WHERE w.send_id = \(send.id)
                        AND w.after_device < a.device_id AND a.device_id <= w.through_device)
                """
            ).isEmpty
            if reached { return (send.id, row.optionalDate("progressed_at") ?? Date(unixMilliseconds: send.createdAt)) }
        }
        return nil
    }
}
