/// What the store's SQL needs of one database connection inside a transaction: run
/// a statement, answer its rows or how many rows it changed. Each backend's
/// connection conforms; the statements themselves (`SQLStorage`) are shared.
///
/// Every error is thrown as a `StoreError` with the code that says what the caller
/// may do about it (`conflict`, `busy`, `unavailable`, `corrupt`).
public protocol SQLExecutor {
    /// The SQL the connection speaks.
    var dialect: SQLDialect { get }
    /// Runs `sql` and answers its rows.
    func query(_ sql: SQL) throws -> [SQLRow]
    /// Runs `sql` and answers how many rows it changed.
    @discardableResult
    func run(_ sql: SQL) throws -> Int
    /// Runs the statement `statement(row)` once per element of `rows`: every element
    /// gives the same text, so it is prepared once and run with each one's values.
    /// Answers the rows changed.
    @discardableResult
    func runEach<Row>(_ rows: some Sequence<Row>, _ statement: (Row) -> SQL) throws -> Int
    /// The version of Islet's schema in the database.
    func schemaVersion() throws -> Int
    /// Runs statements that do not depend on one another and answers each one's
    /// rows, in order: in one round trip where the backend can (PostgreSQL's
    /// pipeline), else one after another.
    func queryAll(_ statements: [SQL]) throws -> [[SQLRow]]
}

extension SQLExecutor {
    /// One after another.
    public func queryAll(_ statements: [SQL]) throws -> [[SQLRow]] {
        try statements.map { try query($0) }
    }
}
