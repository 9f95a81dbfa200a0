public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    private static let webhookColumns: SQL = """
        webhook_id, app_id, url, events, description, secret, previous_secret, previous_secret_until, enabled,
        disabled_reason, failing_since, cursor, created_at, updated_at
        """

    private static let deliveryColumns: SQL = """
        id, webhook_id, app_id, event_seq, event_type, ordering_key, status, attempts, next_attempt_at, response_status,
        error, duration_ms, created_at, last_attempt_at
        """

    /// Adds a webhook.
    public func insertWebhook(_ webhook: WebhookRecord) throws {
        try recoveringFromConflict {
            try run(
                """
                INSERT INTO webhooks (webhook_id, app_id, url, events, description, secret, previous_secret,
                    previous_secret_until, enabled, disabled_reason, failing_since, cursor, created_at, updated_at)
                VALUES (\(webhook.webhookID), \(webhook.appID), \(webhook.url), \(Self.eventsText(webhook.events)),
                    \(webhook.description), \(try sealed(webhook.secret)), \(try sealed(webhook.previousSecret)),
                    \(webhook.previousSecretUntil?.unixMilliseconds), \(webhook.enabled), \(webhook.disabledReason),
                    \(webhook.failingSince?.unixMilliseconds), \(webhook.cursor), \(webhook.createdAt.unixMilliseconds),
                    \(webhook.updatedAt.unixMilliseconds))
                """)
        }
    }

    /// The webhook `webhookID` of `appID`.
    public func webhook(appID: String, webhookID: String) throws -> WebhookRecord? {
        try query(
            "SELECT \(sql: Self.webhookColumns) FROM webhooks WHERE app_id = \(appID) AND webhook_id = \(webhookID)"
        ).first.map(webhookRecord)
    }

    /// The webhooks of `appID`, oldest first.
    public func webhooks(appID: String) throws -> [WebhookRecord] {
        try query(
            "SELECT \(sql: Self.webhookColumns) FROM webhooks WHERE app_id = \(appID) ORDER BY created_at, webhook_id"
        ).map(webhookRecord)
    }

    /// A page of the webhooks of `appID`, oldest first, after `after`.
    public func webhooks(appID: String, after: WebhookCursor?, limit: Int) throws -> [WebhookRecord] {
        var sql: SQL = "SELECT \(sql: Self.webhookColumns) FROM webhooks WHERE app_id = \(appID)"
        if let after {
            let createdAt = after.createdAt.unixMilliseconds
            sql.append(" AND (created_at > \(createdAt) OR (created_at = \(createdAt) AND webhook_id > \(after.webhookID)))")
        }
        sql.append(" ORDER BY created_at, webhook_id LIMIT \(limit)")
        return try query(sql).map(webhookRecord)
    }

    /// How many webhooks `appID` has, its app's row locked until the transaction
    /// ends (`FOR NO KEY UPDATE` on PostgreSQL, which rows referring to the app do
    /// not wait for; SQLite has one writer, whose transaction holds the whole file).
    public func lockedWebhookCount(appID: String) throws -> Int {
        if dialect == .postgresql {
            _ = try query("SELECT id FROM apps WHERE id = \(appID) FOR NO KEY UPDATE")
        }
        let rows = try query("SELECT count(*) AS n FROM webhooks WHERE app_id = \(appID)")
        return Int(try rows.first?.int64("n") ?? 0)
    }

    /// Replaces a webhook's settings.
    public func updateWebhook(_ webhook: WebhookRecord) throws {
        try run(
            """
            UPDATE webhooks SET url = \(webhook.url), events = \(Self.eventsText(webhook.events)),
                description = \(webhook.description), secret = \(try sealed(webhook.secret)),
                previous_secret = \(try sealed(webhook.previousSecret)),
                previous_secret_until = \(webhook.previousSecretUntil?.unixMilliseconds), enabled = \(webhook.enabled),
                disabled_reason = \(webhook.disabledReason), failing_since = \(webhook.failingSince?.unixMilliseconds),
                updated_at = \(webhook.updatedAt.unixMilliseconds)
            WHERE app_id = \(webhook.appID) AND webhook_id = \(webhook.webhookID)
            """)
    }

    /// Stops an enabled webhook's failure clock after a success.
    @discardableResult
    public func clearWebhookFailure(appID: String, webhookID: String, now: Date) throws -> Bool {
        try run(
            """
            UPDATE webhooks SET failing_since = NULL, updated_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND webhook_id = \(webhookID) AND enabled = \(true) AND failing_since IS NOT NULL
            """) > 0
    }

    /// Removes a webhook and its deliveries.
    public func deleteWebhook(appID: String, webhookID: String) throws -> Bool {
        let removed = try run("DELETE FROM webhooks WHERE app_id = \(appID) AND webhook_id = \(webhookID)")
        guard removed > 0 else { return false }
        try run("DELETE FROM webhook_deliveries WHERE webhook_id = \(webhookID)")
        return true
    }

    /// Enabled webhooks whose cursor is behind `sequence`.
    public func webhooksBehind(_ sequence: Int64) throws -> [WebhookRecord] {
        try query(
            """
            SELECT \(sql: Self.webhookColumns) FROM webhooks WHERE enabled = \(true) AND cursor < \(sequence)
            ORDER BY created_at, webhook_id
            """
        ).map(webhookRecord)
    }

    /// Whether an enabled webhook of `appID` takes events of `type`.
    public func webhookTakes(appID: String, type: EventType) throws -> Bool {
        for row in try query("SELECT events FROM webhooks WHERE app_id = \(appID) AND enabled = \(true)") {
            guard case .array(let patterns)? = try row.json("events") else { continue }
            if patterns.contains(where: { $0.stringValue.flatMap(EventPattern.init)?.matches(type.rawValue) ?? false }) {
                return true
            }
        }
        return false
    }

    /// Adds one pending delivery per event to a webhook and moves its cursor.
    public func addDeliveries(webhookID: String, appID: String, events: [EventRecord], cursor: Int64, now: Date) throws {
        let millis = now.unixMilliseconds
        if dialect == .postgresql {
            try forEachChunk(of: events) { chunk in
                try run(
                    """
                    INSERT INTO webhook_deliveries (webhook_id, app_id, event_seq, event_type, ordering_key, status,
                        next_attempt_at, created_at)
                    SELECT \(webhookID)::text, \(appID)::text, t.seq, t.type, t.key, 'pending', \(millis)::int8,
                        \(millis)::int8
                    FROM unnest(\(SQLValue.array(chunk.map { .integer($0.sequence) }))::int8[],
                        \(SQLValue.array(chunk.map { .text($0.type) }))::text[],
                        \(SQLValue.array(chunk.map { $0.activityID.map(SQLValue.text) ?? .null }))::text[])
                        WITH ORDINALITY AS t(seq, type, key, n)
                    ORDER BY t.n
                    """)
            }
        } else {
            try runEach(events) { event in
                """
                INSERT INTO webhook_deliveries (webhook_id, app_id, event_seq, event_type, ordering_key, status,
                    next_attempt_at, created_at)
                VALUES (\(webhookID), \(appID), \(event.sequence), \(event.type), \(event.activityID), 'pending',
                    \(millis), \(millis))
                """
            }
        }
        try run("UPDATE webhooks SET cursor = \(cursor) WHERE webhook_id = \(webhookID) AND cursor < \(cursor)")
    }

    /// Takes due deliveries, each the oldest unfinished one of its key at its webhook.
    public func claimDueDeliveries(now: Date, limit: Int, nodeID: String, leaseUntil: Date) throws -> [ClaimedWebhookDelivery] {
        let millis = now.unixMilliseconds
        // Deliveries left delivering by a node whose lease ran out are due again.
        try run(
            """
            UPDATE webhook_deliveries SET status = 'pending', claimed_by = NULL, lease_until = NULL
            WHERE status = 'delivering' AND lease_until < \(millis)
            """)
        // In order of creation, so that a chain's earlier deliveries come first: a
        // delivery is taken unless an earlier one of its key is being sent or waits
        // for a retry (the callers claim one transaction at a time, across nodes).
        // The subquery names the open statuses so that it searches the open
        // deliveries' index (webhook_deliveries_open) by key, not every delivery
        // the webhook ever had.
        let due = try query(
            """
            SELECT d.id FROM webhook_deliveries d
            WHERE d.status = 'pending' AND d.next_attempt_at <= \(millis)
                AND (d.ordering_key IS NULL OR NOT EXISTS (
                    SELECT 1 FROM webhook_deliveries e
                    WHERE e.webhook_id = d.webhook_id AND e.ordering_key = d.ordering_key AND e.id < d.id
                        AND e.status IN ('pending', 'delivering')
                        AND (e.status = 'delivering' OR (e.status = 'pending' AND e.next_attempt_at > \(millis)))))
            ORDER BY d.id LIMIT \(limit)
            """
        ).map { try $0.int64("id") }
        guard !due.isEmpty else { return [] }
        try run(
            """
            UPDATE webhook_deliveries SET status = 'delivering', claimed_by = \(nodeID),
                lease_until = \(leaseUntil.unixMilliseconds)
            WHERE id \(in: due)
            """)
        let rows = try query(
            """
            SELECT d.id, d.webhook_id, d.app_id, d.event_seq, d.event_type, d.ordering_key, d.status, d.attempts,
                d.next_attempt_at, d.response_status, d.error, d.duration_ms, d.created_at, d.last_attempt_at,
                w.url, w.secret, w.previous_secret, w.previous_secret_until,
                v.seq, v.type, v.activity_id, v.occurred_at, v.data
            FROM webhook_deliveries d
            JOIN webhooks w ON w.webhook_id = d.webhook_id
            JOIN events v ON v.seq = d.event_seq
            WHERE d.id \(in: due)
            ORDER BY d.id
            """)
        // A claim's deliveries mostly share a few webhooks: each sealed secret is
        // opened once.
        var openedSecrets: [String: String] = [:]
        func secret(_ sealed: String, column: String) throws -> String {
            if let known = openedSecrets[sealed] { return known }
            let secret = try opened(sealed, column: column)
            openedSecrets[sealed] = secret
            return secret
        }
        return try rows.map { row in
            var secrets = [try secret(try row.string("secret"), column: "secret")]
            if let sealed = row.optionalString("previous_secret"), let until = row.optionalDate("previous_secret_until"),
                until > now
            {
                secrets.append(try secret(sealed, column: "previous_secret"))
            }
            let delivery = try Self.deliveryRecord(row)
            let event = EventRecord(
                sequence: try row.int64("seq"), appID: delivery.appID, type: try row.string("type"),
                activityID: row.optionalString("activity_id"), occurredAt: try row.date("occurred_at"),
                dataText: row.optionalString("data") ?? "null")
            return ClaimedWebhookDelivery(delivery: delivery, url: try row.string("url"), secrets: secrets, event: event)
        }
    }

    /// Records an attempt of a delivery this node claimed.
    @discardableResult
    public func recordAttempt(deliverySequence: Int64, _ attempt: WebhookAttempt, nodeID: String, now: Date) throws -> Bool {
        try run(
            """
            UPDATE webhook_deliveries SET status = \(attempt.status.rawValue), attempts = attempts + 1,
                next_attempt_at = \(attempt.nextAttemptAt?.unixMilliseconds), response_status = \(attempt.responseStatus),
                error = \(attempt.error), duration_ms = \(attempt.durationMilliseconds), claimed_by = NULL,
                lease_until = NULL, last_attempt_at = \(now.unixMilliseconds)
            WHERE id = \(deliverySequence) AND status = 'delivering' AND claimed_by = \(nodeID)
            """) > 0
    }

    /// Hands back claimed deliveries that were not tried.
    public func releaseDeliveries(_ sequences: [Int64], nodeID: String) throws {
        guard !sequences.isEmpty else { return }
        try run(
            """
            UPDATE webhook_deliveries SET status = 'pending', claimed_by = NULL, lease_until = NULL
            WHERE id \(in: sequences) AND status = 'delivering' AND claimed_by = \(nodeID)
            """)
    }

    /// Deliveries of a webhook, newest first.
    public func deliveries(appID: String, webhookID: String, before: Int64?, limit: Int) throws -> [WebhookDeliveryRecord] {
        try query(
            """
            SELECT \(sql: Self.deliveryColumns) FROM webhook_deliveries
            WHERE app_id = \(appID) AND webhook_id = \(webhookID) AND id < \(before ?? Int64.max)
            ORDER BY id DESC LIMIT \(limit)
            """
        ).map(Self.deliveryRecord)
    }

    /// One delivery.
    public func delivery(appID: String, webhookID: String, sequence: Int64) throws -> WebhookDeliveryRecord? {
        try query(
            """
            SELECT \(sql: Self.deliveryColumns) FROM webhook_deliveries
            WHERE app_id = \(appID) AND webhook_id = \(webhookID) AND id = \(sequence)
            """
        ).first.map(Self.deliveryRecord)
    }

    /// Queues a delivery again at `now`.
    public func retryDelivery(appID: String, webhookID: String, sequence: Int64, now: Date) throws -> Bool {
        try run(
            """
            UPDATE webhook_deliveries SET status = 'pending', next_attempt_at = \(now.unixMilliseconds)
            WHERE app_id = \(appID) AND webhook_id = \(webhookID) AND id = \(sequence) AND status != 'delivering'
            """) > 0
    }

    /// Fails every unfinished delivery of a webhook.
    @discardableResult
    public func failPendingDeliveries(webhookID: String, reason: String, now: Date) throws -> Int {
        try run(
            """
            UPDATE webhook_deliveries SET status = 'failed', error = \(reason), next_attempt_at = NULL
            WHERE webhook_id = \(webhookID) AND status = 'pending'
            """)
    }

    /// The earliest time a pending delivery is due.
    public func nextDeliveryTime() throws -> Date? {
        try query("SELECT min(next_attempt_at) AS t FROM webhook_deliveries WHERE status = 'pending'")
            .first?.optionalDate("t")
    }

    private static func eventsText(_ events: [String]) -> String {
        JSONValue.array(events.map(JSONValue.string)).jsonText
    }

    private func webhookRecord(_ row: SQLRow) throws -> WebhookRecord {
        let events = (try row.json("events"))?.arrayValue?.compactMap(\.stringValue) ?? []
        return WebhookRecord(
            webhookID: try row.string("webhook_id"), appID: try row.string("app_id"), url: try row.string("url"),
            events: events, description: row.optionalString("description"),
            secret: try opened(try row.string("secret"), column: "secret"),
            previousSecret: try opened(row.optionalString("previous_secret"), column: "previous_secret"),
            previousSecretUntil: row.optionalDate("previous_secret_until"), enabled: try row.bool("enabled"),
            disabledReason: row.optionalString("disabled_reason"), failingSince: row.optionalDate("failing_since"),
            cursor: try row.int64("cursor"), createdAt: try row.date("created_at"), updatedAt: try row.date("updated_at"))
    }

    private static func deliveryRecord(_ row: SQLRow) throws -> WebhookDeliveryRecord {
        WebhookDeliveryRecord(
            sequence: try row.int64("id"), webhookID: try row.string("webhook_id"), appID: try row.string("app_id"),
            eventSequence: try row.int64("event_seq"), eventType: try row.string("event_type"),
            orderingKey: row.optionalString("ordering_key"),
            status: try row.enumValue("status", as: WebhookDeliveryStatus.self), attempts: Int(try row.int64("attempts")),
            nextAttemptAt: row.optionalDate("next_attempt_at"),
            responseStatus: row.optionalInt64("response_status").map { Int($0) }, error: row.optionalString("error"),
            durationMilliseconds: row.optionalInt64("duration_ms").map { Int($0) }, createdAt: try row.date("created_at"),
            lastAttemptAt: row.optionalDate("last_attempt_at"))
    }
}
