import IsletSync
import Foundation

/// Copies the write-ahead log back into the database file from a thread and a
/// connection of its own, once a second, without waiting for
/// readers or writers (`PRAGMA wal_checkpoint(PASSIVE)`). The main connection's
/// automatic checkpoints are turned off: they ran inside a commit, and a request
/// whose commit drew the checkpoint waited for the whole copy and its disk sync.
final class Checkpointer: Sendable {
    private let state = ConditionLock<(stopping: Bool, stopped: Bool)>((false, false))

    /// Starts checkpointing the database at `path` every `interval`.
    init(path: String, interval: TimeInterval = 1) throws {
        // Opened here so that a failure surfaces to the caller; the thread owns it
        // from then on.
        let connection = try SQLiteConnection(path: path)
        let owned = OwnedConnection(connection: connection)
        let thread = Thread { [self] in
            nameCurrentThread("islet-db-ckpt")  // from inside, see `DatabaseThread`
            self.loop(owned.connection, interval: interval)
        }
        thread.start()
    }

    /// Stops the thread and waits for it to finish its checkpoint.
    func stop() {
        state.withLockBroadcasting { $0.stopping = true }
        state.wait(until: { $0.stopped }) { _ in }
    }

    private func loop(_ connection: SQLiteConnection, interval: TimeInterval) {
        while true {
            let stopping = state.wait(until: { $0.stopping }, timeout: .seconds(interval)) { $0.stopping }
            if stopping { break }
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
