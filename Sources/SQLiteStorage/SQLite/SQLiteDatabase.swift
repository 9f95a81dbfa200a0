import IsletSync
import Foundation
public import SQLStorage

/// An SQLite database file with two connections: one that writes (and reads within
/// its writes), which callers share in turn, and one that only reads (`read`,
/// `readNow`). In WAL mode the reader sees the last commit without waiting for the
/// writer, and holds no writer up: a long read (the event feed's) never stalls a
/// commit, nor a commit's disk sync a read. `Sendable`: each connection sits behind
/// a `Lock`, so exactly one thread uses it at a time, as SQLite's no-mutex mode
/// requires. Async callers hand their work to a thread of the database's own (writes
/// to `islet-db`, reads to `islet-db-read`), so that a commit's disk sync never
/// blocks the cooperative thread pool. A read-only database has its one connection.
///
/// Async writes are committed in groups: the writes waiting when the thread gets to
/// them run in one transaction, each in a savepoint of its own (a write that throws
/// rolls back alone), and one commit (one disk sync) makes them all durable before
/// any caller is answered.
public final class SQLiteDatabase: Sendable {
    /// The file's path.
    public let path: String
    private let connection: Lock<SQLiteConnection?>
    private let thread: DatabaseThread
    /// The connection that only reads (`PRAGMA query_only`); nil once closed, and
    /// for a read-only database, whose one connection reads.
    private let reader: Lock<SQLiteConnection?>
    /// Where async reads run; nil for a read-only database.
    private let readThread: DatabaseThread?
    private let synchronousFull: Bool
    private let checkpointer: Checkpointer?
    private let pendingWrites = Lock<(jobs: [PendingWrite], scheduled: Bool)>(([], false))

    /// One async write waiting for its group: `perform` runs it in a savepoint and
    /// answers how to answer the caller once the group's commit is known; `fail`
    /// answers a write that never ran.
    private struct PendingWrite: Sendable {
        /// Whether its commit waits for the disk (a group's does when any of its
        /// writes does).
        let durable: Bool
        let perform: @Sendable (SQLiteConnection) -> @Sendable ((any Error)?) -> Void
        let fail: @Sendable (any Error) -> Void
    }

    /// Opens (creating if needed) the database at `path` and applies `migrations`.
    public init(path: String, options: SQLiteOptions = SQLiteOptions(), migrations: [Migration] = []) throws {
        self.path = path
        let opened = try SQLiteConnection(path: path, options: options)
        if !migrations.isEmpty {
            try Migrator(migrations: migrations).migrate(opened)
        }
        if !options.readOnly {
            try opened.execute("PRAGMA wal_autocheckpoint=0")
        }
        let connection = Lock<SQLiteConnection?>(opened)
        if !options.readOnly {
            // What a copy beside the writers left, copied while holding the writer:
            // no commit can come between it and the next write, which starts the log
            // again from its beginning.
            checkpointer = try Checkpointer(path: path) {
                connection.withLock { connection in
                    if let connection { Checkpointer.copy(connection) }
                }
            }
        } else {
            checkpointer = nil
        }
        if options.readOnly {
            reader = Lock(nil)
            readThread = nil
        } else {
            let reading = try SQLiteConnection(path: path, options: options)
            try reading.execute("PRAGMA query_only=ON")
            reader = Lock(reading)
            readThread = DatabaseThread(name: "islet-db-read")
        }
        self.connection = connection
        thread = DatabaseThread(name: "islet-db")
        synchronousFull = options.synchronousFull
    }

    /// Runs `body` with the reading connection (the one connection of a read-only
    /// database), holding it for the duration, in one read transaction: every
    /// statement of `body` sees the same commit, as when reads and writes took turns
    /// on one connection. `body` must only read.
    public func withReader<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        guard readThread != nil else { return try withConnection(body) }
        return try reader.withLock { (reader: inout SQLiteConnection?) throws -> T in
            guard let reader else {
                throw SQLiteError(code: .closed, message: "the database is closed")
            }
            try reader.execute("BEGIN")
            do {
                let value = try body(reader)
                try reader.execute("COMMIT")
                return value
            } catch {
                try? reader.execute("ROLLBACK")
                throw error
            }
        }
    }

    /// Runs `body` with the connection, holding it for the duration.
    public func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try connection.withLock { (connection: inout SQLiteConnection?) throws -> T in
            guard let connection else {
                throw SQLiteError(code: .closed, message: "the database is closed")
            }
            return try body(connection)
        }
    }

    /// Runs `body` in an immediate transaction (see `SQLiteConnection.transaction`).
    public func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` in an immediate transaction whose commit does not wait for the disk
    /// (`PRAGMA synchronous=NORMAL` for this one transaction): it survives a crash of
    /// the process, and a power loss once any later durable commit has synced. For
    /// bookkeeping that is safe to redo, such as marking pushes in flight.
    public func writeWithoutSync<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in
            try relaxingSync(connection, true) { try connection.transaction { try body(connection) } }
        }
    }

    /// Runs `body` with `connection`'s commits not waiting for the disk
    /// (`PRAGMA synchronous=NORMAL`) when `relaxed` and the database syncs fully,
    /// then full sync again.
    private func relaxingSync<T>(_ connection: SQLiteConnection, _ relaxed: Bool, _ body: () throws -> T) throws -> T {
        guard relaxed && synchronousFull else { return try body() }
        try connection.execute("PRAGMA synchronous=NORMAL")
        defer { try? connection.execute("PRAGMA synchronous=FULL") }
        return try body()
    }

    /// Runs `body` with the reading connection on the database's reading thread.
    /// `body` must only read.
    public func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            (readThread ?? thread).submit {
                continuation.resume(with: Result { try self.withReader(body) })
            }
        }
    }

    /// Runs `body` in a transaction on the database's thread: committed (and, when
    /// `durable`, synced) before this returns, rolled back when it throws. Writes
    /// waiting together share one commit, each in its own savepoint; the commit waits
    /// for the disk when any of them is durable (see `writeWithoutSync` for one that
    /// is not).
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await write(durable: true, body)
    }

    /// `write`, whose commit may skip the disk's wait when `durable` is false.
    public func write<T: Sendable>(
        durable: Bool, _ body: @escaping @Sendable (SQLiteConnection) throws -> T
    ) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            let job = PendingWrite(
                durable: durable,
                perform: { connection in
                    do {
                        try connection.execute("SAVEPOINT islet_write")
                    } catch {
                        return { _ in continuation.resume(throwing: error) }
                    }
                    do {
                        let value = try body(connection)
                        try connection.execute("RELEASE islet_write")
                        return { commitError in
                            if let commitError {
                                continuation.resume(throwing: commitError)
                            } else {
                                continuation.resume(returning: value)
                            }
                        }
                    } catch {
                        try? connection.execute("ROLLBACK TO islet_write")
                        try? connection.execute("RELEASE islet_write")
                        return { _ in continuation.resume(throwing: error) }
                    }
                },
                fail: { continuation.resume(throwing: $0) })
            let schedule = pendingWrites.withLock { pending -> Bool in
                pending.jobs.append(job)
                defer { pending.scheduled = true }
                return !pending.scheduled
            }
            if schedule { thread.submit { self.commitPendingWrites() } }
        }
    }

    /// Runs every waiting write in one transaction and answers them after the commit.
    private func commitPendingWrites() {
        let batch = pendingWrites.withLock { pending -> [PendingWrite] in
            defer {
                pending.jobs = []
                pending.scheduled = false
            }
            return pending.jobs
        }
        guard !batch.isEmpty else { return }
        var answers: [@Sendable ((any Error)?) -> Void] = []
        answers.reserveCapacity(batch.count)
        do {
            // Only writes that may skip the disk's wait: their commit skips it.
            try withConnection { connection in try relaxingSync(connection, !batch.contains(where: \.durable)) {
                try connection.execute("BEGIN IMMEDIATE")
                for job in batch { answers.append(job.perform(connection)) }
                do {
                    try connection.execute("COMMIT")
                } catch {
                    try? connection.execute("ROLLBACK")
                    throw error
                }
            } }
        } catch {
            for answer in answers { answer(error) }
            for job in batch.dropFirst(answers.count) { job.fail(error) }
            return
        }
        for answer in answers { answer(nil) }
    }

    deinit {
        checkpointer?.stop()
    }

    /// Closes the connection, checkpointing the WAL into the main file. Later calls
    /// fail with `closed`.
    public func close() {
        checkpointer?.stop()
        readThread?.stop()
        reader.withLock { $0 = nil }
        connection.withLock { connection in
            try? connection?.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection = nil
        }
        thread.stop()
    }
}
