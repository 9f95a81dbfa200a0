import Foundation
import Storage

/// One step of a schema's history. Versions start at 1 and increase by one.
public struct Migration: Sendable {
    /// The schema version this step produces.
    public let version: Int
    /// A short name, stored with the version; a stored name that differs from the
    /// code's means the history was rewritten, which Islet refuses.
    public let name: String
    /// The statements to run, in one transaction.
    public let sql: String

    /// Creates a migration.
    public init(version: Int, name: String, sql: String) {
        self.version = version
        self.name = name
        self.sql = sql
    }
}

/// Applies migrations in order, each in its own transaction, recording them in
/// `islet_migrations`; running it again applies nothing.
public struct Migrator: Sendable {
    /// The schema's whole history, in order.
    public let migrations: [Migration]

    /// Creates a migrator for `migrations`.
    public init(migrations: [Migration]) {
        self.migrations = migrations
    }

    /// Brings the schema up to date; answers the versions it applied (empty when the
    /// schema already was).
    @discardableResult
    public func migrate(_ connection: SQLiteConnection) throws -> [Int] {
        for (index, migration) in migrations.enumerated() where migration.version != index + 1 {
            throw SQLiteError(code: .migration, message: "migration \(migration.name) has version \(migration.version), expected \(index + 1)")
        }
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS islet_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )
            """)
        let applied = try connection.query("SELECT version, name FROM islet_migrations ORDER BY version")
        for row in applied {
            let version = Int(row[0].integer ?? 0)
            guard version >= 1, version <= migrations.count else {
                throw SQLiteError(code: .migration, message: "the database is at schema version \(version), newer than this Islet knows (\(migrations.count)); upgrade Islet")
            }
            let name = row[1].text ?? ""
            guard migrations[version - 1].name == name else {
                throw SQLiteError(code: .migration, message: "schema version \(version) was applied as \"\(name)\" but this Islet calls it \"\(migrations[version - 1].name)\"")
            }
        }
        var done: [Int] = []
        for migration in migrations.dropFirst(applied.count) {
            try connection.transaction {
                try connection.execute(migration.sql)
                try connection.run(
                    """
                    INSERT INTO islet_migrations (version, name, applied_at)
                    VALUES (\(migration.version), \(migration.name), \(ISO8601DateFormatter().string(from: Date())))
                    """)
            }
            done.append(migration.version)
        }
        return done
    }

    /// The highest version recorded in `connection`'s database (0 for none).
    public static func currentVersion(_ connection: SQLiteConnection) throws -> Int {
        let rows = try connection.query("SELECT COALESCE(MAX(version), 0) FROM islet_migrations")
        return Int(rows.first?[0].integer ?? 0)
    }
}
