import Foundation
public import IsletCore

/// One step of a schema's history.
public struct Migration: Sendable {
    /// The schema version this step produces. A history's versions increase by one;
    /// one that starts above 1 folded the earlier steps into its first.
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

/// What the migration runner needs of one backend's connection; each SQL backend
/// implements it over its own connection.
public protocol MigrationTarget {
    /// Runs `body` while no other process migrates the same database (PostgreSQL
    /// holds an advisory lock); the default runs it as it is.
    func whileMigrating<T>(_ body: () throws -> T) throws -> T
    /// Runs `script`, one or more statements without bound values.
    func execute(_ script: String) throws
    /// Runs `sql` and answers its rows.
    func query(_ sql: SQL) throws -> [SQLRow]
    /// Runs `sql` and answers how many rows it changed.
    func run(_ sql: SQL) throws -> Int
    /// Runs `body` in one transaction: committed when it returns, rolled back when
    /// it throws.
    func transaction(_ body: () throws -> Void) throws
    /// The error that refuses the database, saying `message`: its schema is newer
    /// than this Islet knows, or its history was rewritten.
    func refusal(_ message: String) -> any Error
}

extension MigrationTarget {
    public func whileMigrating<T>(_ body: () throws -> T) throws -> T { try body() }
}

/// Applies migrations in order, each in its own transaction, recording them in
/// `islet_migrations` with the clock's time; running it again applies nothing. A
/// database at a version newer than the last migration, or whose recorded names
/// differ from the migrations', is refused.
public struct Migrator: Sendable {
    /// The schema's whole history, in order.
    public let migrations: [Migration]
    /// What stamps each applied migration.
    public let clock: any WallClock

    /// Creates a migrator for `migrations`, stamping them with `clock`'s time.
    public init(migrations: [Migration], clock: any WallClock = SystemWallClock()) {
        self.migrations = migrations
        self.clock = clock
    }

    /// The table that records the applied versions, the same on every backend.
    static let bookkeeping = """
        CREATE TABLE IF NOT EXISTS islet_migrations (
            version INTEGER PRIMARY KEY,
            name TEXT NOT NULL,
            applied_at TEXT NOT NULL
        )
        """

    /// Brings `target`'s schema up to date; answers the versions it applied (empty
    /// when the schema already was).
    @discardableResult
    public func migrate(on target: some MigrationTarget) throws -> [Int] {
        let first = migrations.first?.version ?? 1
        for (index, migration) in migrations.enumerated() where migration.version != first + index {
            throw target.refusal("migration \(migration.name) has version \(migration.version), expected \(first + index)")
        }
        let newest = migrations.last?.version ?? 0
        return try target.whileMigrating {
            try target.execute(Self.bookkeeping)
            var highest = 0
            for row in try target.query("SELECT version, name FROM islet_migrations ORDER BY version") {
                let version = Int(row[0].integer ?? 0)
                guard version <= newest else {
                    throw target.refusal(
                        "the database is at schema version \(version), newer than this Islet knows (\(newest)); upgrade Islet")
                }
                let name = row[1].text ?? ""
                if version >= first, migrations[version - first].name != name {
                    throw target.refusal(
                        "schema version \(version) was applied as \"\(name)\" but this Islet calls it \"\(migrations[version - first].name)\"")
                }
                highest = max(highest, version)
            }
            var applied: [Int] = []
            // A version below the highest applied one was folded into a later migration.
            for migration in migrations where migration.version > highest {
                try target.transaction {
                    try target.execute(migration.sql)
                    _ = try target.run(
                        """
                        INSERT INTO islet_migrations (version, name, applied_at)
                        VALUES (\(migration.version), \(migration.name), \(ISO8601DateFormatter().string(from: clock.now())))
                        """)
                }
                applied.append(migration.version)
            }
            return applied
        }
    }
}
