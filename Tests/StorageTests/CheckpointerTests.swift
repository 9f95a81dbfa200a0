import Foundation
import IsletBackground
import IsletCore
import IsletSync
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

    /// Beside a writer that keeps writing, a copy of the log never catches up with it
    /// (a write is under way when the copy ends, or frames committed during the copy
    /// are left), so the log would never start again and grow without end; the
    /// catch-up, run while holding the writer, copies what is left, and the next
    /// write starts the log again. Each start raises the checkpoint sequence number
    /// in the log's header: a checkpoint round followed by writes raises it, but for
    /// a start missed now and then.
    @Test func aLogWrittenAllAlongStartsAgainAfterCheckpoints() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("busy.sqlite").path
            var options = SQLiteOptions()
            options.synchronousFull = false
            let writer = Lock<SQLiteConnection?>(try SQLiteConnection(path: path, options: options))
            try writer.withLock { connection in
                try connection?.execute("PRAGMA wal_autocheckpoint=0")
                try connection?.execute("CREATE TABLE t (v BLOB)")
            }
            let written = Lock(0)
            let stopping = Lock(false)
            // A write every few hundred microseconds, many during each copy (which
            // syncs the database file); the pause lets the catch-up take the writer's
            // lock, which a loop that took it again at once could keep from it.
            let writing = Thread {
                while !stopping.withLock({ $0 }) {
                    writer.withLock { connection in
                        try? connection?.execute("INSERT INTO t VALUES (randomblob(4096))")
                    }
                    written.withLock { $0 += 1 }
                    usleep(200)
                }
            }
            writing.start()
            // Stopped first, then the checkpointer (whose catch-up waits for the
            // writer's lock), on every way out of the test.
            func stopWriting() {
                stopping.withLock { $0 = true }
                while !writing.isFinished { usleep(1_000) }
            }
            defer { stopWriting() }
            func checkpointSequence() throws -> UInt32 {
                let header = try Data(contentsOf: URL(fileURLWithPath: path + "-wal")).prefix(16)
                return header.suffix(4).reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            }
            func writes(after count: Int) async -> Bool {
                await eventually { written.withLock { $0 } >= count + 50 }
            }
            #expect(await writes(after: 0))
            let clock = ManualWallClock()
            let checkpointer = try Checkpointer(path: path, interval: 1, sleeper: clock, restartAfterFrames: 10) {
                writer.withLock { connection in
                    if let connection { Checkpointer.copy(connection) }
                }
            }
            defer {
                stopWriting()
                checkpointer.stop()
            }
            #expect(await clock.waitForSleepers(after: 0))
            let before = try checkpointSequence()
            let rounds = 8
            for _ in 0..<rounds {
                let mark = clock.lastWatch
                let count = written.withLock { $0 }
                clock.advance(by: 1)
                #expect(await clock.waitForSleepers(after: mark))  // The round is over.
                #expect(await writes(after: count))
            }
            stopWriting()
            // A start can still be missed (it needs every reader's lock for a moment,
            // and the next round makes up for it); without the catch-up, almost all
            // of them are.
            #expect(try checkpointSequence() - before >= UInt32(rounds / 2))
        }
    }
}
