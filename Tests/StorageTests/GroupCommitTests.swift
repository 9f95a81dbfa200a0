import Foundation
import IsletTesting
import SQLStorage
import SQLiteStorage
import Testing

@Suite("SQLite database: group commits and unsynced bookkeeping")
struct GroupCommitTests {
    let schema = [
        Migration(version: 1, name: "items", sql: "CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)"),
    ]

    @Test func concurrentWritesCommitTogetherAndAFailingOneRollsBackAlone() async throws {
        try await withTemporaryDirectory { dir in
            let database = try SQLiteDatabase(path: dir.appendingPathComponent("g.sqlite").path, migrations: schema)
            defer { database.close() }
            let outcomes = await withTaskGroup(of: Bool.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        do {
                            try await database.write { connection in
                                try connection.run("INSERT INTO items (name) VALUES (?)", ["item-\(index)"])
                                // Every tenth write fails after writing: only it rolls back.
                                if index % 10 == 0 {
                                    try connection.run("INSERT INTO items (name) VALUES (?)", ["item-\(index)"])
                                }
                            }
                            return true
                        } catch {
                            return false
                        }
                    }
                }
                var outcomes: [Bool] = []
                for await outcome in group { outcomes.append(outcome) }
                return outcomes
            }
            #expect(outcomes.filter { !$0 }.count == 5)
            let names = try await database.read { try $0.query("SELECT name FROM items").compactMap { $0[0].text } }
            #expect(names.count == 45)
            #expect(!names.contains("item-10"))
            #expect(names.contains("item-11"))
        }
    }

    @Test func unsyncedWritesAreVisibleAndLeaveFullSyncOn() async throws {
        try await withTemporaryDirectory { dir in
            let database = try SQLiteDatabase(path: dir.appendingPathComponent("u.sqlite").path, migrations: schema)
            defer { database.close() }
            _ = try database.writeWithoutSync { try $0.run("INSERT INTO items (name) VALUES ('a')") }
            #expect(try database.withConnection { try $0.query("SELECT count(*) FROM items").first?[0].integer } == 1)
            // 2 is FULL.
            #expect(try database.withConnection { try $0.query("PRAGMA synchronous").first?[0].integer } == 2)
            #expect(throws: (any Error).self) {
                _ = try database.writeWithoutSync { try $0.run("INSERT INTO items (name) VALUES ('a')") }
            }
            #expect(try database.withConnection { try $0.query("PRAGMA synchronous").first?[0].integer } == 2)
        }
    }

    @Test func aGroupOfWritesThatMaySkipTheDiskCommitsUnsyncedAndOneDurableWriteSyncsItsGroup() async throws {
        try await withTemporaryDirectory { dir in
            let database = try SQLiteDatabase(path: dir.appendingPathComponent("r.sqlite").path, migrations: schema)
            defer { database.close() }
            // What the commit will do, read inside each write: 1 is NORMAL, 2 FULL.
            let synchronous: @Sendable (SQLiteConnection) throws -> Int64? = { try $0.query("PRAGMA synchronous").first?[0].integer }
            #expect(try await database.write(durable: false) { try synchronous($0) } == 1)
            #expect(try await database.write { try synchronous($0) } == 2)
            // Writes waiting together: whichever group a durable one joins syncs,
            // and the relaxed ones of its group see FULL too.
            let seen = try await withThrowingTaskGroup(of: (Bool, Int64?).self) { group in
                for index in 0..<40 {
                    group.addTask {
                        let durable = index % 8 == 0
                        return (durable, try await database.write(durable: durable) { connection in
                            try connection.run("INSERT INTO items (name) VALUES (?)", ["item-\(index)"])
                            return try synchronous(connection)
                        })
                    }
                }
                var seen: [(Bool, Int64?)] = []
                for try await item in group { seen.append(item) }
                return seen
            }
            #expect(seen.filter(\.0).allSatisfy { $0.1 == 2 })
            #expect(seen.allSatisfy { $0.1 == 1 || $0.1 == 2 })
            // A failed relaxed write changes nothing, and FULL stays the setting.
            await #expect(throws: (any Error).self) {
                try await database.write(durable: false) { try $0.run("INSERT INTO items (name) VALUES ('item-1')") }
            }
            #expect(try database.withConnection { try synchronous($0) } == 2)
            #expect(try database.withConnection { try $0.query("SELECT count(*) FROM items").first?[0].integer } == 40)
        }
    }
}
