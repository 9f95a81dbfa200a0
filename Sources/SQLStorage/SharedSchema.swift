/// The schema's history from version 7 on, written once for both databases: each
/// step in the words both share, with the few where they differ (`Types`) filled in
/// for the dialect. SQLite's history (`IsletSchema`) and PostgreSQL's
/// (`PostgresSchema`) each start with their own first steps (SQLite's 1 to 6,
/// PostgreSQL's 6, which folds them) and continue with these. `SchemaParityTests`
/// migrates both and compares what their catalogs hold.
public enum SharedSchema {
    /// A dialect's words for the types the history uses.
    public struct Types: Sendable {
        /// A whole number (times in Unix milliseconds, counts, ids).
        public let integer: String
        /// A table's own row id, the primary key.
        public let rowID: String
        /// A flag.
        public let boolean: String
        /// A flag's `false`, as a column's default.
        public let `false`: String
        /// Bytes (hashes, payloads).
        public let bytes: String
        /// A floating-point number.
        public let real: String
        /// What follows a table's closing parenthesis (SQLite's type checking).
        public let strict: String
        /// The same, for a table keyed by its primary key alone (SQLite stores it
        /// without a row id).
        public let keyed: String

        /// SQLite's: `INTEGER` for whole numbers and flags, `STRICT` tables.
        public static let sqlite = Types(
            integer: "INTEGER", rowID: "INTEGER PRIMARY KEY", boolean: "INTEGER", false: "0", bytes: "BLOB", real: "REAL",
            strict: " STRICT", keyed: " STRICT, WITHOUT ROWID")
        /// PostgreSQL's: `BIGINT`, `BOOLEAN`, `BYTEA`, `DOUBLE PRECISION`.
        public static let postgresql = Types(
            integer: "BIGINT", rowID: "BIGSERIAL PRIMARY KEY", boolean: "BOOLEAN", false: "false", bytes: "BYTEA",
            real: "DOUBLE PRECISION", strict: "", keyed: "")
    }

    /// Every step from version 7, in order, in `t`'s words.
    public static func migrations(_ t: Types) -> [Migration] {
        [
            Migration(version: 7, name: "schedules and timelines", sql: """
                CREATE TABLE schedules (
                    seq \(t.rowID),
                    schedule_id TEXT NOT NULL UNIQUE,
                    app_id TEXT NOT NULL REFERENCES apps(id),
                    kind TEXT NOT NULL,
                    activity_id TEXT,
                    send_at \(t.integer) NOT NULL,
                    status TEXT NOT NULL,
                    reason TEXT,
                    detail TEXT,
                    targets \(t.integer),
                    command TEXT NOT NULL,
                    created_at \(t.integer) NOT NULL,
                    fired_at \(t.integer),
                    timeline_generation \(t.integer),
                    entry_index \(t.integer)
                )\(t.strict);
                CREATE INDEX schedules_due ON schedules(send_at, seq) WHERE status = 'scheduled';
                CREATE INDEX schedules_by_app ON schedules(app_id, send_at, seq);
                CREATE INDEX schedules_by_activity ON schedules(app_id, activity_id, send_at);
                CREATE TABLE timelines (
                    app_id TEXT NOT NULL REFERENCES apps(id),
                    activity_id TEXT NOT NULL,
                    generation \(t.integer) NOT NULL,
                    end_at \(t.integer),
                    renew \(t.boolean) NOT NULL,
                    renew_at \(t.integer),
                    start_alert TEXT,
                    updated_at \(t.integer) NOT NULL,
                    PRIMARY KEY (app_id, activity_id)
                )\(t.keyed);
                CREATE INDEX timelines_renew_at ON timelines(renew_at) WHERE renew_at IS NOT NULL;
                ALTER TABLE activities ADD COLUMN start_alert TEXT;
                ALTER TABLE activities ADD COLUMN renewed_to TEXT;
                ALTER TABLE activities ADD COLUMN renewed_from TEXT;
                ALTER TABLE activities ADD COLUMN not_renewed TEXT;
                """),
            Migration(version: 8, name: "events and webhooks", sql: """
                CREATE TABLE events (
                    seq \(t.rowID),
                    app_id TEXT NOT NULL,
                    type TEXT NOT NULL,
                    activity_id TEXT,
                    occurred_at \(t.integer) NOT NULL,
                    data TEXT NOT NULL
                )\(t.strict);
                CREATE INDEX events_by_app ON events(app_id, seq);
                CREATE INDEX events_by_time ON events(occurred_at);
                CREATE TABLE webhooks (
                    webhook_id TEXT PRIMARY KEY,
                    app_id TEXT NOT NULL REFERENCES apps(id),
                    url TEXT NOT NULL,
                    events TEXT NOT NULL,
                    description TEXT,
                    secret TEXT NOT NULL,
                    previous_secret TEXT,
                    previous_secret_until \(t.integer),
                    enabled \(t.boolean) NOT NULL,
                    disabled_reason TEXT,
                    failing_since \(t.integer),
                    cursor \(t.integer) NOT NULL,
                    created_at \(t.integer) NOT NULL,
                    updated_at \(t.integer) NOT NULL
                )\(t.keyed);
                CREATE INDEX webhooks_by_app ON webhooks(app_id, created_at);
                CREATE TABLE webhook_deliveries (
                    id \(t.rowID),
                    webhook_id TEXT NOT NULL,
                    app_id TEXT NOT NULL,
                    event_seq \(t.integer) NOT NULL,
                    event_type TEXT NOT NULL,
                    ordering_key TEXT,
                    status TEXT NOT NULL,
                    attempts \(t.integer) NOT NULL DEFAULT 0,
                    next_attempt_at \(t.integer),
                    response_status \(t.integer),
                    error TEXT,
                    duration_ms \(t.integer),
                    claimed_by TEXT,
                    lease_until \(t.integer),
                    created_at \(t.integer) NOT NULL,
                    last_attempt_at \(t.integer)
                )\(t.strict);
                CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, id) WHERE status = 'pending';
                CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(id) WHERE status = 'pending';
                CREATE INDEX webhook_deliveries_open ON webhook_deliveries(webhook_id, ordering_key, id)
                    WHERE status IN ('pending', 'delivering');
                CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
                CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries(event_seq);
                ALTER TABLE activity_instances ADD COLUMN start_unconfirmed_at \(t.integer);
                CREATE INDEX activity_instances_pending ON activity_instances(created_at) WHERE status = 'pending';
                """),
            Migration(version: 9, name: "dashboard sessions", sql: """
                CREATE TABLE dashboard_sessions (
                    token_hash \(t.bytes) PRIMARY KEY,
                    scope TEXT NOT NULL,
                    app_id TEXT,
                    key_hash \(t.bytes),
                    csrf_token TEXT NOT NULL,
                    created_at \(t.integer) NOT NULL,
                    expires_at \(t.integer) NOT NULL
                )\(t.keyed);
                CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
                """),
            // Apps that exist now keep working without secrets ('off'); Islet writes
            // 'required' for every app it creates from this version on.
            Migration(version: 10, name: "device secrets", sql: """
                ALTER TABLE devices ADD COLUMN secret_hash \(t.bytes);
                ALTER TABLE apps ADD COLUMN device_secrets TEXT NOT NULL DEFAULT 'off';
                """),
            // The report of starts no device confirmed looks up each pending copy's start
            // push; without this it read every push of the queue.
            Migration(version: 11, name: "start pushes by device", sql: """
                CREATE INDEX pushes_starts ON pushes(app_id, activity_id, device_id) WHERE event = 'start';
                """),
            // A claim of webhook deliveries first hands back those whose lease ran out;
            // without this it read every delivery ever recorded, on every claim.
            Migration(version: 12, name: "leased webhook deliveries", sql: """
                CREATE INDEX webhook_deliveries_leased ON webhook_deliveries(lease_until) WHERE status = 'delivering';
                """),
            // Taps on an activity, counted on the push they are attributed to: the
            // push named, or the newest one sent to the device for the activity, found
            // by the device's copy; a tap reported again with the same time counts once.
            Migration(version: 13, name: "taps", sql: """
                ALTER TABLE pushes ADD COLUMN taps \(t.integer) NOT NULL DEFAULT 0;
                ALTER TABLE pushes ADD COLUMN first_tapped_at \(t.integer);
                ALTER TABLE pushes ADD COLUMN last_tapped_at \(t.integer);
                CREATE INDEX pushes_by_copy ON pushes(app_id, activity_id, device_id, id) WHERE activity_id IS NOT NULL;
                """),
            // The limits Islet keeps to for the devices and for itself: whether a device
            // allowed frequent updates, an app's own budget and rate limits, a push sent
            // at priority 5 because its copy's priority-10 budget was spent, and a start
            // held back until its device may take another. A copy's priority-10 updates
            // of the last hour are counted by pushes_by_copy (now ordered by time), an
            // activity's by sends_by_activity, and a device's starts by the time each
            // goes (pushes_starts_by_device). rate_buckets holds each app's token
            // buckets where several nodes share them.
            Migration(version: 14, name: "budgets and rate limits", sql: """
                ALTER TABLE devices ADD COLUMN frequent_updates \(t.boolean);
                ALTER TABLE apps ADD COLUMN budget TEXT;
                ALTER TABLE apps ADD COLUMN rate_limits TEXT;
                ALTER TABLE pushes ADD COLUMN priority_downgraded \(t.boolean) NOT NULL DEFAULT \(t.false);
                ALTER TABLE pushes ADD COLUMN deferred_until \(t.integer);
                DROP INDEX pushes_by_copy;
                CREATE INDEX pushes_by_copy ON pushes(app_id, activity_id, device_id, created_at, id)
                    WHERE activity_id IS NOT NULL;
                CREATE INDEX sends_by_activity ON sends(app_id, activity_id, created_at) WHERE activity_id IS NOT NULL;
                CREATE INDEX pushes_starts_by_device ON pushes(app_id, device_id, (coalesce(deferred_until, created_at)))
                    WHERE event = 'start';
                CREATE TABLE rate_buckets (
                    app_id TEXT NOT NULL,
                    family TEXT NOT NULL,
                    tokens \(t.real) NOT NULL,
                    updated_at \(t.integer) NOT NULL,
                    PRIMARY KEY (app_id, family)
                )\(t.strict);
                """),
            // iOS 18 broadcast channels an app made through Islet: Apple's id as Apple
            // gave it, the same bytes in base64url (what paths take), the environment
            // it lives in, and the activity using it.
            Migration(version: 15, name: "broadcast channels", sql: """
                CREATE TABLE channels (
                    app_id TEXT NOT NULL,
                    channel_id TEXT NOT NULL,
                    apns_channel_id TEXT NOT NULL,
                    environment TEXT NOT NULL,
                    message_storage_policy TEXT NOT NULL,
                    activity_id TEXT,
                    created_at \(t.integer) NOT NULL,
                    PRIMARY KEY (app_id, channel_id)
                )\(t.strict);
                CREATE INDEX channels_by_environment ON channels(app_id, environment);
                """),
            // Activities on broadcast channels: how an activity's updates reach its
            // devices, the copies listening on its channel (no update token comes for
            // them), the channels Islet made for one (and deletes once it is over), and
            // each device's iOS version (whether it can subscribe to a channel).
            Migration(version: 16, name: "channel activities", sql: """
                ALTER TABLE activities ADD COLUMN delivery TEXT NOT NULL DEFAULT 'tokens';
                ALTER TABLE channels ADD COLUMN managed \(t.boolean) NOT NULL DEFAULT \(t.false);
                CREATE INDEX channels_by_activity ON channels(app_id, activity_id) WHERE activity_id IS NOT NULL;
                ALTER TABLE devices ADD COLUMN os_version TEXT;
                ALTER TABLE activity_instances ADD COLUMN subscribed \(t.boolean) NOT NULL DEFAULT \(t.false);
                """),
            // Android over FCM: an app's service account (its private key sealed like
            // the APNs key), and a device's FCM registration token.
            Migration(version: 17, name: "fcm", sql: """
                ALTER TABLE apps ADD COLUMN fcm_project_id TEXT;
                ALTER TABLE apps ADD COLUMN fcm_client_email TEXT;
                ALTER TABLE apps ADD COLUMN fcm_private_key TEXT;
                ALTER TABLE apps ADD COLUMN fcm_private_key_id TEXT;
                ALTER TABLE apps ADD COLUMN fcm_token_uri TEXT;
                ALTER TABLE devices ADD COLUMN fcm_token TEXT;
                ALTER TABLE devices ADD COLUMN fcm_token_registered_at \(t.integer);
                CREATE INDEX devices_by_fcm_token ON devices(app_id, fcm_token) WHERE fcm_token IS NOT NULL;
                """),
            // Each tap counted, by the push it counts on (0: none was sent yet) and its
            // time: a tap reported again, however often and in whatever order, is
            // recognised and counted once.
            Migration(version: 18, name: "tap records", sql: """
                CREATE TABLE taps (
                    app_id TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    device_id TEXT NOT NULL,
                    push_id \(t.integer) NOT NULL,
                    tapped_at \(t.integer) NOT NULL,
                    PRIMARY KEY (app_id, activity_id, device_id, push_id, tapped_at)
                )\(t.keyed);
                """),
            // When a device first sent its secret: a secret a device has used is never
            // replaced by a registration that does not carry it, even under 'off'.
            Migration(version: 19, name: "presented device secrets", sql: """
                ALTER TABLE devices ADD COLUMN secret_presented_at \(t.integer);
                """),
            // A node that stopped cleanly says so: it no longer counts as running on the
            // database (islet secrets rotate waits for the nodes that do).
            Migration(version: 20, name: "stopped nodes", sql: """
                ALTER TABLE nodes ADD COLUMN stopped_at \(t.integer);
                """),
            // Who may follow an activity: a start's join rule and the audience it lets
            // in (the start's, widened later by the backend), the device (and its user)
            // that created a local activity, the app's rule for those, and which copies
            // devices joined on their own.
            Migration(version: 21, name: "who may follow an activity", sql: """
                ALTER TABLE activities ADD COLUMN join_rule TEXT;
                ALTER TABLE activities ADD COLUMN created_by TEXT;
                ALTER TABLE activities ADD COLUMN creator_user_id TEXT;
                ALTER TABLE apps ADD COLUMN local_join TEXT NOT NULL DEFAULT 'anyone';
                ALTER TABLE activity_instances ADD COLUMN joined \(t.boolean) NOT NULL DEFAULT \(t.false);
                CREATE TABLE activity_audience (
                    app_id TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    kind TEXT NOT NULL,
                    value TEXT NOT NULL,
                    PRIMARY KEY (app_id, activity_id, kind, value)
                )\(t.keyed);
                """),
            // A send is the durable unit of a fan-out to an activity's copies: one row
            // with its payload, its audience (the copies it reaches, by device id), how
            // far its windows were handed out and what they settled. A window in
            // flight is a row of send_windows, under its node's lease; a device has a
            // row of pushes only when its story differs from the send's (a failure, a
            // retry, a downgrade, a tap).
            Migration(version: 22, name: "sends by windows", sql: """
                ALTER TABLE sends ADD COLUMN audience TEXT;
                ALTER TABLE sends ADD COLUMN token_kind TEXT;
                ALTER TABLE sends ADD COLUMN activity_type TEXT;
                ALTER TABLE sends ADD COLUMN state TEXT;
                ALTER TABLE sends ADD COLUMN drop_reason TEXT;
                ALTER TABLE sends ADD COLUMN claimed_through TEXT;
                ALTER TABLE sends ADD COLUMN total \(t.integer) NOT NULL DEFAULT 0;
                ALTER TABLE sends ADD COLUMN sent \(t.integer) NOT NULL DEFAULT 0;
                ALTER TABLE sends ADD COLUMN exceptions \(t.integer) NOT NULL DEFAULT 0;
                ALTER TABLE sends ADD COLUMN progressed_at \(t.integer);
                ALTER TABLE sends ADD COLUMN finished_at \(t.integer);
                CREATE INDEX sends_open ON sends(id) WHERE state IN ('queued', 'claimed');
                CREATE TABLE send_windows (
                    send_id \(t.integer) NOT NULL,
                    through_device TEXT NOT NULL,
                    after_device TEXT NOT NULL,
                    size \(t.integer) NOT NULL,
                    claimed_by TEXT,
                    lease_until \(t.integer),
                    PRIMARY KEY (send_id, through_device)
                )\(t.keyed);
                CREATE INDEX pushes_by_send ON pushes(send_id, device_id);
                """),
            // Retention of the history: an app's own, shorter, retention, and what its
            // purge and the count of an app's history read. Ended activities by the
            // app and their start; sends by the app and their time (each send's
            // pushes, which deleting a send checks, are read by pushes_by_send, of
            // version 22).
            Migration(version: 23, name: "history retention", sql: """
                ALTER TABLE apps ADD COLUMN history_retention_days \(t.real);
                CREATE INDEX activities_by_start ON activities(app_id, started_at);
                CREATE INDEX sends_by_time ON sends(app_id, created_at);
                """),
            // A push-to-start send reaches the copies it made: each names its start's
            // send, and the send's windows read them by it (no row per device). A
            // device's starts, which start spacing counts, are found by its copies. The
            // sends to an activity's copies go one after another: the unfinished ones
            // are found by the activity.
            Migration(version: 24, name: "starts by windows", sql: """
                ALTER TABLE activity_instances ADD COLUMN start_send_id \(t.integer);
                CREATE INDEX activity_instances_started ON activity_instances(app_id, device_id, start_send_id)
                    WHERE start_send_id IS NOT NULL;
                CREATE INDEX sends_unfinished ON sends(app_id, activity_id, id) WHERE audience = 'copies' AND finished_at IS NULL;
                """),
            // An update stops the activity's open sends: found by the activity among
            // the open ones, not among every send of its history.
            Migration(version: 25, name: "open sends by activity", sql: """
                CREATE INDEX sends_open_by_activity ON sends(app_id, activity_id) WHERE state IN ('queued', 'claimed');
                """),
            // Receipts: a type may ask its devices to say which send they showed; each
            // receipt is one row (a device, a send), counted on its send and shown on
            // the device's copy.
            Migration(version: 26, name: "receipts", sql: """
                ALTER TABLE activity_types ADD COLUMN receipts \(t.boolean) NOT NULL DEFAULT \(t.false);
                ALTER TABLE sends ADD COLUMN received \(t.integer) NOT NULL DEFAULT 0;
                ALTER TABLE activity_instances ADD COLUMN last_received_send_id \(t.integer);
                ALTER TABLE activity_instances ADD COLUMN last_received_at \(t.integer);
                CREATE TABLE receipts (
                    send_id \(t.integer) NOT NULL,
                    device_id TEXT NOT NULL,
                    app_id TEXT NOT NULL,
                    activity_id TEXT NOT NULL,
                    received_at \(t.integer) NOT NULL,
                    created_at \(t.integer) NOT NULL,
                    PRIMARY KEY (send_id, device_id)
                )\(t.keyed);
                """),
            // Lookup: a push found by its apns-id or APNs's apns-unique-id, in the app's
            // history, without reading all of it.
            Migration(version: 27, name: "pushes by apns-id", sql: """
                CREATE INDEX pushes_by_apns_id ON pushes(app_id, apns_id);
                CREATE INDEX pushes_by_unique_id ON pushes(app_id, apns_unique_id) WHERE apns_unique_id IS NOT NULL;
                """),
            // A device's page: its copies, newest first, and the rows of its pushes that
            // differed, each by an index rather than a read of the app's copies.
            Migration(version: 28, name: "a device's copies and pushes", sql: """
                CREATE INDEX activity_instances_by_device ON activity_instances(app_id, device_id, created_at);
                CREATE INDEX pushes_by_device ON pushes(app_id, device_id, id);
                """),
            // An overview's rate-limit refusals, across every node: each node counts its
            // own and adds them, by app and minute, every few seconds; and its dead
            // tokens, by the events of those Islet acted on.
            Migration(version: 29, name: "rate-limit refusals and dead tokens", sql: """
                CREATE INDEX events_dead_tokens ON events(app_id, occurred_at) WHERE type = 'token.rejected';
                CREATE TABLE rate_refusals (
                    app_id TEXT NOT NULL,
                    minute \(t.integer) NOT NULL,
                    refused \(t.integer) NOT NULL,
                    PRIMARY KEY (app_id, minute)
                )\(t.keyed);
                """),
            // The push service's id of a message, APNs's apns-unique-id or FCM's message
            // name, in one column named for both (an FCM name is no apns-unique-id).
            Migration(version: 30, name: "a push's service message id", sql: """
                ALTER TABLE pushes RENAME COLUMN apns_unique_id TO service_message_id;
                """),
        ]
    }
}
