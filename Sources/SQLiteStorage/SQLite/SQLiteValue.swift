public import Foundation

/// A value bound to, or read from, an SQLite statement.
public enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    /// The integer, when this is one.
    public var integer: Int64? {
        if case .integer(let v) = self { return v }
        return nil
    }

    /// The real number, when this is one (integers convert).
    public var real: Double? {
        switch self {
        case .real(let v): v
        case .integer(let v): Double(v)
        default: nil
        }
    }

    /// The text, when this is text.
    public var text: String? {
        if case .text(let v) = self { return v }
        return nil
    }

    /// The bytes, when this is a blob.
    public var blob: Data? {
        if case .blob(let v) = self { return v }
        return nil
    }

    /// Whether this is SQL NULL.
    public var isNull: Bool { self == .null }
}

/// Types that bind directly as statement parameters.
public protocol SQLiteBindable: Sendable {
    /// The value to bind.
    var sqliteValue: SQLiteValue { get }
}

extension SQLiteValue: SQLiteBindable {
    public var sqliteValue: SQLiteValue { self }
}
extension Int: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .integer(Int64(self)) }
}
extension Int64: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .integer(self) }
}
extension Double: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .real(self) }
}
extension String: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .text(self) }
}
extension Data: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .blob(self) }
}
extension Bool: SQLiteBindable {
    public var sqliteValue: SQLiteValue { .integer(self ? 1 : 0) }
}
extension Optional: SQLiteBindable where Wrapped: SQLiteBindable {
    public var sqliteValue: SQLiteValue { self?.sqliteValue ?? .null }
}

/// One result row: values by position, and by column name.
public struct SQLiteRow: Sendable {
    /// The values, in column order.
    public let values: [SQLiteValue]
    /// The column names, in order, shared by every row of the statement. A row has
    /// a few columns: a scan finds a name sooner than hashing it would.
    private let names: [String]

    /// The column names, in order.
    public var columnNames: [String] { names }

    init(values: [SQLiteValue], names: [String]) {
        self.values = values
        self.names = names
    }

    /// The value at column `index`.
    public subscript(index: Int) -> SQLiteValue { values[index] }

    /// The value of the column named `name` (the last, when two share it), or
    /// `.null` when there is no such column.
    public subscript(name: String) -> SQLiteValue {
        for index in names.indices.reversed() where names[index] == name { return values[index] }
        return .null
    }
}
