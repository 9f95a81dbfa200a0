internal import CSQLite
import Foundation
public import SQLStorage

/// A prepared statement. Owned by the connection that prepared it and used only
/// under that connection's lock.
public final class SQLiteStatement {
    let handle: OpaquePointer
    private unowned let connection: SQLiteConnection
    private lazy var columnNames: [String] = (0..<Int(sqlite3_column_count(handle))).map { i in
        sqlite3_column_name(handle, Int32(i)).map { String(cString: $0) } ?? ""
    }

    init(handle: OpaquePointer, connection: SQLiteConnection) {
        self.handle = handle
        self.connection = connection
    }

    deinit {
        sqlite3_finalize(handle)
    }

    /// Resets the statement and binds `values` to its parameters, in order.
    public func bind(_ values: [any SQLiteBindable]) throws(SQLiteError) {
        try reset(expecting: values.count)
        for (offset, value) in values.enumerated() {
            try bind(value.sqliteValue, at: Int32(offset + 1))
        }
    }

    /// Resets the statement and binds `values` (a rendered ``SQL``'s) to its
    /// parameters, in order.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        try reset(expecting: values.count)
        for (offset, value) in values.enumerated() {
            let index = Int32(offset + 1)
            switch value {
            case .null: try bind(.null, at: index)
            case .integer(let v): try bind(.integer(v), at: index)
            case .real(let v): try bind(.real(v), at: index)
            case .text(let v): try bind(.text(v), at: index)
            case .blob(let v): try bind(.blob(v), at: index)
            case .bool(let v): try bind(.integer(v ? 1 : 0), at: index)
            case .array(let list):
                // Rendering binds lists as JSON text already; a list given directly gets the same.
                guard case .text(let json) = SQLDialect.sqlite.binding(list: list) else { continue }
                try bind(.text(json), at: index)
            }
        }
    }

    private func reset(expecting count: Int) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard count == expected else {
            throw SQLiteError(code: .misuse, message: "statement takes \(expected) parameters, \(count) given")
        }
    }

    private func bind(_ value: SQLiteValue, at index: Int32) throws(SQLiteError) {
        let rc: Int32
        switch value {
        case .null:
            rc = sqlite3_bind_null(handle, index)
        case .integer(let v):
            rc = sqlite3_bind_int64(handle, index, v)
        case .real(let v):
            rc = sqlite3_bind_double(handle, index, v)
        case .text(let v):
            rc = v.withCString { islet_sqlite3_bind_text_transient(handle, index, $0, -1) }
        case .blob(let v):
            rc = v.withUnsafeBytes { bytes in
                islet_sqlite3_bind_blob_transient(handle, index, bytes.baseAddress ?? UnsafeRawPointer(bitPattern: 1), Int32(bytes.count))
            }
        }
        guard rc == SQLITE_OK else { throw SQLiteError(resultCode: rc, handle: connection.handle) }
    }

    /// Advances to the next row; false when the statement is done.
    public func step() throws(SQLiteError) -> Bool {
        let rc = sqlite3_step(handle)
        switch rc {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        default:
            let error = SQLiteError(resultCode: rc, handle: connection.handle)
            sqlite3_reset(handle)
            throw error
        }
    }

    /// The current row's values.
    public func currentRow() -> SQLiteRow {
        let count = Int(sqlite3_column_count(handle))
        var values: [SQLiteValue] = []
        values.reserveCapacity(count)
        for i in 0..<Int32(count) {
            switch sqlite3_column_type(handle, i) {
            case SQLITE_INTEGER:
                values.append(.integer(sqlite3_column_int64(handle, i)))
            case SQLITE_FLOAT:
                values.append(.real(sqlite3_column_double(handle, i)))
            case SQLITE_TEXT:
                let length = Int(sqlite3_column_bytes(handle, i))
                if let text = sqlite3_column_text(handle, i) {
                    values.append(.text(String(decoding: UnsafeBufferPointer(start: text, count: length), as: UTF8.self)))
                } else {
                    values.append(.text(""))
                }
            case SQLITE_BLOB:
                let length = Int(sqlite3_column_bytes(handle, i))
                if let bytes = sqlite3_column_blob(handle, i), length > 0 {
                    values.append(.blob(Data(bytes: bytes, count: length)))
                } else {
                    values.append(.blob(Data()))
                }
            default:
                values.append(.null)
            }
        }
        return SQLiteRow(values: values, names: columnNames)
    }

    /// Binds `values`, runs the statement to the end, and answers every row.
    public func query(_ values: [any SQLiteBindable] = []) throws(SQLiteError) -> [SQLiteRow] {
        try bind(values)
        return try rows()
    }

    /// Binds a rendered ``SQL``'s values, runs the statement to the end, and answers
    /// every row.
    public func query(values: [SQLValue]) throws(SQLiteError) -> [SQLiteRow] {
        try bind(values)
        return try rows()
    }

    /// Binds `values` and runs the statement to the end, ignoring rows; answers the
    /// number of rows changed.
    @discardableResult
    public func run(_ values: [any SQLiteBindable] = []) throws(SQLiteError) -> Int {
        try bind(values)
        return try runToEnd()
    }

    /// Binds a rendered ``SQL``'s values and runs the statement to the end, ignoring
    /// rows; answers the number of rows changed.
    @discardableResult
    public func run(values: [SQLValue]) throws(SQLiteError) -> Int {
        try bind(values)
        return try runToEnd()
    }

    private func rows() throws(SQLiteError) -> [SQLiteRow] {
        defer { sqlite3_reset(handle) }
        var rows: [SQLiteRow] = []
        while try step() { rows.append(currentRow()) }
        return rows
    }

    private func runToEnd() throws(SQLiteError) -> Int {
        defer { sqlite3_reset(handle) }
        while try step() {}
        return Int(sqlite3_changes(connection.handle))
    }
}
