import Foundation
import Synchronization

/// An SQLite database file with one connection that every caller shares in turn.
/// `Sendable`: the connection sits behind a `Mutex`, so exactly one thread uses it at
/// a time, as SQLite's no-mutex mode requires. Async callers hand their work to the
/// database's own thread (`read`, `write`), so that a commit's disk sync never blocks
/// the cooperative thread pool.
public final class SQLiteDatabase: Sendable {
    /// The file's path.
    public let path: String
    private let connection: Mutex<SQLiteConnection?>
    private let thread: DatabaseThread

    /// Opens (creating if needed) the database at `path` and applies `migrations`.
    public init(path: String, options: SQLiteOptions = SQLiteOptions(), migrations: [Migration] = []) throws {
        self.path = path
        let opened = try SQLiteConnection(path: path, options: options)
        if !migrations.isEmpty {
            try Migrator(migrations: migrations).migrate(opened)
        }
        connection = Mutex(opened)
        thread = DatabaseThread(name: "islet-db")
    }

    /// Runs `body` with the connection, holding it for the duration.
    public func withConnection<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try connection.withLock { (connection: inout SQLiteConnection?) throws -> T in
            guard let connection else {
                throw SQLiteError(code: .misuse, message: "the database is closed")
            }
            return try body(connection)
        }
    }

    /// Runs `body` in an immediate transaction (see `SQLiteConnection.transaction`).
    public func write<T: Sendable>(_ body: (SQLiteConnection) throws -> T) throws -> T {
        try withConnection { connection in try connection.transaction { try body(connection) } }
    }

    /// Runs `body` with the connection on the database's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.submit {
                continuation.resume(with: Result { try self.withConnection(body) })
            }
        }
    }

    /// Runs `body` in an immediate transaction on the database's thread: committed
    /// when it returns, rolled back when it throws.
    public func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            thread.submit {
                continuation.resume(with: Result { try self.write(body) })
            }
        }
    }

    /// Closes the connection, checkpointing the WAL into the main file. Later calls
    /// fail with `misuse`.
    public func close() {
        connection.withLock { connection in
            try? connection?.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            connection = nil
        }
        thread.stop()
    }
}
