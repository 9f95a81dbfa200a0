import IsletBackground
import IsletSync
import Foundation
import IsletThreads

/// Copies the write-ahead log back into the database file from a thread and a
/// connection of its own, once a second of its sleeper's clock, without waiting for
/// readers or writers (`PRAGMA wal_checkpoint(PASSIVE)`). The main connection's
/// automatic checkpoints are turned off: they ran inside a commit, and a request
/// whose commit drew the checkpoint waited for the whole copy and its disk sync.
///
/// It keeps a thread (each checkpoint blocks in SQLite) and the store's synchronous
/// close stops it; its pace is its `Sleeper`'s and a stop rings its doorbell.
final class Checkpointer: Sendable {
    private let state = ConditionLock<(stopping: Bool, stopped: Bool)>((false, false))
    private let stopBell = Doorbell()

    /// Starts checkpointing the database at `path` every `interval` of `sleeper`.
    init(path: String, interval: TimeInterval = 1, sleeper: any Sleeper = SystemSleeper()) throws {
        // Opened here so that a failure surfaces to the caller; the thread owns it
        // from then on.
        let connection = try SQLiteConnection(path: path)
        let owned = OwnedConnection(connection: connection)
        let thread = Thread { [self] in
            nameCurrentThread("islet-db-ckpt")  // from inside, see `DatabaseThread`
            self.loop(owned.connection, interval: interval, sleeper: sleeper)
        }
        thread.start()
    }

    /// Stops the thread and waits for it to finish its checkpoint.
    func stop() {
        state.withLock { $0.stopping = true }
        stopBell.ring()
        state.wait(until: { $0.stopped }) { _ in }
    }

    private func loop(_ connection: SQLiteConnection, interval: TimeInterval, sleeper: any Sleeper) {
        while true {
            sleeper.block(for: interval, doorbell: stopBell)
            if state.withLock({ $0.stopping }) { break }
            try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
        state.withLockBroadcasting { $0.stopped = true }
    }
}

/// Carries the checkpointer's connection to its thread. `@unchecked Sendable`: it is
/// handed over once, before the thread starts, and used by that thread alone.
private final class OwnedConnection: @unchecked Sendable {
    let connection: SQLiteConnection
    init(connection: SQLiteConnection) { self.connection = connection }
}
