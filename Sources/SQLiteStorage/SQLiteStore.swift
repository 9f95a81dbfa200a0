import Foundation
import SQLStorage
public import Storage

/// Islet's registry and delivery queue on SQLite: apps, devices and their three
/// kinds of tokens, activities and their per-device copies, sends and pushes, and
/// idempotency records. Every method is one or a few SQL statements on a
/// ``SQLSession`` (the shared SQL) on an SQLite connection; callers compose them in one transaction with ``write(_:)``.
///
/// Every error it throws that comes from SQLite is a `StoreError` (see
/// `SQLiteError.storeError`); an error thrown by the caller's closure passes through
/// unchanged.
public final class SQLiteStore: Store {
    /// The database.
    public let database: SQLiteDatabase

    public var backend: String { "sqlite" }
    /// One process holds the file's only writer: no other node shares it.
    public var isShared: Bool { false }
    public var location: String { database.path }

    /// Opens (creating and migrating) the store at `path`.
    public init(path: String) throws {
        do {
            database = try SQLiteDatabase(path: path, migrations: IsletSchema.migrations)
        } catch let error as SQLiteError {
            throw error.storeError
        }
    }

    /// Runs `body` on the database's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        do {
            return try await database.read { try body(SQLSession(executor: SQLiteExecutor(connection: $0))) }
        } catch let error as SQLiteError {
            throw error.storeError
        }
    }

    /// Runs `body` in one transaction on the database's thread: everything it does is
    /// committed (and synced to disk) before this returns, or nothing is.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        do {
            return try await database.write { try Self.writing($0, body) }
        } catch let error as SQLiteError {
            throw error.storeError
        }
    }

    /// Runs `body` in one transaction on the calling thread (for the delivery
    /// worker, which has a thread of its own). `durable: false` commits without
    /// waiting for the disk (see `SQLiteDatabase.writeWithoutSync`): for what a
    /// restart redoes safely, such as pushes marked in flight or their answers (a
    /// push whose answer was lost is sent again, with the same `apns-id`).
    public func writeNow<T: Sendable>(durable: Bool, _ body: (any StoreSession) throws -> T) throws -> T {
        try mappingSQLiteErrors {
            if durable {
                return try database.write { try Self.writing($0, body) }
            }
            return try database.writeWithoutSync { try Self.writing($0, body) }
        }
    }

    /// Runs a write's `body` on `connection`, then writes the events it emitted.
    private static func writing<T>(_ connection: SQLiteConnection, _ body: (any StoreSession) throws -> T) throws -> T {
        let session = SQLSession(executor: SQLiteExecutor(connection: connection))
        let result = try body(session)
        try session.flushEvents()
        return result
    }

    /// Runs `body` on the calling thread.
    public func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try mappingSQLiteErrors {
            try database.withConnection { try body(SQLSession(executor: SQLiteExecutor(connection: $0))) }
        }
    }

    /// One node, nothing to hear from others: the handler is never called.
    public func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void) {}

    /// Closes the database; later calls fail with `unavailable`.
    public func close() {
        database.close()
    }
}
