public import SQLStorage

/// The history of Islet's own database schema, oldest first.
///
/// Times are whole Unix milliseconds (`INTEGER`). Tokens are lowercase hex. Every
/// row of an app carries its `app_id`, and every query names it, so one app never
/// reads another's rows. PostgreSQL's history (`PostgresSchema`) follows this one;
/// `SchemaParityTests` compares the two.
public enum IsletSchema {
    /// Every migration, in order.
    public static let migrations: [Migration] = [
        Migration(version: 1, name: "metadata", sql: """
            CREATE TABLE islet_metadata (
                key TEXT PRIMARY KEY,
                value TEXT NOT NULL
            ) STRICT;
            INSERT INTO islet_metadata (key, value)
                VALUES ('created_at', strftime('%Y-%m-%dT%H:%M:%SZ', 'now'));
            """),
        Migration(version: 2, name: "registry and delivery", sql: """
            CREATE TABLE apps (
                id TEXT PRIMARY KEY,
                name TEXT NOT NULL,
                bundle_id TEXT NOT NULL,
                apns_team_id TEXT,
                apns_key_id TEXT,
                apns_private_key TEXT,
                server_key_hash BLOB NOT NULL UNIQUE,
                device_key_hash BLOB NOT NULL UNIQUE,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            ) STRICT;

            CREATE TABLE devices (
                app_id TEXT NOT NULL REFERENCES apps(id),
                device_id TEXT NOT NULL,
                platform TEXT NOT NULL,
                environment TEXT NOT NULL,
                apns_token TEXT,
                apns_token_registered_at INTEGER,
                unreachable_at INTEGER,
                user_id TEXT,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, device_id)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX devices_by_user ON devices(app_id, user_id) WHERE user_id IS NOT NULL;
            CREATE INDEX devices_by_token ON devices(app_id, apns_token) WHERE apns_token IS NOT NULL;

            CREATE TABLE device_tags (
                app_id TEXT NOT NULL,
                tag TEXT NOT NULL,
                device_id TEXT NOT NULL,
                PRIMARY KEY (app_id, tag, device_id),
                FOREIGN KEY (app_id, device_id) REFERENCES devices(app_id, device_id) ON DELETE CASCADE
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX device_tags_by_device ON device_tags(app_id, device_id);

            CREATE TABLE start_tokens (
                app_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                activity_type TEXT NOT NULL,
                token TEXT NOT NULL,
                environment TEXT NOT NULL,
                registered_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, device_id, activity_type),
                FOREIGN KEY (app_id, device_id) REFERENCES devices(app_id, device_id) ON DELETE CASCADE
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX start_tokens_by_token ON start_tokens(app_id, token);

            CREATE TABLE activities (
                seq INTEGER PRIMARY KEY,
                app_id TEXT NOT NULL REFERENCES apps(id),
                activity_id TEXT NOT NULL,
                activity_type TEXT NOT NULL,
                origin TEXT NOT NULL,
                status TEXT NOT NULL,
                attributes TEXT,
                content_state TEXT,
                last_timestamp INTEGER,
                started_at INTEGER NOT NULL,
                updated_at INTEGER,
                ended_at INTEGER,
                end_cause TEXT,
                UNIQUE (app_id, activity_id)
            ) STRICT;
            CREATE INDEX activities_open ON activities(started_at) WHERE status != 'ended';

            CREATE TABLE activity_instances (
                app_id TEXT NOT NULL,
                activity_id TEXT NOT NULL,
                device_id TEXT NOT NULL,
                status TEXT NOT NULL,
                update_token TEXT,
                environment TEXT NOT NULL,
                token_registered_at INTEGER,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                ended_at INTEGER,
                end_cause TEXT,
                PRIMARY KEY (app_id, activity_id, device_id)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX activity_instances_by_token ON activity_instances(app_id, update_token)
                WHERE update_token IS NOT NULL;

            CREATE TABLE sends (
                id INTEGER PRIMARY KEY,
                app_id TEXT NOT NULL,
                activity_id TEXT,
                event TEXT NOT NULL,
                topic TEXT NOT NULL,
                push_type TEXT NOT NULL,
                priority INTEGER NOT NULL,
                expiration INTEGER,
                collapse_id TEXT,
                payload BLOB NOT NULL,
                created_at INTEGER NOT NULL
            ) STRICT;

            CREATE TABLE pushes (
                id INTEGER PRIMARY KEY,
                send_id INTEGER NOT NULL REFERENCES sends(id),
                app_id TEXT NOT NULL,
                activity_id TEXT,
                activity_type TEXT,
                event TEXT NOT NULL,
                device_id TEXT NOT NULL,
                token_kind TEXT NOT NULL,
                token TEXT NOT NULL,
                environment TEXT NOT NULL,
                environment_switched INTEGER NOT NULL DEFAULT 0,
                apns_id TEXT NOT NULL,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                rounds INTEGER NOT NULL DEFAULT 0,
                apns_status INTEGER,
                reason TEXT,
                apns_unique_id TEXT,
                next_attempt_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                sent_at INTEGER
            ) STRICT;
            CREATE INDEX pushes_due ON pushes(next_attempt_at, id) WHERE status = 'queued';
            CREATE INDEX pushes_in_flight ON pushes(id) WHERE status = 'sending';
            CREATE INDEX pushes_by_activity ON pushes(app_id, activity_id, id) WHERE activity_id IS NOT NULL;

            CREATE TABLE idempotency_keys (
                app_id TEXT NOT NULL,
                key TEXT NOT NULL,
                request_hash BLOB NOT NULL,
                status INTEGER NOT NULL,
                body BLOB NOT NULL,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, key)
            ) STRICT, WITHOUT ROWID;
            """),
        Migration(version: 3, name: "activity types", sql: """
            CREATE TABLE activity_types (
                app_id TEXT NOT NULL REFERENCES apps(id),
                activity_type TEXT NOT NULL,
                schema TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, activity_type)
            ) STRICT, WITHOUT ROWID;
            ALTER TABLE apps ADD COLUMN strict_activity_types INTEGER NOT NULL DEFAULT 0;
            CREATE INDEX activities_by_type ON activities(app_id, activity_type) WHERE status != 'ended';
            """),
        Migration(version: 4, name: "queued pushes by activity", sql: """
            CREATE INDEX pushes_queued_by_activity ON pushes(app_id, activity_id) WHERE status = 'queued';
            """),
        Migration(version: 5, name: "scheduled ends", sql: """
            ALTER TABLE activities ADD COLUMN end_at INTEGER;
            CREATE INDEX activities_end_at ON activities(end_at) WHERE end_at IS NOT NULL AND status != 'ended';
            """),
        Migration(version: 6, name: "nodes and leases", sql: """
            ALTER TABLE pushes ADD COLUMN claimed_by TEXT;
            ALTER TABLE pushes ADD COLUMN lease_until INTEGER;
            CREATE INDEX pushes_claimed_by ON pushes(claimed_by) WHERE status = 'sending';
            CREATE TABLE nodes (
                node_id TEXT PRIMARY KEY,
                started_at INTEGER NOT NULL,
                last_heartbeat_at INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            """),
        Migration(version: 7, name: "schedules and timelines", sql: """
            CREATE TABLE schedules (
                seq INTEGER PRIMARY KEY,
                schedule_id TEXT NOT NULL UNIQUE,
                app_id TEXT NOT NULL REFERENCES apps(id),
                kind TEXT NOT NULL,
                activity_id TEXT,
                send_at INTEGER NOT NULL,
                status TEXT NOT NULL,
                reason TEXT,
                detail TEXT,
                targets INTEGER,
                command TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                fired_at INTEGER,
                timeline_generation INTEGER,
                entry_index INTEGER
            ) STRICT;
            CREATE INDEX schedules_due ON schedules(send_at, seq) WHERE status = 'scheduled';
            CREATE INDEX schedules_by_app ON schedules(app_id, send_at, seq);
            CREATE INDEX schedules_by_activity ON schedules(app_id, activity_id, send_at);
            CREATE TABLE timelines (
                app_id TEXT NOT NULL REFERENCES apps(id),
                activity_id TEXT NOT NULL,
                generation INTEGER NOT NULL,
                end_at INTEGER,
                renew INTEGER NOT NULL,
                renew_at INTEGER,
                start_alert TEXT,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, activity_id)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX timelines_renew_at ON timelines(renew_at) WHERE renew_at IS NOT NULL;
            ALTER TABLE activities ADD COLUMN start_alert TEXT;
            ALTER TABLE activities ADD COLUMN renewed_to TEXT;
            ALTER TABLE activities ADD COLUMN renewed_from TEXT;
            ALTER TABLE activities ADD COLUMN not_renewed TEXT;
            """),
        Migration(version: 8, name: "events and webhooks", sql: """
            CREATE TABLE events (
                seq INTEGER PRIMARY KEY,
                app_id TEXT NOT NULL,
                type TEXT NOT NULL,
                activity_id TEXT,
                occurred_at INTEGER NOT NULL,
                data TEXT NOT NULL
            ) STRICT;
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
                previous_secret_until INTEGER,
                enabled INTEGER NOT NULL,
                disabled_reason TEXT,
                failing_since INTEGER,
                cursor INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                updated_at INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX webhooks_by_app ON webhooks(app_id, created_at);
            CREATE TABLE webhook_deliveries (
                id INTEGER PRIMARY KEY,
                webhook_id TEXT NOT NULL,
                app_id TEXT NOT NULL,
                event_seq INTEGER NOT NULL,
                event_type TEXT NOT NULL,
                ordering_key TEXT,
                status TEXT NOT NULL,
                attempts INTEGER NOT NULL DEFAULT 0,
                next_attempt_at INTEGER,
                response_status INTEGER,
                error TEXT,
                duration_ms INTEGER,
                claimed_by TEXT,
                lease_until INTEGER,
                created_at INTEGER NOT NULL,
                last_attempt_at INTEGER
            ) STRICT;
            CREATE INDEX webhook_deliveries_due ON webhook_deliveries(next_attempt_at, id) WHERE status = 'pending';
            CREATE INDEX webhook_deliveries_pending ON webhook_deliveries(id) WHERE status = 'pending';
            CREATE INDEX webhook_deliveries_open ON webhook_deliveries(webhook_id, ordering_key, id)
                WHERE status IN ('pending', 'delivering');
            CREATE INDEX webhook_deliveries_by_webhook ON webhook_deliveries(webhook_id, id);
            CREATE INDEX webhook_deliveries_by_event ON webhook_deliveries(event_seq);
            ALTER TABLE activity_instances ADD COLUMN start_unconfirmed_at INTEGER;
            CREATE INDEX activity_instances_pending ON activity_instances(created_at) WHERE status = 'pending';
            """),
        Migration(version: 9, name: "dashboard sessions", sql: """
            CREATE TABLE dashboard_sessions (
                token_hash BLOB PRIMARY KEY,
                scope TEXT NOT NULL,
                app_id TEXT,
                key_hash BLOB,
                csrf_token TEXT NOT NULL,
                created_at INTEGER NOT NULL,
                expires_at INTEGER NOT NULL
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX dashboard_sessions_expiry ON dashboard_sessions(expires_at);
            """),
        // Apps that exist now keep working without secrets ('off'); Islet writes
        // 'required' for every app it creates from this version on.
        Migration(version: 10, name: "device secrets", sql: """
            ALTER TABLE devices ADD COLUMN secret_hash BLOB;
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
            ALTER TABLE pushes ADD COLUMN taps INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE pushes ADD COLUMN first_tapped_at INTEGER;
            ALTER TABLE pushes ADD COLUMN last_tapped_at INTEGER;
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
            ALTER TABLE devices ADD COLUMN frequent_updates INTEGER;
            ALTER TABLE apps ADD COLUMN budget TEXT;
            ALTER TABLE apps ADD COLUMN rate_limits TEXT;
            ALTER TABLE pushes ADD COLUMN priority_downgraded INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE pushes ADD COLUMN deferred_until INTEGER;
            DROP INDEX pushes_by_copy;
            CREATE INDEX pushes_by_copy ON pushes(app_id, activity_id, device_id, created_at, id)
                WHERE activity_id IS NOT NULL;
            CREATE INDEX sends_by_activity ON sends(app_id, activity_id, created_at) WHERE activity_id IS NOT NULL;
            CREATE INDEX pushes_starts_by_device ON pushes(app_id, device_id, (coalesce(deferred_until, created_at)))
                WHERE event = 'start';
            CREATE TABLE rate_buckets (
                app_id TEXT NOT NULL,
                family TEXT NOT NULL,
                tokens REAL NOT NULL,
                updated_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, family)
            ) STRICT;
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
                created_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, channel_id)
            ) STRICT;
            CREATE INDEX channels_by_environment ON channels(app_id, environment);
            """),
        // Activities on broadcast channels: how an activity's updates reach its
        // devices, the copies listening on its channel (no update token comes for
        // them), the channels Islet made for one (and deletes once it is over), and
        // each device's iOS version (whether it can subscribe to a channel).
        Migration(version: 16, name: "channel activities", sql: """
            ALTER TABLE activities ADD COLUMN delivery TEXT NOT NULL DEFAULT 'tokens';
            ALTER TABLE channels ADD COLUMN managed INTEGER NOT NULL DEFAULT 0;
            CREATE INDEX channels_by_activity ON channels(app_id, activity_id) WHERE activity_id IS NOT NULL;
            ALTER TABLE devices ADD COLUMN os_version TEXT;
            ALTER TABLE activity_instances ADD COLUMN subscribed INTEGER NOT NULL DEFAULT 0;
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
            ALTER TABLE devices ADD COLUMN fcm_token_registered_at INTEGER;
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
                push_id INTEGER NOT NULL,
                tapped_at INTEGER NOT NULL,
                PRIMARY KEY (app_id, activity_id, device_id, push_id, tapped_at)
            ) STRICT, WITHOUT ROWID;
            """),
        // When a device first sent its secret: a secret a device has used is never
        // replaced by a registration that does not carry it, even under 'off'.
        Migration(version: 19, name: "presented device secrets", sql: """
            ALTER TABLE devices ADD COLUMN secret_presented_at INTEGER;
            """),
        // A node that stopped cleanly says so: it no longer counts as running on the
        // database (islet secrets rotate waits for the nodes that do).
        Migration(version: 20, name: "stopped nodes", sql: """
            ALTER TABLE nodes ADD COLUMN stopped_at INTEGER;
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
            ALTER TABLE activity_instances ADD COLUMN joined INTEGER NOT NULL DEFAULT 0;
            CREATE TABLE activity_audience (
                app_id TEXT NOT NULL,
                activity_id TEXT NOT NULL,
                kind TEXT NOT NULL,
                value TEXT NOT NULL,
                PRIMARY KEY (app_id, activity_id, kind, value)
            ) STRICT, WITHOUT ROWID;
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
            ALTER TABLE sends ADD COLUMN total INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE sends ADD COLUMN sent INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE sends ADD COLUMN exceptions INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE sends ADD COLUMN progressed_at INTEGER;
            ALTER TABLE sends ADD COLUMN finished_at INTEGER;
            CREATE INDEX sends_open ON sends(id) WHERE state IN ('queued', 'claimed');
            CREATE TABLE send_windows (
                send_id INTEGER NOT NULL,
                through_device TEXT NOT NULL,
                after_device TEXT NOT NULL,
                size INTEGER NOT NULL,
                claimed_by TEXT,
                lease_until INTEGER,
                PRIMARY KEY (send_id, through_device)
            ) STRICT, WITHOUT ROWID;
            CREATE INDEX pushes_by_send ON pushes(send_id, device_id);
            """),
        // Retention of the history: an app's own, shorter, retention, and what its
        // purge and the count of an app's history read. Ended activities by the
        // app and their start; sends by the app and their time (each send's
        // pushes, which deleting a send checks, are read by pushes_by_send, of
        // version 22).
        Migration(version: 23, name: "history retention", sql: """
            ALTER TABLE apps ADD COLUMN history_retention_days REAL;
            CREATE INDEX activities_by_start ON activities(app_id, started_at);
            CREATE INDEX sends_by_time ON sends(app_id, created_at);
            """),
        // A push-to-start send reaches the copies it made: each names its start's
        // send, and the send's windows read them by it (no row per device). A
        // device's starts, which start spacing counts, are found by its copies. The
        // sends to an activity's copies go one after another: the unfinished ones
        // are found by the activity.
        Migration(version: 24, name: "starts by windows", sql: """
            ALTER TABLE activity_instances ADD COLUMN start_send_id INTEGER;
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
            ALTER TABLE activity_types ADD COLUMN receipts INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE sends ADD COLUMN received INTEGER NOT NULL DEFAULT 0;
            ALTER TABLE activity_instances ADD COLUMN last_received_send_id INTEGER;
            ALTER TABLE activity_instances ADD COLUMN last_received_at INTEGER;
            CREATE TABLE receipts (
                send_id INTEGER NOT NULL,
                device_id TEXT NOT NULL,
                app_id TEXT NOT NULL,
                activity_id TEXT NOT NULL,
                received_at INTEGER NOT NULL,
                created_at INTEGER NOT NULL,
                PRIMARY KEY (send_id, device_id)
            ) STRICT, WITHOUT ROWID;
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
                minute INTEGER NOT NULL,
                refused INTEGER NOT NULL,
                PRIMARY KEY (app_id, minute)
            ) STRICT, WITHOUT ROWID;
            """),
        // The push service's id of a message, APNs's apns-unique-id or FCM's message
        // name, in one column named for both (an FCM name is no apns-unique-id).
        Migration(version: 30, name: "a push's service message id", sql: """
            ALTER TABLE pushes RENAME COLUMN apns_unique_id TO service_message_id;
            """),
    ]
}
