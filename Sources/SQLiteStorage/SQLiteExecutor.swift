import Foundation
import SQLStorage
import Storage

/// One SQLite connection as the shared SQL sees it: statements rendered for SQLite,
/// rows as ``SQLRow``, errors as `StoreError`.
struct SQLiteExecutor: SQLExecutor {
    let connection: SQLiteConnection

    var dialect: SQLDialect { .sqlite }

    func query(_ sql: SQL) throws -> [SQLRow] {
        do {
            return try connection.query(sql).map(\.sqlRow)
        } catch {
            throw error.storeError
        }
    }

    @discardableResult
    func run(_ sql: SQL) throws -> Int {
        do {
            return try connection.run(sql)
        } catch {
            throw error.storeError
        }
    }

    @discardableResult
    func runEach<Row>(_ rows: some Sequence<Row>, _ statement: (Row) -> SQL) throws -> Int {
        do {
            var prepared: SQLiteStatement?
            var changed = 0
            for row in rows {
                let sql = statement(row)
                if let prepared {
                    changed += try prepared.run(values: sql.values(for: .sqlite))
                } else {
                    let (first, values) = try connection.statement(for: sql)
                    prepared = first
                    changed += try first.run(values: values)
                }
            }
            return changed
        } catch {
            throw error.storeError
        }
    }

    func schemaVersion() throws -> Int {
        try mappingSQLiteErrors { try Migrator.currentVersion(connection) }
    }
}

extension SQLiteRow {
    /// The row in the shared SQL's terms.
    var sqlRow: SQLRow {
        SQLRow(values: values.map(\.sqlValue), names: columnNames)
    }
}

extension SQLiteValue {
    /// The value in the shared SQL's terms.
    var sqlValue: SQLValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .real(value)
        case .text(let value): .text(value)
        case .blob(let value): .blob(value)
        }
    }
}
