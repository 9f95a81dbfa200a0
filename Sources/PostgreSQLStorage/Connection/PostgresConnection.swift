internal import CPostgres
import Foundation
public import SQLStorage
public import Storage

/// One connection to a PostgreSQL server over libpq. It owns its `PGconn`, which
/// it closes in ``close()`` or when it goes away, and the statements it prepared.
///
/// Every value is bound as a parameter, never spliced into a statement's text;
/// each statement is prepared once per connection (up to 256 of them) and run again
/// by name. Failures are `StoreError`s whose code comes from the server's SQLSTATE
/// (see ``Storage/StoreError/sqlState``); ``isBroken`` and ``inTransaction`` tell a
/// pool whether to reconnect or to roll back before handing the connection out.
///
/// A connection is used by one thread at a time: its calls block that thread until
/// the server answers, and two threads must never call it at once.
public final class PostgresConnection: SQLExecutor, @unchecked Sendable {
    // @unchecked Sendable: the handle and the statement cache are only touched by
    // the one thread using the connection (the documented contract above); whoever
    // hands a connection to another thread (a pool, under its lock) orders the uses.
    // Sendable so that it can be handed over at all.

    /// The libpq connection; `nil` once closed.
    private var handle: OpaquePointer?
    /// The statements prepared on this connection.
    private var statements = PostgresStatementCache()
    /// The start of a transaction not yet sent (see `begin`).
    var pendingBegin: [String]?
    /// What no message may show: the URL's passwords.
    private let secrets: [String]

    /// The oldest server version Islet speaks to: PostgreSQL 12.
    public static let minimumServerVersion = 120_000

    /// Connects to the server `url` names and readies the session: server notices
    /// below warnings are not sent, and those sent are dropped (never written to
    /// standard error). `applicationName` is what the server shows for the
    /// connection (`pg_stat_activity`) unless the URL or `PGAPPNAME` names one.
    /// Without `connect_timeout` in the URL or `PGCONNECT_TIMEOUT`, a connection
    /// attempt gives up after 10 seconds.
    ///
    /// Throws `StoreError(.unavailable, …)` with libpq's reason when the server
    /// cannot be reached, refuses the login or is older than PostgreSQL 12.
    public init(url: PostgresURL, applicationName: String? = nil) throws(StoreError) {
        secrets = url.secrets
        // Entries before `dbname` give way to the URL's own; see PQconnectdbParams
        // in https://www.postgresql.org/docs/current/libpq-connect.html.
        var parameters: [(String, String)] = []
        if url.parameter("connect_timeout") == nil, ProcessInfo.processInfo.environment["PGCONNECT_TIMEOUT"] == nil {
            parameters.append(("connect_timeout", "10"))
        }
        if let applicationName { parameters.append(("fallback_application_name", applicationName)) }
        parameters.append(("dbname", url.text))
        let keywords = parameters.map { strdup($0.0) } + [nil]
        let values = parameters.map { strdup($0.1) } + [nil]
        defer {
            for pointer in keywords + values { free(pointer) }
        }
        let connection = keywords.map { UnsafePointer($0) }.withUnsafeBufferPointer { keywordList in
            values.map { UnsafePointer($0) }.withUnsafeBufferPointer { valueList in
                PQconnectdbParams(keywordList.baseAddress, valueList.baseAddress, 1)
            }
        }
        guard let connection else {
            throw StoreError(.unavailable, PostgresFailure.unavailablePrefix + "libpq could not allocate a connection")
        }
        guard PQstatus(connection) == CONNECTION_OK else {
            let reason = PostgresMessage.hiding(url.secrets, in: PostgresMessage.oneLine(String(cString: PQerrorMessage(connection))))
            PQfinish(connection)
            throw StoreError(.unavailable, PostgresFailure.unavailablePrefix + reason)
        }
        handle = connection
        // Notices the server still sends (warnings) are dropped rather than printed.
        PQsetNoticeProcessor(connection, { _, _ in }, nil)
        let version = Int(PQserverVersion(connection))
        guard version >= Self.minimumServerVersion else {
            throw StoreError(
                .unavailable,
                PostgresFailure.unavailablePrefix
                    + "the server runs PostgreSQL \(version / 10_000).\(version % 10_000); Islet needs PostgreSQL 12 or later")
        }
        try execute("SET client_min_messages = warning")
    }

    deinit {
        if let handle { PQfinish(handle) }
    }

    /// Closes the connection; every later call throws `StoreError(.unavailable, …)`.
    public func close() {
        if let handle { PQfinish(handle) }
        handle = nil
        statements.removeAll()
    }

    // MARK: - State

    /// Whether the connection is lost (closed, or the server gone): a pool should
    /// drop it and open another. Reads what the server sent without waiting, so that
    /// a server that ended the session is noticed before the next statement.
    public var isBroken: Bool {
        guard let handle else { return true }
        if PQstatus(handle) == CONNECTION_OK, PQtransactionStatus(handle) != PQTRANS_ACTIVE {
            _ = PQconsumeInput(handle)
        }
        return PQstatus(handle) != CONNECTION_OK
    }

    /// Whether a transaction is open, failed or not: a pool should roll it back
    /// before handing the connection to someone else.
    public var inTransaction: Bool {
        guard let handle else { return false }
        let status = PQtransactionStatus(handle)
        return status == PQTRANS_INTRANS || status == PQTRANS_INERROR
    }

    /// The server's version as a number: 150004 for 15.4.
    public var serverVersion: Int {
        handle.map { Int(PQserverVersion($0)) } ?? 0
    }

    /// The server process serving this connection (`pg_backend_pid()`), 0 when closed.
    public var processID: Int32 {
        handle.map { PQbackendPID($0) } ?? 0
    }

    /// How many statements are prepared on this connection.
    public var preparedStatementCount: Int { statements.count }

    // MARK: - Statements

    /// PostgreSQL's SQL.
    public var dialect: SQLDialect { .postgresql }

    /// Runs `text`, one statement or several separated by `;`, with no parameters:
    /// migrations, `BEGIN`, `COMMIT`, `ROLLBACK`, `SET`. Any rows are dropped.
    public func execute(_ text: String) throws(StoreError) {
        let connection = try open()
        try flushPendingBegin()
        let result = PQexec(connection, text)
        defer { PQclear(result) }
        try check(result)
    }

    /// Runs `text` (no parameters) and answers the command tag (`COMMIT`, `ROLLBACK`,
    /// …).
    func execute(returningTag text: String) throws(StoreError) -> String {
        let connection = try open()
        try flushPendingBegin()
        let result = PQexec(connection, text)
        defer { PQclear(result) }
        try check(result)
        return String(cString: PQcmdStatus(result))
    }

    /// Clears the statement cache now when `count` more statements might not fit.
    func makeRoomForStatements(_ count: Int) throws(StoreError) {
        guard statements.count + count > statements.capacity else { return }
        try execute("DEALLOCATE ALL")
        statements.removeAll()
    }

    /// Runs `sql` and answers its rows (values read as ``PostgresResultReader`` says).
    public func query(_ sql: SQL) throws(StoreError) -> [SQLRow] {
        let rendered = sql.rendered(for: .postgresql)
        let parameters = try PostgresParameters(rendered.values)
        let name = try preparedName(rendered.text, types: parameters.types)
        return try executePrepared(name, parameters) { result throws(StoreError) in try PostgresResultReader.rows(of: result) }
    }

    /// Runs `sql` and answers how many rows it inserted, changed or deleted (0 for
    /// a statement that touches no rows).
    @discardableResult
    public func run(_ sql: SQL) throws(StoreError) -> Int {
        let rendered = sql.rendered(for: .postgresql)
        let parameters = try PostgresParameters(rendered.values)
        let name = try preparedName(rendered.text, types: parameters.types)
        return try executePrepared(name, parameters) { result in PostgresResultReader.changedRows(of: result) }
    }

    /// Runs `statement(row)` for each of `rows`: the first row's statement gives the
    /// text, prepared once; each row binds its own values. Answers the rows changed.
    @discardableResult
    public func runEach<Row>(_ rows: some Sequence<Row>, _ statement: (Row) -> SQL) throws(StoreError) -> Int {
        var text: String?
        var prepared: (types: [Oid], name: String)?
        var changed = 0
        for row in rows {
            let sql = statement(row)
            let values: [SQLValue]
            if text == nil {
                let rendered = sql.rendered(for: .postgresql)
                text = rendered.text
                values = rendered.values
            } else {
                values = sql.values(for: .postgresql)
            }
            let parameters = try PostgresParameters(values)
            // A NULL where the first row had a value is bound under other types.
            if prepared?.types != parameters.types, let text {
                prepared = (parameters.types, try preparedName(text, types: parameters.types))
            }
            changed += try executePrepared(prepared!.name, parameters) { result in PostgresResultReader.changedRows(of: result) }
        }
        return changed
    }

    /// The version of Islet's schema: the highest of `islet_migrations`
    /// (looked up on the `search_path`), or 0 when there is no such table.
    public func schemaVersion() throws(StoreError) -> Int {
        let present = try query("SELECT to_regclass('islet_migrations') IS NOT NULL")
        guard present.first?[0].bool == true else { return 0 }
        let rows = try query("SELECT coalesce(max(version), 0) FROM islet_migrations")
        guard let version = rows.first?[0].integer else {
            throw StoreError(.corrupt, "islet_migrations has a version that is not an integer")
        }
        return Int(version)
    }

    // MARK: - libpq

    /// The open handle, or the error of a closed connection.
    func open() throws(StoreError) -> OpaquePointer {
        guard let handle else { throw StoreError(.unavailable, PostgresFailure.unavailablePrefix + "the connection is closed") }
        return handle
    }

    /// The name `text` with parameters of `types` is prepared under, preparing it
    /// first if this connection has not yet.
    func preparedName(_ text: String, types: [Oid]) throws(StoreError) -> String {
        let key = PostgresStatementCache.Key(text: text, types: types)
        if let name = statements.name(for: key) { return name }
        let connection = try open()
        try flushPendingBegin()
        if statements.isFull {
            try execute("DEALLOCATE ALL")
            statements.removeAll()
        }
        let name = statements.nextName()
        let result = types.withUnsafeBufferPointer { types in
            PQprepare(connection, name, text, Int32(types.count), types.baseAddress)
        }
        defer { PQclear(result) }
        try check(result)
        statements.insert(key, name: name)
        return name
    }

    /// Runs the prepared statement `name` with `parameters`, asking for results in
    /// text form, and reads its result with `read`.
    private func executePrepared<Value>(
        _ name: String, _ parameters: PostgresParameters, _ read: (OpaquePointer) throws(StoreError) -> Value
    ) throws(StoreError) -> Value {
        let connection = try open()
        let result: OpaquePointer?
        if let begin = pendingBegin {
            pendingBegin = nil
            result = try executePipelined(connection, begin: begin, name: name, parameters)
        } else {
            result = try parameters.withPointers { values, lengths, formats throws(StoreError) in
                PQexecPrepared(connection, name, parameters.count, values, lengths, formats, 0)
            }
        }
        defer { PQclear(result) }
        try check(result)
        return try read(result!)
    }

    /// Throws the failure `result` reports, if it reports one (or is missing).
    func check(_ result: OpaquePointer?) throws(StoreError) {
        if let result {
            switch PQresultStatus(result) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK, PGRES_EMPTY_QUERY: return
            default: break
            }
        }
        throw failure(result)
    }

    /// The error for a failed `result`, or for a call that gave no result.
    func failure(_ result: OpaquePointer?) -> StoreError {
        let sqlState = result.flatMap { islet_pq_result_sqlstate($0) }.map { String(cString: $0) }
        var message = result.flatMap { islet_pq_result_primary_message($0) }.map { String(cString: $0) }
        if message == nil, let result, let text = PQresultErrorMessage(result), text.pointee != 0 {
            message = String(cString: text)
        }
        if message == nil, let handle { message = String(cString: PQerrorMessage(handle)) }
        let broken = handle.map { PQstatus($0) != CONNECTION_OK } ?? true
        let line = PostgresMessage.hiding(secrets, in: PostgresMessage.oneLine(message ?? ""))
        return PostgresFailure.error(message: line, sqlState: sqlState, broken: broken)
    }
}
