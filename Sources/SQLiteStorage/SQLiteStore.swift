import Foundation
import Glibc
public import IsletCore
import IsletSync
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

    /// What seals the credential columns; `nil` stores them as given.
    private let secrets: (any SecretSealer)?
    /// The writing connection's `total_changes` after its latest write.
    private let writtenRows = Lock<Int64>(0)

    /// Opens (creating and migrating) the store at `path`. The file, and the WAL and
    /// shared-memory files SQLite gives the same mode, are readable by their owner
    /// only (0600): one made here is created so, one found looser is tightened.
    /// With `secrets`, credentials are sealed as they are written and opened as they
    /// are read, and right after the migrations, in one transaction, the key is
    /// checked against the database's sealed values (`secretsKeyMismatch` when it
    /// does not open them) and the credentials still stored plain are sealed.
    public init(path: String, secrets: (any SecretSealer)? = nil) throws {
        self.secrets = secrets
        try Self.makeOwnerOnly(path)
        do {
            database = try SQLiteDatabase(path: path, migrations: IsletSchema.migrations)
        } catch let error as SQLiteError {
            throw error.storeError
        }
        guard secrets != nil else { return }
        do {
            _ = try sqlWrite { try $0.prepareSecrets() }
        } catch {
            database.close()
            throw error
        }
    }

    /// Creates the database file at `path` with mode 0600 when it is missing, before
    /// SQLite opens it (SQLite gives its WAL and shared-memory files the database's
    /// mode); tightens the file and those two to 0600 when they are open to others.
    private static func makeOwnerOnly(_ path: String) throws {
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        if fd >= 0 {
            Glibc.close(fd)
            return
        }
        guard errno == EEXIST else {
            throw StoreError(.unavailable, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
        for file in [path, path + "-wal", path + "-shm"] {
            var status = stat()
            guard stat(file, &status) == 0, status.st_mode & 0o077 != 0, (status.st_mode & S_IFMT) == S_IFREG else { continue }
            guard chmod(file, status.st_mode & 0o700) == 0 else {
                throw StoreError(.unavailable, "cannot make \(file) private (chmod 600): \(String(cString: strerror(errno)))")
            }
        }
    }

    /// Seals every credential again under `newSecrets` in one transaction (see
    /// `SQLSession.resealSecrets`): once it returns, only the new key opens the
    /// database. Answers how many credentials were sealed again.
    public func resealSecrets(under newSecrets: any SecretSealer) throws -> Int {
        try sqlWrite { try $0.resealSecrets(under: newSecrets) }
    }

    /// Runs `body`, which replaces credentials, on the shared SQL in one durable
    /// transaction on the calling thread, with `secure_delete` on: what it overwrites
    /// (plain credentials, values sealed under an old key) is zeroed in the file, not
    /// left in its free space.
    private func sqlWrite<T: Sendable>(_ body: (SQLSession) throws -> T) throws -> T {
        try mappingSQLiteErrors {
            try database.withConnection { connection in
                let previous = try connection.query("PRAGMA secure_delete", []).first?[0].integer ?? 0
                try connection.execute("PRAGMA secure_delete=ON")
                defer { try? connection.execute("PRAGMA secure_delete=\(previous)") }
                return try connection.transaction {
                    try body(SQLSession(executor: SQLiteExecutor(connection: connection), secrets: secrets))
                }
            }
        }
    }

    /// Runs `body` on the database's reading thread, with its reading connection.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        do {
            return try await database.read { [secrets] in try body(SQLSession(executor: SQLiteExecutor(connection: $0), secrets: secrets)) }
        } catch let error as SQLiteError {
            throw error.storeError
        }
    }

    /// Runs `body` in one transaction on the database's thread: everything it does is
    /// committed (and, when `durable`, synced to disk with the writes waiting beside
    /// it) before this returns, or nothing is.
    public func write<T: Sendable>(durable: Bool, _ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        do {
            return try await database.write(durable: durable) { try self.writing($0, body) }
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
                return try database.write { try self.writing($0, body) }
            }
            return try database.writeWithoutSync { try self.writing($0, body) }
        }
    }

    /// Runs a write's `body` on `connection`, then writes the events it emitted.
    private func writing<T>(_ connection: SQLiteConnection, _ body: (any StoreSession) throws -> T) throws -> T {
        let session = SQLSession(executor: SQLiteExecutor(connection: connection), secrets: secrets)
        let result = try body(session)
        try session.flushEvents()
        // The one writing connection's count, read on its thread.
        let changes = connection.totalChanges
        writtenRows.withLock { $0 = changes }
        return result
    }

    /// Rows the writing connection inserted, changed or deleted since the store
    /// opened (a transaction rolled back counts the statements it ran).
    public var rowsWritten: Int64? { writtenRows.withLock { $0 } }

    /// Runs `body` on the calling thread, with the database's reading connection.
    public func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try mappingSQLiteErrors {
            try database.withReader { try body(SQLSession(executor: SQLiteExecutor(connection: $0), secrets: secrets)) }
        }
    }

    /// One node, nothing to hear from others: the handler is never called.
    public func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void) {}

    /// Closes the database; later calls fail with `unavailable`.
    public func close() {
        database.close()
    }
}
