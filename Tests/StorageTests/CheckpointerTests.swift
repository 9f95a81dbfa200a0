import Foundation
import IsletBackground
import IsletCore
import IsletTesting
@testable import SQLiteStorage
import Testing

/// The store's own threads on a manual clock: the checkpointer copies the WAL when
/// the clock moves a second, never by real time; a stop ends its wait at once (a stop
/// that no longer does fails the test at its time limit instead of hanging the suite).
@Suite("Checkpointer on a manual clock", .timeLimit(.minutes(1)))
struct CheckpointerTests {
    @Test func theCheckpointerCopiesTheLogWhenTheClockMovesAndStopsWithoutIt() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("wal.sqlite").path
            let writer = try SQLiteConnection(path: path)
            try writer.execute("PRAGMA wal_autocheckpoint=0")
            try writer.execute("CREATE TABLE t (v BLOB)")
            for _ in 0..<20 { try writer.execute("INSERT INTO t VALUES (randomblob(4096))") }
            func mainFileSize() throws -> Int {
                (try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
            }
            let before = try mainFileSize()
            let clock = ManualWallClock()
            let mark = clock.lastWatch
            let checkpointer = try Checkpointer(path: path, interval: 1, sleeper: clock)
            #expect(await clock.waitForSleepers(after: mark))
            #expect(try mainFileSize() == before)  // Asleep: nothing copied yet.
            let moved = clock.lastWatch
            clock.advance(by: 1)
            #expect(await clock.waitForSleepers(after: moved))  // One checkpoint, then asleep again.
            #expect(try mainFileSize() > before + 20 * 4096)
            checkpointer.stop()  // The clock never moves again: the stop ends the wait.
        }
    }
}
