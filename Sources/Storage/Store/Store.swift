import Foundation
import IsletCore

/// Islet's registry and delivery queue on SQLite: apps, devices and their three
/// kinds of tokens, activities and their per-device copies, sends and pushes, and
/// idempotency records. Every method is one or a few SQL statements on a
/// ``StoreSession``; callers compose them in one transaction with ``write(_:)``.
public final class SQLiteStore: Store {
    /// The database.
    public let database: SQLiteDatabase

    public var backend: String { "sqlite" }
    public var location: String { database.path }

    /// Opens (creating and migrating) the store at `path`.
    public init(path: String) throws {
        database = try SQLiteDatabase(path: path, migrations: IsletSchema.migrations)
    }

    /// Runs `body` on the database's thread.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await database.read { try body(SQLiteSession(connection: $0)) }
    }

    /// Runs `body` in one transaction on the database's thread: everything it does is
    /// committed (and synced to disk) before this returns, or nothing is.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await database.write { try body(SQLiteSession(connection: $0)) }
    }

    /// Runs `body` in one transaction on the calling thread (for the delivery
    /// worker, which has a thread of its own). `durable: false` commits without
    /// waiting for the disk (see `SQLiteDatabase.writeWithoutSync`): for what a
    /// restart redoes safely, such as pushes marked in flight or their answers (a
    /// push whose answer was lost is sent again, with the same `apns-id`).
    public func writeNow<T: Sendable>(durable: Bool, _ body: (any StoreSession) throws -> T) throws -> T {
        if durable {
            return try database.write { try body(SQLiteSession(connection: $0)) }
        }
        return try database.writeWithoutSync { try body(SQLiteSession(connection: $0)) }
    }

    /// Runs `body` on the calling thread.
    public func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try database.withConnection { try body(SQLiteSession(connection: $0)) }
    }

    /// Closes the database.
    public func close() {
        database.close()
    }
}

/// The store's operations on one SQLite connection, inside a `read` or `write`.
public struct SQLiteSession: StoreSession {
    let connection: SQLiteConnection

    init(connection: SQLiteConnection) {
        self.connection = connection
    }

    /// Answers when the database does (a health check).
    public func ping() throws {
        _ = try query("SELECT 1")
    }

    public func schemaVersion() throws -> Int {
        try Migrator.currentVersion(connection)
    }

    func query(_ sql: String, _ values: [any SQLiteBindable] = []) throws -> [SQLiteRow] {
        try connection.query(sql, values)
    }

    @discardableResult
    func run(_ sql: String, _ values: [any SQLiteBindable] = []) throws -> Int {
        try connection.run(sql, values)
    }

    /// The values as a JSON array, for `json_each(?)`: one bound parameter however
    /// long the list.
    static func jsonArray(_ values: [String]) -> String {
        JSONValue.array(values.map(JSONValue.string)).jsonText
    }
}

extension SQLiteRow {
    func string(_ name: String) throws -> String {
        guard let text = self[name].text else { throw StoreError(.corrupt, "column \(name) is not text") }
        return text
    }

    func optionalString(_ name: String) -> String? { self[name].text }

    func int64(_ name: String) throws -> Int64 {
        guard let value = self[name].integer else { throw StoreError(.corrupt, "column \(name) is not an integer") }
        return value
    }

    func optionalInt64(_ name: String) -> Int64? { self[name].integer }

    func date(_ name: String) throws -> Date { Date(unixMilliseconds: try int64(name)) }

    func optionalDate(_ name: String) -> Date? { self[name].integer.map(Date.init(unixMilliseconds:)) }

    func json(_ name: String) throws -> JSONValue? {
        guard let text = self[name].text else { return nil }
        do {
            return try JSONValue(parsing: Data(text.utf8))
        } catch {
            throw StoreError(.corrupt, "column \(name) holds JSON that does not parse")
        }
    }

    func enumValue<T: RawRepresentable>(_ name: String, as type: T.Type) throws -> T where T.RawValue == String {
        let text = try string(name)
        guard let value = T(rawValue: text) else { throw StoreError(.corrupt, "column \(name) holds \(text)") }
        return value
    }
}
