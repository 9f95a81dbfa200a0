import Foundation
import IsletCore
import IsletTesting
import SQLStorage
import SQLiteStorage
import Testing

/// The migration runner both backends share, on an SQLite file (PostgreSQL's target
/// runs in the PostgreSQL suites and every PostgreSQL store's start).
@Suite("Migration runner")
struct MigratorTests {
    /// A clock that always answers the same time.
    struct FixedClock: WallClock {
        let date: Date
        func now() -> Date { date }
    }

    static let history = [
        Migration(version: 1, name: "one", sql: "CREATE TABLE one (x INTEGER)"),
        Migration(version: 2, name: "two", sql: "CREATE TABLE two (x INTEGER)"),
        Migration(version: 3, name: "three", sql: "CREATE TABLE three (x INTEGER)"),
    ]

    @Test func eachMigrationIsStampedWithTheClocksTime() async throws {
        try await withTemporaryDirectory { folder in
            let connection = try SQLiteConnection(path: folder.appendingPathComponent("m.sqlite").path)
            let clock = FixedClock(date: Date(timeIntervalSince1970: 1_700_000_000))
            #expect(try Migrator(migrations: Self.history, clock: clock).migrate(connection) == [1, 2, 3])
            let stamps = try connection.query("SELECT applied_at FROM islet_migrations ORDER BY version").map { $0[0].text }
            #expect(stamps == Array(repeating: "2023-11-14T22:13:20Z", count: 3))
        }
    }

    @Test func aHistoryThatSkipsAVersionIsRefused() async throws {
        try await withTemporaryDirectory { folder in
            let connection = try SQLiteConnection(path: folder.appendingPathComponent("m.sqlite").path)
            let skipping = [Self.history[0], Self.history[2]]
            let error = #expect(throws: SQLiteError.self) { try Migrator(migrations: skipping).migrate(connection) }
            #expect(error?.code == .migration)
            #expect(try connection.query("SELECT name FROM sqlite_master WHERE name = 'one'").isEmpty)
        }
    }

    /// A history that starts above 1 folded the earlier steps into its first (as
    /// PostgreSQL's does): an empty database gets all of it, one at its last version
    /// only what is newer.
    @Test func aFoldedHistoryAppliesWhatIsNewerThanTheDatabase() async throws {
        try await withTemporaryDirectory { folder in
            let fresh = try SQLiteConnection(path: folder.appendingPathComponent("fresh.sqlite").path)
            #expect(try Migrator(migrations: Array(Self.history.dropFirst())).migrate(fresh) == [2, 3])
            #expect(try Migrator.currentVersion(fresh) == 3)

            let older = try SQLiteConnection(path: folder.appendingPathComponent("older.sqlite").path)
            #expect(try Migrator(migrations: Array(Self.history.prefix(2))).migrate(older) == [1, 2])
            #expect(try Migrator(migrations: Array(Self.history.dropFirst())).migrate(older) == [3])
            #expect(try Migrator(migrations: Array(Self.history.dropFirst())).migrate(older) == [])
        }
    }
}
