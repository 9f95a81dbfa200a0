import IsletCore
import SQLStorage
import Storage

/// Brings a PostgreSQL schema up to date at start, under an advisory lock held for
/// the whole run: nodes starting together migrate once, the others wait and then
/// find nothing to do. A database whose schema is newer than this Islet knows is
/// refused, as with SQLite.
enum PostgresMigrator {
    /// Applies what is missing of `migrations` on `connection`, stamped with
    /// `clock`'s time; answers the versions applied.
    @discardableResult
    static func migrate(
        _ connection: PostgresConnection, migrations: [Migration], clock: any WallClock = SystemWallClock()
    ) throws -> [Int] {
        try Migrator(migrations: migrations, clock: clock).migrate(on: PostgresMigrationTarget(connection: connection))
    }
}

/// A PostgreSQL connection as the migration runner sees it: the run holds an
/// advisory lock named after the schema, and refusals are `corrupt` store errors.
struct PostgresMigrationTarget: MigrationTarget {
    let connection: PostgresConnection

    func whileMigrating<T>(_ body: () throws -> T) throws -> T {
        _ = try connection.query("SELECT pg_advisory_lock(hashtext(current_schema() || ':islet-migrations'))")
        defer { _ = try? connection.query("SELECT pg_advisory_unlock(hashtext(current_schema() || ':islet-migrations'))") }
        return try body()
    }

    func execute(_ script: String) throws {
        try connection.execute(script)
    }

    func query(_ sql: SQL) throws -> [SQLRow] {
        try connection.query(sql)
    }

    func run(_ sql: SQL) throws -> Int {
        try connection.run(sql)
    }

    func transaction(_ body: () throws -> Void) throws {
        try connection.execute("BEGIN")
        do {
            try body()
            try connection.execute("COMMIT")
        } catch {
            if !connection.isBroken { try? connection.execute("ROLLBACK") }
            throw error
        }
    }

    func refusal(_ message: String) -> any Error {
        StoreError(.corrupt, message)
    }
}
