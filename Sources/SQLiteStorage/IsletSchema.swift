public import SQLStorage

/// The history of Islet's own database schema, oldest first.
///
/// Times are whole Unix milliseconds (`INTEGER`). Tokens are lowercase hex. Every
/// row of an app carries its `app_id`, and every query names it, so one app never
/// reads another's rows. Its first six steps are SQLite's own; from version 7 on,
/// the steps are written once for both databases (`SharedSchema`), and PostgreSQL's
/// history (`PostgresSchema`) continues with the same ones; `SchemaParityTests`
/// compares the two.
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
    ] + SharedSchema.migrations(.sqlite)
}
