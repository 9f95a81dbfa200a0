public import Foundation
import IsletCore

/// One SQL statement, written once for every backend: each value interpolated into it
/// becomes a bound parameter, never text spliced into the statement.
///
/// ```swift
/// let statement: SQL = "SELECT device_id FROM devices WHERE app_id = \(appID) AND device_id \(in: deviceIDs)"
/// ```
///
/// Three interpolations exist: `\(value)` binds a value; `\(in: list)` tests
/// membership in a list bound as one parameter; `\(raw: text)` and `\(sql: other)`
/// splice trusted SQL (constant column lists, a condition built in Swift) and must
/// never carry input. ``rendered(for:)`` answers the text and the values in order for
/// one dialect.
public struct SQL: Sendable, Hashable, ExpressibleByStringInterpolation, CustomStringConvertible {
    /// A piece of a statement.
    enum Part: Sendable, Hashable {
        /// Trusted SQL text.
        case text(String)
        /// A value bound as one parameter.
        case value(SQLValue)
        /// `IN (…)` over values bound as one parameter.
        case list([SQLValue])
    }

    /// The pieces, in order.
    private(set) var parts: [Part]

    /// A statement of trusted text alone.
    public init(stringLiteral value: String) {
        parts = value.isEmpty ? [] : [.text(value)]
    }

    /// A statement built by interpolation.
    public init(stringInterpolation: StringInterpolation) {
        parts = stringInterpolation.parts
    }

    /// Trusted text that is not a literal (a constant built elsewhere); never input.
    public init(raw text: String) {
        self.init(stringLiteral: text)
    }

    /// Collects the pieces of an interpolated statement.
    public struct StringInterpolation: StringInterpolationProtocol {
        var parts: [Part] = []

        /// Starts an empty statement.
        public init(literalCapacity: Int, interpolationCount: Int) {
            parts.reserveCapacity(interpolationCount * 2 + 1)
        }

        /// Appends trusted text.
        public mutating func appendLiteral(_ literal: String) {
            appendText(literal)
        }

        /// Binds `value` as one parameter.
        public mutating func appendInterpolation(_ value: some SQLBindable) {
            parts.append(.value(value.sqlValue))
        }

        /// Binds `value` as one parameter, NULL when it is `nil`.
        public mutating func appendInterpolation<Value: SQLBindable>(_ value: Value?) {
            parts.append(.value(value?.sqlValue ?? .null))
        }

        /// Tests membership in `list`, bound as one parameter: write
        /// `column \(in: list)`. An empty list matches nothing.
        public mutating func appendInterpolation(in list: [some SQLListElement]) {
            parts.append(.list(list.map(\.sqlValue)))
        }

        /// Splices trusted SQL text (a constant); never input.
        public mutating func appendInterpolation(raw text: String) {
            appendText(text)
        }

        /// Splices another statement, with its values.
        public mutating func appendInterpolation(sql other: SQL) {
            for part in other.parts {
                if case .text(let text) = part { appendText(text) } else { parts.append(part) }
            }
        }

        private mutating func appendText(_ text: String) {
            guard !text.isEmpty else { return }
            if case .text(let previous) = parts.last {
                parts[parts.count - 1] = .text(previous + text)
            } else {
                parts.append(.text(text))
            }
        }
    }

    /// Appends `other`, text and values.
    public mutating func append(_ other: SQL) {
        var interpolation = StringInterpolation(literalCapacity: 0, interpolationCount: 0)
        interpolation.parts = parts
        interpolation.appendInterpolation(sql: other)
        parts = interpolation.parts
    }

    /// `left` followed by `right`.
    public static func + (left: SQL, right: SQL) -> SQL {
        var joined = left
        joined.append(right)
        return joined
    }

    /// `pieces` with `separator` between each two.
    public static func joined(_ pieces: [SQL], separator: String) -> SQL {
        var joined = SQL(stringLiteral: "")
        for (index, piece) in pieces.enumerated() {
            if index > 0 { joined.append(SQL(raw: separator)) }
            joined.append(piece)
        }
        return joined
    }

    /// The statement's text and its values, in parameter order, for `dialect`.
    ///
    /// SQLite: parameters `?1 ?2 …`; a list is `IN (SELECT value FROM json_each(?N))`
    /// with the list bound as one JSON array (text); booleans bind as 0 or 1.
    /// PostgreSQL: parameters `$1 $2 …`; a list is `= ANY($N)` with the list bound as
    /// one array; booleans bind as booleans.
    public func rendered(for dialect: SQLDialect) -> RenderedSQL {
        var text = ""
        var values: [SQLValue] = []
        values.reserveCapacity(parts.count / 2)
        for part in parts {
            switch part {
            case .text(let piece):
                text += piece
            case .value(let value):
                values.append(dialect.binding(value))
                text += dialect.placeholder(values.count)
            case .list(let list):
                values.append(dialect.binding(list: list))
                switch dialect {
                case .sqlite: text += "IN (SELECT value FROM json_each(\(dialect.placeholder(values.count))))"
                case .postgresql: text += "= ANY(\(dialect.placeholder(values.count)))"
                }
            }
        }
        return RenderedSQL(text: text, values: values)
    }

    /// Only the values, in parameter order, for `dialect`: for a statement whose text
    /// is already known (prepared once, run for each of many rows).
    public func values(for dialect: SQLDialect) -> [SQLValue] {
        var values: [SQLValue] = []
        values.reserveCapacity(parts.count / 2)
        for part in parts {
            switch part {
            case .text: break
            case .value(let value): values.append(dialect.binding(value))
            case .list(let list): values.append(dialect.binding(list: list))
            }
        }
        return values
    }

    /// The SQLite text, for debugging; values are not shown.
    public var description: String { rendered(for: .sqlite).text }
}

/// A statement rendered for one dialect: its text and its values in parameter order.
public struct RenderedSQL: Sendable, Hashable {
    /// The statement, with numbered placeholders.
    public var text: String
    /// The value of each placeholder, first to last.
    public var values: [SQLValue]

    /// Creates a rendered statement.
    public init(text: String, values: [SQLValue]) {
        self.text = text
        self.values = values
    }
}

/// Which SQL a statement is rendered as.
public enum SQLDialect: Sendable, Hashable, CaseIterable {
    /// SQLite 3.38 or later (`json_each`, `RETURNING`).
    case sqlite
    /// PostgreSQL (libpq's numbered parameters).
    case postgresql

    /// The placeholders `?1 … ?20` and `$1 … $20`, made once: the delivery worker
    /// renders a statement per push.
    private static let sqlitePlaceholders = (0...20).map { "?\($0)" }
    private static let postgresPlaceholders = (0...20).map { "$\($0)" }

    /// The placeholder of parameter `number` (from 1).
    func placeholder(_ number: Int) -> String {
        switch self {
        case .sqlite: number < Self.sqlitePlaceholders.count ? Self.sqlitePlaceholders[number] : "?\(number)"
        case .postgresql: number < Self.postgresPlaceholders.count ? Self.postgresPlaceholders[number] : "$\(number)"
        }
    }

    /// How `value` is bound in this dialect.
    public func binding(_ value: SQLValue) -> SQLValue {
        switch (self, value) {
        case (.sqlite, .bool(let flag)): .integer(flag ? 1 : 0)
        case (.sqlite, .array(let list)): binding(list: list)
        default: value
        }
    }

    /// How a list is bound in this dialect: SQLite's `json_each` reads a JSON array
    /// (text); PostgreSQL takes an array.
    public func binding(list: [SQLValue]) -> SQLValue {
        switch self {
        case .sqlite: .text(JSONValue.array(list.map(\.jsonValue)).jsonText)
        case .postgresql: .array(list)
        }
    }
}

/// A value bound to a statement's parameter.
public enum SQLValue: Sendable, Hashable {
    /// SQL NULL.
    case null
    /// A 64-bit integer.
    case integer(Int64)
    /// A double.
    case real(Double)
    /// UTF-8 text.
    case text(String)
    /// Bytes.
    case blob(Data)
    /// A boolean (SQLite binds it as the integer 0 or 1).
    case bool(Bool)
    /// A list bound as one parameter (SQLite binds it as JSON text).
    case array([SQLValue])

    /// The value in a JSON array, for SQLite's `json_each`.
    var jsonValue: JSONValue {
        switch self {
        case .null: .null
        case .integer(let value): .integer(value)
        case .real(let value): .double(value)
        case .text(let value): .string(value)
        case .blob(let value): .string(value.base64EncodedString())
        case .bool(let value): .bool(value)
        case .array(let values): .array(values.map(\.jsonValue))
        }
    }
}

/// A Swift value that binds as one statement parameter.
public protocol SQLBindable: Sendable {
    /// The value to bind.
    var sqlValue: SQLValue { get }
}

/// A value that may stand in a list bound as one parameter (`\(in: list)`): text or
/// integers, which SQLite's `json_each` gives back as they were.
public protocol SQLListElement: SQLBindable {}

extension SQLValue: SQLBindable {
    public var sqlValue: SQLValue { self }
}
extension String: SQLListElement {
    public var sqlValue: SQLValue { .text(self) }
}
extension Int: SQLListElement {
    public var sqlValue: SQLValue { .integer(Int64(self)) }
}
extension Int64: SQLListElement {
    public var sqlValue: SQLValue { .integer(self) }
}
extension Double: SQLBindable {
    public var sqlValue: SQLValue { .real(self) }
}
extension Data: SQLBindable {
    public var sqlValue: SQLValue { .blob(self) }
}
extension Bool: SQLBindable {
    public var sqlValue: SQLValue { .bool(self) }
}
extension Optional: SQLBindable where Wrapped: SQLBindable {
    public var sqlValue: SQLValue { self?.sqlValue ?? .null }
}
