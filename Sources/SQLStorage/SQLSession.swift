import Foundation
public import IsletCore
public import Storage

/// The store's operations in SQL, on one connection of any SQL backend inside a
/// transaction: every statement is an ``SQL`` that the connection (an
/// ``SQLExecutor``) renders for its own dialect. Written once, so that SQLite and
/// PostgreSQL keep the same rules; where the two must differ (claiming pushes from
/// several nodes at once, notifying other nodes) the session asks its dialect.
public struct SQLSession: StoreSession {
    /// The connection, in a transaction.
    let executor: any SQLExecutor
    /// The events emitted, written right before the commit.
    let outbox = EventOutbox()
    /// What seals the credential columns (APNs private keys, webhook secrets) as they
    /// are written and opens them as they are read; `nil` stores them as given.
    let secrets: (any SecretSealer)?
    /// Which SQL it speaks.
    var dialect: SQLDialect { executor.dialect }

    /// A session on `executor` that seals credentials with `secrets`.
    public init(executor: any SQLExecutor, secrets: (any SecretSealer)? = nil) {
        self.executor = executor
        self.secrets = secrets
    }

    /// Answers when the database does (a health check).
    public func ping() throws {
        _ = try query("SELECT 1")
    }

    public func schemaVersion() throws -> Int {
        try executor.schemaVersion()
    }

    /// Runs `sql` and answers its rows.
    func query(_ sql: SQL) throws -> [SQLRow] {
        try executor.query(sql)
    }

    /// Runs `sql` and answers how many rows it changed.
    @discardableResult
    func run(_ sql: SQL) throws -> Int {
        try executor.run(sql)
    }

    /// Runs `body`, whose statements may break a unique key, so that a `conflict` it
    /// throws leaves the rest of the transaction usable, as on SQLite: on PostgreSQL,
    /// where a failed statement would abort the whole transaction, inside a savepoint
    /// rolled back on the conflict.
    @discardableResult
    func recoveringFromConflict<T>(_ body: () throws -> T) throws -> T {
        guard dialect == .postgresql else { return try body() }
        try run("SAVEPOINT islet_conflict")
        do {
            let result = try body()
            try run("RELEASE SAVEPOINT islet_conflict")
            return result
        } catch let error as StoreError where error.code == .conflict {
            try run("ROLLBACK TO SAVEPOINT islet_conflict")
            try run("RELEASE SAVEPOINT islet_conflict")
            throw error
        }
    }

    /// Targets per statement when a list is bound as arrays.
    static let chunk = 5_000

    /// Runs `body` on consecutive slices of `targets`, at most ``chunk`` each: for
    /// statements that bind a whole slice as arrays.
    func forEachChunk<Element>(of targets: [Element], _ body: (ArraySlice<Element>) throws -> Void) throws {
        var start = targets.startIndex
        while start < targets.endIndex {
            let chunk = targets[start..<min(start + Self.chunk, targets.endIndex)]
            start = chunk.endIndex
            try body(chunk)
        }
    }

    /// Runs `sql` once per element of `rows`, prepared once (every element gives the
    /// same text). Answers the rows changed.
    @discardableResult
    func runEach<Row>(_ rows: some Sequence<Row>, _ statement: (Row) -> SQL) throws -> Int {
        try executor.runEach(rows, statement)
    }
}

extension SQLRow {
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

    func bool(_ name: String) throws -> Bool {
        guard let flag = self[name].bool else { throw StoreError(.corrupt, "column \(name) is not a boolean") }
        return flag
    }

    func optionalBool(_ name: String) -> Bool? { self[name].bool }

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
