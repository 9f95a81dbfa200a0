public import SQLStorage

/// An SQLite connection as the migration runner sees it: refusals are
/// `SQLiteError`s with the `migration` code, and each step runs in an immediate
/// transaction, which is the only lock migrating an SQLite file needs.
struct SQLiteMigrationTarget: MigrationTarget {
    let connection: SQLiteConnection

    func execute(_ script: String) throws {
        try connection.execute(script)
    }

    func query(_ sql: SQL) throws -> [SQLRow] {
        try connection.query(sql).map(\.sqlRow)
    }

    func run(_ sql: SQL) throws -> Int {
        try connection.run(sql)
    }

    func transaction(_ body: () throws -> Void) throws {
        try connection.transaction(body)
    }

    func refusal(_ message: String) -> any Error {
        SQLiteError(code: .migration, message: message)
    }
}

extension Migrator {
    /// Brings `connection`'s schema up to date; answers the versions it applied
    /// (empty when the schema already was).
    @discardableResult
    public func migrate(_ connection: SQLiteConnection) throws -> [Int] {
        try migrate(on: SQLiteMigrationTarget(connection: connection))
    }

    /// The highest version recorded in `connection`'s database (0 for none).
    public static func currentVersion(_ connection: SQLiteConnection) throws -> Int {
        let rows = try connection.query("SELECT COALESCE(MAX(version), 0) FROM islet_migrations")
        return Int(rows.first?[0].integer ?? 0)
    }
}
