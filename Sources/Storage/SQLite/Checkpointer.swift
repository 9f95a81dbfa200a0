import Foundation
import Synchronization

/// Copies the write-ahead log back into the database file from a thread and a
/// connection of its own, once a second, without waiting for
/// readers or writers (`PRAGMA wal_checkpoint(PASSIVE)`). The main connection's
/// automatic checkpoints are turned off: they ran inside a commit, and a request
/// whose commit drew the checkpoint waited for the whole copy and its disk sync.
final class Checkpointer: Sendable {
    private let condition = NSCondition()
    private let state = Mutex<(stopping: Bool, stopped: Bool)>((false, false))

    /// Starts checkpointing the database at `path` every `interval`.
    init(path: String, interval: TimeInterval = 1) throws {
        // Opened here so that a failure surfaces to the caller; the thread owns it
        // from then on.
        let connection = try SQLiteConnection(path: path)
        let owned = OwnedConnection(connection: connection)
        let thread = Thread { [self] in
            Thread.current.name = "islet-db-ckpt"  // from inside, see `DatabaseThread`
            self.loop(owned.connection, interval: interval)
        }
        thread.start()
    }

    /// Stops the thread and waits for it to finish its checkpoint.
    func stop() {
        condition.lock()
        state.withLock { $0.stopping = true }
        condition.broadcast()
        while !state.withLock({ $0.stopped }) { condition.wait() }
        condition.unlock()
    }

    private func loop(_ connection: SQLiteConnection, interval: TimeInterval) {
        while true {
            condition.lock()
            if !state.withLock({ $0.stopping }) {
                _ = condition.wait(until: Date().addingTimeInterval(interval))
            }
            let stopping = state.withLock { $0.stopping }
            condition.unlock()
            if stopping { break }
            try? connection.execute("PRAGMA wal_checkpoint(PASSIVE)")
        }
        condition.lock()
        state.withLock { $0.stopped = true }
        condition.broadcast()
        condition.unlock()
    }
}

/// Carries the checkpointer's connection to its thread. `@unchecked Sendable`: it is
/// handed over once, before the thread starts, and used by that thread alone.
private final class OwnedConnection: @unchecked Sendable {
    let connection: SQLiteConnection
    init(connection: SQLiteConnection) { self.connection = connection }
}
