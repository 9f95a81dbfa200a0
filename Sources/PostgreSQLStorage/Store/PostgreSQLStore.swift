import Foundation
public import IsletBackground
public import IsletCore
import IsletSync
import SQLStorage
public import Storage

/// Islet's registry and delivery queue on PostgreSQL, shared by every node that
/// names the same database: the statements are the shared ones (`SQLSession`),
/// run on a pool of connections.
///
/// Transactions run at PostgreSQL's default isolation (read committed); what
/// depends on a row read first locks it (`lockedActivity`), claims skip the rows
/// another node is claiming, and idempotency answers are inserted once (a second
/// insert is a `conflict` the service answers by reading the first). Reads run at
/// repeatable read, one snapshot for all their statements.
///
/// A transaction PostgreSQL rolled back on a deadlock or a serialization failure,
/// or one whose connection was lost before it was committed, is run again (up to
/// three times, after a pause on the store's `Sleeper` that grows with each attempt);
/// a connection lost while committing is `unavailable` (the commit may or may not
/// have happened; an `Idempotency-Key` makes the retry safe).
public final class PostgreSQLStore: Store {
    public var backend: String { "postgresql" }
    /// Several nodes may share the database.
    public var isShared: Bool { true }
    /// The URL, its password hidden.
    public let location: String

    private let pool: ConnectionPool
    private let workers: WorkerThreads
    private let listener: NoticeListener
    private let closed = Lock(false)
    /// What seals the credential columns; `nil` stores them as given.
    private let secrets: (any SecretSealer)?
    /// Paces the pause before a transaction is run again, and the listener's
    /// reconnections.
    private let sleeper: any Sleeper

    /// Connects to `url` (checking that the server answers and the password is
    /// accepted), brings the schema up to date under an advisory lock, and starts
    /// the pool (`poolSize` connections at most) and the notice listener.
    /// `applicationName` names the connections in `pg_stat_activity`. With
    /// `secrets`, credentials are sealed as they are written and opened as they are
    /// read, and right after the migrations, in one transaction, the key is checked
    /// against the database's sealed values (`secretsKeyMismatch` when it does not
    /// open them) and the credentials still stored plain are sealed. `sleeper`
    /// times the pauses before a transaction is run again and between the
    /// listener's reconnections.
    public init(
        url text: String, poolSize: Int = 8, applicationName: String = "islet", secrets: (any SecretSealer)? = nil,
        sleeper: any Sleeper = SystemSleeper()
    ) throws {
        let url = try PostgresURL(text)
        location = url.description
        self.secrets = secrets
        self.sleeper = sleeper
        pool = ConnectionPool(url: url, size: poolSize, applicationName: applicationName)
        let channel: String
        do {
            channel = try pool.withConnection { connection -> String in
                guard try connection.query("SELECT current_schema() AS name").first?["name"].text != nil else {
                    throw StoreError(.unavailable, "the connection has no schema to create Islet's tables in (check search_path)")
                }
                try PostgresMigrator.migrate(connection, migrations: PostgresSchema.migrations)
                if let secrets {
                    _ = try Self.inTransaction(connection, secrets: secrets) { try $0.prepareSecrets() }
                }
                guard let channel = try connection.query("SELECT \(raw: SQLSession.channelSQL) AS channel").first?["channel"].text
                else { throw StoreError(.corrupt, "the server named no notice channel") }
                return channel
            }
        } catch {
            pool.close()
            throw error
        }
        workers = WorkerThreads(count: pool.size, name: "islet-pg")
        listener = NoticeListener(url: url, channel: channel, applicationName: applicationName, sleeper: sleeper)
    }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await onWorker { try self.transaction(.read, body) }
    }

    /// `durable: false` commits without waiting for the server's disk
    /// (`synchronous_commit = off` for the transaction).
    public func write<T: Sendable>(durable: Bool, _ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await onWorker { try self.transaction(.write(durable: durable), body) }
    }

    public func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try transaction(.read, body)
    }

    /// `durable: false` commits without waiting for the server's disk
    /// (`synchronous_commit = off` for the transaction).
    public func writeNow<T: Sendable>(durable: Bool, _ body: (any StoreSession) throws -> T) throws -> T {
        try transaction(.write(durable: durable), body)
    }

    /// Seals every credential again under `newSecrets` in one transaction (see
    /// `SQLSession.resealSecrets`): once it returns, only the new key opens the
    /// database. Answers how many credentials were sealed again.
    public func resealSecrets(under newSecrets: any SecretSealer) throws -> Int {
        try pool.withConnection { connection in
            try Self.inTransaction(connection, secrets: secrets) { try $0.resealSecrets(under: newSecrets) }
        }
    }

    /// Runs `body` on the shared SQL in one transaction on `connection`.
    private static func inTransaction<T>(
        _ connection: PostgresConnection, secrets: (any SecretSealer)?, _ body: (SQLSession) throws -> T
    ) throws -> T {
        connection.begin(["BEGIN"])
        do {
            let result = try body(SQLSession(executor: connection, secrets: secrets))
            try connection.commit()
            return result
        } catch {
            connection.rollback()
            throw error
        }
    }

    public func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void) {
        listener.subscribe(handler)
    }

    public func close() {
        let wasClosed = closed.withLock { closed -> Bool in
            defer { closed = true }
            return closed
        }
        guard !wasClosed else { return }
        listener.stop()
        workers.stop()
        pool.close()
    }

    // MARK: - Transactions

    private enum Kind {
        case read
        case write(durable: Bool)

        var begin: [String] {
            switch self {
            case .read: ["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"]
            case .write(durable: true): ["BEGIN"]
            case .write(durable: false): ["BEGIN", "SET LOCAL synchronous_commit = off"]
            }
        }
    }

    /// Runs `body` on a worker thread and answers its result.
    private func onWorker<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            workers.submit { continuation.resume(with: Result { try body() }) }
        }
    }

    /// Attempts of one transaction, at most.
    static let attempts = 3

    /// The pause before running again a transaction PostgreSQL rolled back on a
    /// deadlock or a serialization failure, after `attempt` attempts: 2 ms a
    /// failed attempt, so that the transactions that collided do not collide again.
    static func busyBackoff(afterAttempt attempt: Int) -> TimeInterval {
        0.002 * TimeInterval(attempt)
    }

    private func transaction<T>(_ kind: Kind, _ body: (any StoreSession) throws -> T) throws -> T {
        var attempt = 0
        while true {
            attempt += 1
            var committing = false
            do {
                return try pool.withConnection { connection -> T in
                    // Sent with the first statement, in one round trip.
                    connection.begin(kind.begin)
                    do {
                        let session = SQLSession(executor: connection, secrets: secrets)
                        let result = try body(session)
                        try session.flushEvents()
                        committing = true
                        try connection.commit()
                        return result
                    } catch {
                        connection.rollback()
                        throw error
                    }
                }
            } catch let error as StoreError {
                switch error.code {
                case .busy where attempt < Self.attempts:
                    // Rolled back by a deadlock or serialization failure: run it again
                    // after a short pause (each attempt waits longer).
                    sleeper.block(for: Self.busyBackoff(afterAttempt: attempt))
                    continue
                case .unavailable where committing:
                    throw StoreError(
                        .unavailable,
                        "database unavailable: the connection was lost while committing, so the change may or may not have been made (\(error.message))")
                case .unavailable where attempt < Self.attempts && !isClosed:
                    // Lost before the commit: nothing was made; run it again on a
                    // fresh connection.
                    continue
                default:
                    throw error
                }
            }
        }
    }

    private var isClosed: Bool { closed.withLock { $0 } }
}
