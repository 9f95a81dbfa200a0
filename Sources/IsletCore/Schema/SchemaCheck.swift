import IsletSync
public import Foundation

/// A value the device's decoder would refuse, at a path such as `content_state.eta`.
public struct SchemaViolation: Sendable, Hashable, CustomStringConvertible {
    /// Where, as `content_state.stops[2].name`.
    public let path: String
    /// What is wrong, as `expected date`.
    public let message: String

    /// Creates a violation.
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}

/// Checks JSON against a schema the way Swift's `JSONDecoder` (default settings,
/// except for the date strategy the schema names) would decode it: a number with a
/// fraction is not an `Int`, `null` only where optional, a missing key only where
/// optional, unknown keys ignored (and reported as warnings).
public enum SchemaCheck {
    /// How values are read.
    public enum Mode: Sendable, Hashable {
        /// Values from Islet's API: a date may be an RFC 3339 string or Unix seconds,
        /// and is converted to the field's encoding.
        case prepare
        /// Values as a device receives them: exactly what its decoder accepts.
        case decode
    }

    /// The outcome: the (converted) value, what the device would refuse, and what
    /// it would ignore.
    public struct Result: Sendable, Hashable {
        /// The value with dates converted (in `prepare` mode).
        public var value: JSONValue
        /// What the device could not decode; empty when it could.
        public var violations: [SchemaViolation]
        /// Keys the device ignores.
        public var warnings: [SchemaViolation]
    }

    /// Checks `value` (an object) against `fields`; `path` names it in messages.
    public static func check(_ value: JSONValue, fields: [String: FieldSchema], path: String, mode: Mode) -> Result {
        var walker = Walker(mode: mode)
        let checked: JSONValue
        if case .object(let members) = value {
            checked = walker.object(members, fields: fields, path: path)
        } else {
            walker.violations.append(SchemaViolation(path: path, message: "expected object"))
            checked = value
        }
        return Result(value: checked, violations: walker.violations, warnings: walker.warnings)
    }

    /// The content state as expo-widgets carries it: `{name, props}`, `props` being
    /// the state as a JSON string.
    public static func expoWrap(_ state: JSONValue, widgetName: String) -> JSONValue {
        ["name": .string(widgetName), "props": .string(state.jsonText)]
    }

    /// The state inside an expo-widgets wrapper, or why there is none.
    public static func expoUnwrap(_ wrapper: JSONValue, path: String) -> (state: JSONValue?, violation: SchemaViolation?) {
        guard case .object(let members) = wrapper, case .string? = members["name"] else {
            return (nil, SchemaViolation(path: "\(path).name", message: "expected string (the expo-widgets wrapper {name, props})"))
        }
        guard case .string(let props)? = members["props"] else {
            return (nil, SchemaViolation(path: "\(path).props", message: "expected string (the content state as JSON text)"))
        }
        guard let state = try? JSONValue(parsing: Data(props.utf8)) else {
            return (nil, SchemaViolation(path: "\(path).props", message: "is not JSON text"))
        }
        return (state, nil)
    }

    private struct Walker {
        let mode: Mode
        var violations: [SchemaViolation] = []
        var warnings: [SchemaViolation] = []

        mutating func fail(_ path: String, _ message: String) {
            violations.append(SchemaViolation(path: path, message: message))
        }

        mutating func object(_ members: [String: JSONValue], fields: [String: FieldSchema], path: String) -> JSONValue {
            var out = members
            for name in fields.keys.sortedByScalars() {
                let field = fields[name]!
                let fieldPath = "\(path).\(name)"
                guard let value = members[name] else {
                    if field.required {
                        fail(fieldPath, "is required: the app's property is not optional, so the device cannot decode the state without it")
                    }
                    continue
                }
                out[name] = self.value(value, field: field, path: fieldPath)
            }
            for name in members.keys.sortedByScalars() where fields[name] == nil {
                warnings.append(SchemaViolation(path: "\(path).\(name)", message: "is not a property of the app's type; the device ignores it"))
            }
            return .object(out)
        }

        mutating func value(_ value: JSONValue, field: FieldSchema, path: String) -> JSONValue {
            if value == .null {
                if !field.nullable { fail(path, "is null, but the app's property is not optional") }
                return value
            }
            switch field.type {
            case .string:
                guard case .string = value else { return mismatch(value, "string", path) }
                checkAllowed(value, field: field, path: path)
            case .int:
                switch value {
                case .integer: checkAllowed(value, field: field, path: path)
                case .double(let number):
                    guard let whole = Int64(exactly: number) else {
                        fail(path, "expected int, got \(number): a number with a fraction does not decode as an Int")
                        return value
                    }
                    // 5.0 decodes as an Int; sent as 5 all the same.
                    checkAllowed(.integer(whole), field: field, path: path)
                    return mode == .prepare ? .integer(whole) : value
                default: return mismatch(value, "int", path)
                }
            case .double:
                guard value.isNumber else { return mismatch(value, "double", path) }
            case .bool:
                guard case .bool = value else { return mismatch(value, "bool", path) }
            case .url:
                guard case .string(let text) = value else { return mismatch(value, "url", path) }
                if text.isEmpty || URL(string: text) == nil { fail(path, "expected url, got a string that is not a URL") }
            case .date:
                return date(value, encoding: field.effectiveDateEncoding, path: path)
            case .object:
                guard case .object(let members) = value else { return mismatch(value, "object", path) }
                if let fields = field.fields { return object(members, fields: fields, path: path) }
            case .array:
                guard case .array(let elements) = value else { return mismatch(value, "array", path) }
                if let items = field.items {
                    return .array(elements.enumerated().map { self.value($1, field: items, path: "\(path)[\($0)]") })
                }
            }
            return value
        }

        mutating func checkAllowed(_ value: JSONValue, field: FieldSchema, path: String) {
            guard let allowed = field.allowed, !allowed.contains(value) else { return }
            fail(path, "\(value.jsonText) is not one of the enum's raw values (\(allowed.map(\.jsonText).joined(separator: ", ")))")
        }

        mutating func mismatch(_ value: JSONValue, _ expected: String, _ path: String) -> JSONValue {
            fail(path, "expected \(expected), got \(SchemaCheck.describe(value))")
            return value
        }

        mutating func date(_ value: JSONValue, encoding: DateEncoding, path: String) -> JSONValue {
            switch mode {
            case .decode:
                switch encoding {
                case .secondsSince2001, .unix:
                    guard value.isNumber else { return mismatch(value, "date (a number, \(encoding.rawValue))", path) }
                case .iso8601:
                    guard case .string(let text) = value, SchemaCheck.parseStrictDate(text) != nil else {
                        return mismatch(value, "date (an ISO 8601 string without fractional seconds)", path)
                    }
                }
                return value
            case .prepare:
                let date: Date
                switch value {
                case .integer, .double:
                    let seconds = value.doubleValue ?? .nan
                    guard seconds.isFinite, abs(seconds) < 1e11 else {
                        fail(path, "\(value.jsonText) looks like milliseconds; give Unix seconds or an ISO 8601 date")
                        return value
                    }
                    date = Date(timeIntervalSince1970: seconds)
                case .string(let text):
                    guard let parsed = SchemaCheck.parseDate(text) else {
                        fail(path, "expected date, got a string that is not an ISO 8601 date")
                        return value
                    }
                    date = parsed
                default:
                    return mismatch(value, "date (Unix seconds or an ISO 8601 string)", path)
                }
                return SchemaCheck.encode(date, as: encoding)
            }
        }
    }

    /// A date as `encoding` writes it.
    public static func encode(_ date: Date, as encoding: DateEncoding) -> JSONValue {
        switch encoding {
        case .secondsSince2001: number(date.timeIntervalSince1970 - DateEncoding.referenceOffset)
        case .unix: number(date.timeIntervalSince1970)
        case .iso8601: .string(iso8601String(date))
        }
    }

    private static func number(_ seconds: Double) -> JSONValue {
        if let whole = Int64(exactly: seconds) { return .integer(whole) }
        return .double(seconds)
    }

    /// ISO 8601 formatters behind a lock: `.withInternetDateTime` as
    /// `JSONDecoder.DateDecodingStrategy.iso8601` reads, and one that also takes
    /// fractional seconds (for API input).
    private static let formatters = Lock<(plain: ISO8601DateFormatter, fractional: ISO8601DateFormatter)>({
        let plain = ISO8601DateFormatter()
        plain.formatOptions = [.withInternetDateTime]
        let fractional = ISO8601DateFormatter()
        fractional.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return (plain, fractional)
    }())

    /// Parses what `.iso8601` decoding accepts.
    static func parseStrictDate(_ text: String) -> Date? {
        formatters.withLock { $0.plain.date(from: text) }
    }

    /// Parses an RFC 3339 date with or without fractional seconds.
    public static func parseDate(_ text: String) -> Date? {
        formatters.withLock { $0.plain.date(from: text) ?? $0.fractional.date(from: text) }
    }

    static func iso8601String(_ date: Date) -> String {
        formatters.withLock { $0.plain.string(from: date) }
    }

    static func describe(_ value: JSONValue) -> String {
        switch value {
        case .null: "null"
        case .bool: "a bool"
        case .integer, .double: "a number"
        case .string: "a string"
        case .array: "an array"
        case .object: "an object"
        }
    }
}
