import Foundation
import IsletCore
public import Storage

/// The store's operations on one SQLite connection, inside a `read` or `write`.
/// Each statement is an ``SQL`` rendered for SQLite; a failure is thrown as a
/// `StoreError`.
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
        try mappingSQLiteErrors { try Migrator.currentVersion(connection) }
    }

    /// Runs `sql` and answers its rows.
    func query(_ sql: SQL) throws -> [SQLiteRow] {
        do {
            return try connection.query(sql)
        } catch {
            throw error.storeError
        }
    }

    /// Runs `sql` and answers how many rows it changed.
    @discardableResult
    func run(_ sql: SQL) throws -> Int {
        do {
            return try connection.run(sql)
        } catch {
            throw error.storeError
        }
    }

    /// Runs `sql` once per element of `rows`, each time with the values of
    /// `statement(row)`: the text is rendered and prepared once, from the first
    /// (every element must give the same text). Answers the rows changed.
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

    func bool(_ name: String) throws -> Bool { try int64(name) != 0 }

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
