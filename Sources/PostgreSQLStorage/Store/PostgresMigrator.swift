import Foundation
import Storage

/// Brings a PostgreSQL schema up to date at start, under an advisory lock held for
/// the whole run: nodes starting together migrate once, the others wait and then
/// find nothing to do. A database whose schema is newer than this Islet knows is
/// refused, as with SQLite.
enum PostgresMigrator {
    /// Applies what is missing of `migrations` on `connection`; answers the versions
    /// applied.
    @discardableResult
    static func migrate(_ connection: PostgresConnection, migrations: [PostgresMigration]) throws -> [Int] {
        let lock: SQL = "SELECT pg_advisory_lock(hashtext(current_schema() || ':islet-migrations'))"
        _ = try connection.query(lock)
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(hashtext(current_schema() || ':islet-migrations'))") }
        try connection.execute("""
            CREATE TABLE IF NOT EXISTS islet_migrations (
                version INTEGER PRIMARY KEY,
                name TEXT NOT NULL,
                applied_at TEXT NOT NULL
            )
            """)
        let applied = try connection.query("SELECT version, name FROM islet_migrations ORDER BY version")
        let known = Dictionary(uniqueKeysWithValues: migrations.map { ($0.version, $0) })
        let newest = migrations.last?.version ?? 0
        var done = Set<Int>()
        for row in applied {
            let version = Int(row[0].integer ?? 0)
            guard version <= newest else {
                throw StoreError(
                    .corrupt,
                    "the database is at schema version \(version), newer than this Islet knows (\(newest)); upgrade Islet")
            }
            let name = row[1].text ?? ""
            if let migration = known[version], migration.name != name {
                throw StoreError(
                    .corrupt, "schema version \(version) was applied as \"\(name)\" but this Islet calls it \"\(migration.name)\"")
            }
            done.insert(version)
        }
        var appliedNow: [Int] = []
        for migration in migrations where !done.contains(migration.version) {
            // A version below every applied one was folded into a later migration.
            if let highest = done.max(), migration.version < highest { continue }
            try connection.execute("BEGIN")
            do {
                try connection.execute(migration.sql)
                try connection.run(
                    """
                    INSERT INTO islet_migrations (version, name, applied_at)
                    VALUES (\(migration.version), \(migration.name), \(ISO8601DateFormatter().string(from: Date())))
                    """)
                try connection.execute("COMMIT")
            } catch {
                if !connection.isBroken { try? connection.execute("ROLLBACK") }
                throw error
            }
            appliedNow.append(migration.version)
        }
        return appliedNow
    }
}
