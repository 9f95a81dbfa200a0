import IsletBackground
import IsletSync
import Foundation
import IsletThreads

/// Copies the write-ahead log back into the database file from a thread and a
/// connection of its own, four times a second of its sleeper's clock (once a second
/// let the log grow by tens of megabytes under load, and each copy's disk sync held
/// up the commits' own for longer), without waiting for readers or writers
/// (`PRAGMA wal_checkpoint(PASSIVE)`). The main connection's
/// automatic checkpoints are turned off: they ran inside a commit, and a request
/// whose commit drew the checkpoint waited for the whole copy and its disk sync.
///
/// Beside a writer that never pauses, the log would never start again from its
/// beginning: only a write transaction that begins when every frame is copied
/// starts it, and one always began before the copy ended (or frames committed during
/// the copy are left over). It grew without end (2.6 GB in 80 s of registrations),
/// every commit extending the file, whose disk sync then also writes the file
/// system's journal. So when a copy finds a log of `restartAfterFrames` or more,
/// `catchUp` runs: the database copies what is left while it holds its writer (no
/// transaction is under way then; what is left is a few frames and one disk sync, or
/// nothing), so that the next write starts the log again.
///
/// It keeps a thread (each checkpoint blocks in SQLite) and the store's synchronous
/// close stops it; its pace is its `Sleeper`'s and a stop rings its doorbell.
final class Checkpointer: Sendable {
    private let state = ConditionLock<(stopping: Bool, stopped: Bool)>((false, false))
    private let stopBell = Doorbell()

    /// Starts checkpointing the database at `path` every `interval` of `sleeper`;
    /// `catchUp` runs after a copy that found `restartAfterFrames` frames or more.
    init(
        path: String, interval: TimeInterval = 0.25, sleeper: any Sleeper = SystemSleeper(),
        restartAfterFrames: Int = 1_000, catchUp: @escaping @Sendable () -> Void = {}
    ) throws {
        // Opened here so that a failure surfaces to the caller; the thread owns it
        // from then on.
        let connection = try SQLiteConnection(path: path)
        let owned = OwnedConnection(connection: connection)
        let thread = Thread { [self] in
            nameCurrentThread("islet-db-ckpt")  // from inside, see `DatabaseThread`
            self.loop(interval: interval, sleeper: sleeper) {
                if Checkpointer.copy(owned.connection) >= restartAfterFrames { catchUp() }
            }
        }
        thread.start()
    }

    /// Stops the thread and waits for it to finish its checkpoint.
    func stop() {
        state.withLock { $0.stopping = true }
        stopBell.ring()
        state.wait(until: { $0.stopped }) { _ in }
    }

    private func loop(interval: TimeInterval, sleeper: any Sleeper, round: () -> Void) {
        while true {
            sleeper.block(for: interval, doorbell: stopBell)
            if state.withLock({ $0.stopping }) { break }
            round()
        }
        state.withLockBroadcasting { $0.stopped = true }
    }

    /// Copies what the log holds into the database file without waiting for anyone
    /// (`PASSIVE`); answers how many frames the log holds (0 when the copy failed).
    @discardableResult
    static func copy(_ connection: SQLiteConnection) -> Int {
        guard let row = try? connection.query("PRAGMA wal_checkpoint(PASSIVE)", []).first,
            let frames = row[1].integer, frames > 0
        else { return 0 }
        return Int(frames)
    }
}

/// Carries the checkpointer's connection to its thread. `@unchecked Sendable`: it is
/// handed over once, before the thread starts, and used by that thread alone.
private final class OwnedConnection: @unchecked Sendable {
    let connection: SQLiteConnection
    init(connection: SQLiteConnection) { self.connection = connection }
}
