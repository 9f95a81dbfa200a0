public import Foundation

/// One result row of any SQL backend: values by position, and by column name.
public struct SQLRow: Sendable {
    /// The values, in column order.
    public let values: [SQLValue]
    /// The column names, in order, shared by every row of a result. A row has a few
    /// columns: a scan finds a name sooner than hashing it would.
    private let names: [String]

    /// A row of `values` under `names` (the same count).
    public init(values: [SQLValue], names: [String]) {
        self.values = values
        self.names = names
    }

    /// The value at column `index`.
    public subscript(index: Int) -> SQLValue { values[index] }

    /// The value of the column named `name` (the last, when two share it), or
    /// `.null` when there is no such column.
    public subscript(name: String) -> SQLValue {
        for index in names.indices.reversed() where names[index] == name { return values[index] }
        return .null
    }
}

extension SQLValue {
    /// The integer, when this is one (a boolean reads as 0 or 1).
    public var integer: Int64? {
        switch self {
        case .integer(let value): value
        case .bool(let flag): flag ? 1 : 0
        default: nil
        }
    }

    /// The number, when this is one (integers convert).
    public var real: Double? {
        switch self {
        case .real(let value): value
        case .integer(let value): Double(value)
        default: nil
        }
    }

    /// The text, when this is text.
    public var text: String? {
        if case .text(let value) = self { return value }
        return nil
    }

    /// The bytes, when this is a blob.
    public var blob: Data? {
        if case .blob(let value) = self { return value }
        return nil
    }

    /// The truth value: a boolean, or an integer other than 0 (SQLite's booleans).
    public var bool: Bool? {
        switch self {
        case .bool(let flag): flag
        case .integer(let value): value != 0
        default: nil
        }
    }

    /// Whether this is SQL NULL.
    public var isNull: Bool { self == .null }
}
