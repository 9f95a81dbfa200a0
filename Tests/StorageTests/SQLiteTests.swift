import Foundation
import IsletTesting
import PostgreSQLStorage
import SQLStorage
import SQLiteStorage
import Storage
import Testing

@Suite("SQLite")
struct SQLiteTests {
    let schema = [
        Migration(version: 1, name: "widgets", sql: """
            CREATE TABLE widgets (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, weight REAL, data BLOB, note TEXT)
            """),
        Migration(version: 2, name: "widget-colour", sql: "ALTER TABLE widgets ADD COLUMN colour TEXT"),
    ]

    @Test func opensFileInWALMode() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("wal.sqlite").path
            let connection = try SQLiteConnection(path: path)
            #expect(try connection.query("PRAGMA journal_mode").first?[0].text == "wal")
            // Temporary structures in memory (2), never in files.
            #expect(try connection.query("PRAGMA temp_store").first?[0].integer == 2)
            try connection.execute("CREATE TABLE t (x INTEGER)")
            try connection.run("INSERT INTO t VALUES (?)", [1])
            #expect(FileManager.default.fileExists(atPath: path + "-wal"))
        }
    }

    @Test func migrationsRunOnceAndSecondRunIsANoOp() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("m.sqlite").path
            let connection = try SQLiteConnection(path: path)
            let migrator = Migrator(migrations: schema)
            #expect(try migrator.migrate(connection) == [1, 2])
            try connection.run("INSERT INTO widgets (name, colour) VALUES (?, ?)", ["a", "red"])
            #expect(try migrator.migrate(connection) == [])
            #expect(try Migrator.currentVersion(connection) == 2)
            // Data survives the second run, and reopening the file runs nothing either.
            let reopened = try SQLiteConnection(path: path)
            #expect(try migrator.migrate(reopened) == [])
            #expect(try reopened.query("SELECT colour FROM widgets WHERE name = ?", ["a"]).first?["colour"].text == "red")
        }
    }

    @Test func laterMigrationsApplyToAnOlderDatabase() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("old.sqlite").path
            let connection = try SQLiteConnection(path: path)
            #expect(try Migrator(migrations: Array(schema.prefix(1))).migrate(connection) == [1])
            #expect(try Migrator(migrations: schema).migrate(connection) == [2])
        }
    }

    @Test func refusesARewrittenOrNewerHistory() async throws {
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("h.sqlite").path)
            try Migrator(migrations: schema).migrate(connection)
            let renamed = [Migration(version: 1, name: "gadgets", sql: "SELECT 1")]
            let rewritten = #expect(throws: SQLiteError.self) { try Migrator(migrations: renamed).migrate(connection) }
            #expect(rewritten?.code == .migration)
            let older = #expect(throws: SQLiteError.self) { try Migrator(migrations: Array(schema.prefix(1))).migrate(connection) }
            #expect(older?.message.contains("newer than this Islet knows") == true)
        }
    }

    @Test func failedMigrationLeavesNoTrace() async throws {
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("f.sqlite").path)
            let broken = schema + [Migration(version: 3, name: "broken", sql: "CREATE TABLE ok (x); CREATE TABLE (")]
            #expect(throws: SQLiteError.self) { try Migrator(migrations: broken).migrate(connection) }
            #expect(try Migrator.currentVersion(connection) == 2)
            #expect(try connection.query("SELECT name FROM sqlite_master WHERE name = 'ok'").isEmpty)
        }
    }

    @Test func rowsRoundTripThroughPreparedStatements() async throws {
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("r.sqlite").path)
            try Migrator(migrations: schema).migrate(connection)
            let blob = Data([0, 1, 2, 255, 0])
            let insert = try connection.prepare("INSERT INTO widgets (name, weight, data, note) VALUES (?, ?, ?, ?)")
            #expect(try insert.run(["zürich ✓ \"quoted\"", 2.5, blob, String?.none]) == 1)
            #expect(try insert.run(["big", Double?.none, Data(), "x"]) == 1)
            let rows = try connection.query("SELECT id, name, weight, data, note FROM widgets ORDER BY id")
            #expect(rows.count == 2)
            #expect(rows[0]["name"] == .text("zürich ✓ \"quoted\""))
            #expect(rows[0]["weight"] == .real(2.5))
            #expect(rows[0]["data"] == .blob(blob))
            #expect(rows[0]["note"] == .null)
            #expect(rows[1]["weight"].isNull)
            #expect(rows[1]["data"] == .blob(Data()))
            #expect(rows[0]["id"].integer == 1)
            // The same statement text is prepared once and reused.
            #expect(try connection.prepare("INSERT INTO widgets (name, weight, data, note) VALUES (?, ?, ?, ?)") === insert)
            try connection.run("INSERT INTO widgets (name, weight) VALUES (?, ?)", ["max", Int64.max])
            #expect(try connection.query("SELECT weight FROM widgets WHERE name = 'max'").first?[0].real == Double(Int64.max))
            try connection.run("UPDATE widgets SET note = ? WHERE name = ?", [Int64.max, "big"])
            #expect(try connection.query("SELECT note FROM widgets WHERE name = 'big'").first?[0] == .text(String(Int64.max)))
            // By name: a column read out of order, a name no column has, and a name
            // two columns share (the last one wins).
            let named = try #require(try connection.query("SELECT id, name AS label, weight, 7 AS label FROM widgets ORDER BY id").first)
            #expect(named["weight"] == .real(2.5))
            #expect(named["id"] == .integer(1))
            #expect(named["label"] == .integer(7))
            #expect(named["missing"] == .null)
            #expect(named["Weight"] == .null)
        }
    }

    @Test func errorsAreTyped() async throws {
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("e.sqlite").path)
            try Migrator(migrations: schema).migrate(connection)
            try connection.run("INSERT INTO widgets (name) VALUES (?)", ["same"])
            let duplicate = #expect(throws: SQLiteError.self) { try connection.run("INSERT INTO widgets (name) VALUES (?)", ["same"]) }
            #expect(duplicate?.code == .constraint)
            #expect(duplicate?.description.contains("INSERT") == false)
            let wrongCount = #expect(throws: SQLiteError.self) { try connection.run("INSERT INTO widgets (name) VALUES (?)", []) }
            #expect(wrongCount?.code == .misuse)
        }
    }

    @Test func transactionRollsBackOnError() async throws {
        struct Abort: Error {}
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("t.sqlite").path)
            try Migrator(migrations: schema).migrate(connection)
            #expect(throws: Abort.self) {
                try connection.transaction {
                    try connection.run("INSERT INTO widgets (name) VALUES (?)", ["gone"])
                    throw Abort()
                }
            }
            #expect(try connection.query("SELECT COUNT(*) FROM widgets").first?[0].integer == 0)
            #expect(!connection.inTransaction)
        }
    }

    @Test func notADatabaseFailsAtOpen() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("garbage.sqlite")
            try Data(repeating: 0x41, count: 4096).write(to: path)
            let error = #expect(throws: SQLiteError.self) { try SQLiteConnection(path: path.path) }
            #expect(error?.code == .notADatabase)
            let missing = #expect(throws: SQLiteError.self) {
                try SQLiteConnection(path: dir.appendingPathComponent("no/such/dir.sqlite").path)
            }
            #expect(missing?.code == .cannotOpen)
        }
    }

    @Test func databaseSerialisesConcurrentWriters() async throws {
        try await withTemporaryDirectory { dir in
            let database = try SQLiteDatabase(path: dir.appendingPathComponent("c.sqlite").path, migrations: schema)
            await withTaskGroup(of: Void.self) { group in
                for i in 0..<200 {
                    group.addTask {
                        _ = try? database.write { try $0.run("INSERT INTO widgets (name) VALUES (?)", ["w\(i)"]) }
                    }
                }
            }
            #expect(try database.withConnection { try $0.query("SELECT COUNT(*) FROM widgets").first?[0].integer } == 200)
            database.close()
            #expect(throws: SQLiteError.self) { try database.withConnection { _ in 1 } }
        }
    }

    @Test func libraryVersionsAreReported() {
        #expect(SQLiteConnection.libraryVersion.hasPrefix("3."))
        #expect(PostgresLibrary.version.split(separator: ".").count == 2)
    }
}
