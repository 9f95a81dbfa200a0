internal import CSQLite
import Foundation
public import SQLStorage

/// How an SQLite connection is opened.
public struct SQLiteOptions: Sendable {
    /// How long a statement waits for another connection's lock before failing busy.
    public var busyTimeoutMilliseconds: Int32 = 5_000
    /// `PRAGMA synchronous`: `FULL` syncs the WAL on every commit, so a committed
    /// transaction survives power loss; `NORMAL` survives process crashes only.
    public var synchronousFull: Bool = true
    /// Opens the file read-only (and never creates it).
    public var readOnly: Bool = false

    /// The defaults: WAL, FULL sync, 5 s busy timeout, read-write.
    public init() {}
}

/// One SQLite connection. It owns its `sqlite3` handle and its prepared statements;
/// it is opened without SQLite's own mutex, so it must be used by one thread at a time
/// (`SQLiteDatabase` guarantees that).
public final class SQLiteConnection {
    let handle: OpaquePointer
    private var statementCache: [String: SQLiteStatement] = [:]

    /// Opens (creating it unless read-only) the database at `path`, switches it to WAL
    /// and checks that the file really is an SQLite database.
    public init(path: String, options: SQLiteOptions = SQLiteOptions()) throws(SQLiteError) {
        var db: OpaquePointer?
        let flags = (options.readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
            | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE
        let rc = sqlite3_open_v2(path, &db, flags, nil)
        guard rc == SQLITE_OK, let db else {
            let error = SQLiteError(resultCode: rc, handle: db)
            sqlite3_close_v2(db)
            throw error
        }
        handle = db
        sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds)
        // Reading the schema is the first thing that touches the file's header: a
        // file that is not a database fails here, not on some later query.
        try execute("PRAGMA schema_version")
        if !options.readOnly {
            let mode = try query("PRAGMA journal_mode=WAL").first?[0].text?.lowercased()
            guard mode == "wal" else {
                throw SQLiteError(code: .other, message: "cannot switch to WAL journal mode (got \(mode ?? "nothing"))")
            }
        }
        // Temporary tables, sorts and statement journals (a multi-row UPDATE …
        // RETURNING makes all three) stay in memory: as files they were created,
        // written and unlinked on every batch of the delivery queue.
        try execute("PRAGMA synchronous=\(options.synchronousFull ? "FULL" : "NORMAL"); PRAGMA foreign_keys=ON; PRAGMA temp_store=MEMORY")
    }

    deinit {
        statementCache.removeAll()
        sqlite3_close_v2(handle)
    }

    /// The version of the linked SQLite library, for example `3.40.1`.
    public static var libraryVersion: String { String(cString: sqlite3_libversion()) }

    /// Runs one or more statements that take no parameters.
    /// Rows this connection inserted, changed or deleted since it opened (SQLite's
    /// `total_changes`): a write's cost in rows, for `/metrics`.
    public var totalChanges: Int64 { Int64(sqlite3_total_changes64(handle)) }

    public func execute(_ sql: String) throws(SQLiteError) {
        let rc = sqlite3_exec(handle, sql, nil, nil, nil)
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: rc, handle: handle) }
    }

    /// Prepares `sql` (one statement). The statement is cached on this connection and
    /// handed out again for the same text.
    public func prepare(_ sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let cached = statementCache[sql] { return cached }
        var statement: OpaquePointer?
        let rc = sqlite3_prepare_v3(handle, sql, -1, UInt32(SQLITE_PREPARE_PERSISTENT), &statement, nil)
        guard rc == SQLITE_OK, let statement else { throw SQLiteError(resultCode: rc, handle: handle) }
        let prepared = SQLiteStatement(handle: statement, connection: self)
        statementCache[sql] = prepared
        return prepared
    }

    /// How many virtual-machine steps this connection's prepared statements have
    /// taken since the last call that reset the count: SQLite's own measure of a
    /// statement's work, which does not move with the machine's load (a search by
    /// index takes a few steps, a scan one per row it reads).
    public func virtualMachineSteps(resetting reset: Bool = true) -> Int {
        statementCache.values.reduce(0) { total, statement in
            total + Int(sqlite3_stmt_status(statement.handle, SQLITE_STMTSTATUS_VM_STEP, reset ? 1 : 0))
        }
    }

    /// Runs a statement whose parameters are `?` placeholders bound to `values` by
    /// position, and answers its rows. (A statement without values, or with values
    /// interpolated, is an ``SQL``: see `query(_:)`.)
    public func query(_ sql: String, _ values: [any SQLiteBindable]) throws(SQLiteError) -> [SQLiteRow] {
        try prepare(sql).query(values)
    }

    /// Runs a statement whose parameters are `?` placeholders bound to `values` by
    /// position, and answers the number of rows it changed.
    @discardableResult
    public func run(_ sql: String, _ values: [any SQLiteBindable]) throws(SQLiteError) -> Int {
        try prepare(sql).run(values)
    }

    /// Prepares `sql` rendered for SQLite (one statement), from the cache when the
    /// same text was prepared before; answers it with the values to bind.
    public func statement(for sql: SQL) throws(SQLiteError) -> (statement: SQLiteStatement, values: [SQLValue]) {
        let rendered = sql.rendered(for: .sqlite)
        return (try prepare(rendered.text), rendered.values)
    }

    /// Runs a statement and answers its rows.
    public func query(_ sql: SQL) throws(SQLiteError) -> [SQLiteRow] {
        let (statement, values) = try statement(for: sql)
        return try statement.query(values: values)
    }

    /// Runs a statement and answers the number of rows it changed.
    @discardableResult
    public func run(_ sql: SQL) throws(SQLiteError) -> Int {
        let (statement, values) = try statement(for: sql)
        return try statement.run(values: values)
    }

    /// Whether a transaction is open.
    public var inTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// Runs `body` in an immediate transaction: committed when it returns, rolled back
    /// when it throws.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        try execute("BEGIN IMMEDIATE")
        do {
            let result = try body()
            try execute("COMMIT")
            return result
        } catch {
            if inTransaction { try? execute("ROLLBACK") }
            throw error
        }
    }
}
