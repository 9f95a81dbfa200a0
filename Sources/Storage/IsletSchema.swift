/// The history of Islet's own database schema, oldest first.
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
    ]
}
