import Foundation
import HTTPServer
import IsletCore

/// What a query parameter takes. The JSON Schema the OpenAPI document shows and
/// the check the router applies before the handler runs are both made from it, so
/// that the two cannot disagree.
enum QueryRule: Sendable {
    /// A whole number (decimal digits, an optional `-`) in `range`.
    case integer(ClosedRange<Int64>)
    /// Text of a format: its rule and lengths.
    case text(TextFormat)
    /// One of `values`.
    case oneOf([String])
    /// Text matching `pattern` (anchored; ECMA-262 and Foundation read it alike),
    /// shorter than `QueryParameter.longestPattern`.
    case pattern(String)
    /// Comma-separated items, each keeping `item` (checked as a body's string of that
    /// rule is), with spaces around it allowed.
    case list(item: TextRule)

    /// The JSON Schema of the parameter's values.
    var jsonSchema: JSONValue {
        switch self {
        case .integer(let range):
            ["type": "integer", "minimum": .integer(range.lowerBound), "maximum": .integer(range.upperBound)]
        case .text(let format): format.jsonSchema
        case .oneOf(let values): ["type": "string", "enum": .array(values.map(JSONValue.string))]
        case .pattern(let pattern): ["type": "string", "pattern": .string(pattern)]
        case .list(let item): ["type": "string", "pattern": .string(QueryRule.listPattern(item.group))]
        }
    }

    /// The pattern of a whole list of `item`s.
    static func listPattern(_ item: String) -> String { "^ *\(item) *(, *\(item) *)*$" }

    /// The message of a value the rule refuses, when the parameter names none.
    func message(_ text: String) -> String {
        switch self {
        case .integer(let range): "must be a whole number from \(range.lowerBound) to \(range.upperBound)"
        case .text(let format): format.problem(text) ?? "is invalid"
        case .oneOf(let values): "must be \(QueryRule.alternatives(values))"
        case .pattern(let pattern): "must match \(pattern)"
        case .list(let item): item.problem(text) ?? "is invalid"
        }
    }

    /// `a, b or c`.
    static func alternatives(_ values: [String]) -> String {
        values.count < 2 ? values.joined() : values.dropLast().joined(separator: ", ") + " or " + values[values.count - 1]
    }
}

/// A query parameter a route declares: its name, what it means, the rule its values
/// keep, its default, and the typed value a handler reads (`RouteRequest.query`). A
/// route that declares any refuses the names it does not declare; the router checks
/// every declared one before the handler runs and answers one 422 naming each at
/// fault.
struct QueryParameter: Sendable {
    /// A value the parameter's rule took, as the handler receives it.
    typealias Convert = @Sendable (String) -> (any Sendable)?

    /// What a cursor parameter is, as every paged list says it.
    static let cursorDescription = "The next_cursor of the previous page."
    /// What a refused cursor is told, on every paged list.
    static let cursorMessage = "must be the next_cursor of a previous page"

    /// The longest pattern (in UTF-16 code units) a `.pattern` rule may have, plus
    /// one: Foundation on Linux keeps the UTF-16 copy of a pattern of 256 code units
    /// or more and never frees it (`_CFRegularExpressionCreate` frees it on its
    /// failure path only), which the fuzz smoke's LeakSanitizer reports. A longer
    /// rule is a `TextRule` (a `.text` or `.list` parameter), checked in Swift.
    static let longestPattern = 256

    let name: String
    let description: String
    let rule: QueryRule
    /// What a refused value is told; nil: the rule's own message.
    let message: String?
    /// The value a handler reads when the request does not give the parameter (the
    /// document shows it as the schema's `default`); nil: none.
    let defaultValue: (any Sendable)?
    /// `defaultValue` as the document shows it.
    private let defaultJSON: JSONValue?
    /// The handler's value of a text the rule took; nil is refused like a broken rule.
    let convert: Convert
    /// Whether the parameter is one of a request's at all (the events' `limit` is
    /// not one of a stream's); where it is not, it is refused by name as unknown.
    let applies: @Sendable (HTTPRequest) -> Bool
    /// The compiled pattern of a `.pattern`.
    private let regex: NSRegularExpression?

    private init(
        name: String, description: String, rule: QueryRule, message: String? = nil,
        default defaultValue: (value: any Sendable, json: JSONValue)? = nil,
        applies: @escaping @Sendable (HTTPRequest) -> Bool = { _ in true }, convert: @escaping Convert
    ) {
        self.name = name
        self.description = description
        self.rule = rule
        self.message = message
        self.defaultValue = defaultValue?.value
        self.defaultJSON = defaultValue?.json
        self.applies = applies
        self.convert = convert
        if case .pattern(let pattern) = rule {
            precondition(
                pattern.utf16.count < Self.longestPattern,
                "the pattern of query parameter \(name) is too long for Foundation to compile without a leak")
            regex = try? NSRegularExpression(pattern: pattern)
        } else {
            regex = nil
        }
    }

    /// The JSON Schema the document shows.
    var schema: JSONValue {
        guard let defaultJSON, case .object(var schema) = rule.jsonSchema else { return rule.jsonSchema }
        schema["default"] = defaultJSON
        return .object(schema)
    }

    /// A whole number in `range`, read as `Int64`; `default` when the request has none.
    static func integer(
        _ name: String, _ description: String, _ range: ClosedRange<Int64>, default defaultValue: Int64? = nil,
        message: String? = nil, applies: @escaping @Sendable (HTTPRequest) -> Bool = { _ in true }
    ) -> QueryParameter {
        precondition(defaultValue.map(range.contains) ?? true, "the default of query parameter \(name) is out of its range")
        return QueryParameter(
            name: name, description: description, rule: .integer(range), message: message,
            default: defaultValue.map { ($0, .integer($0)) }, applies: applies
        ) { Int64($0) }
    }

    /// Text of `format`, read as `String`.
    static func text(_ name: String, _ description: String, _ format: TextFormat) -> QueryParameter {
        QueryParameter(name: name, description: description, rule: .text(format)) { $0 }
    }

    /// One of the cases of `type`, read as that type.
    static func oneOf<Value: RawRepresentable & CaseIterable & Sendable>(
        _ name: String, _ description: String, _ type: Value.Type
    ) -> QueryParameter where Value.RawValue == String {
        QueryParameter(name: name, description: description, rule: .oneOf(type.allCases.map(\.rawValue))) {
            Value(rawValue: $0)
        }
    }

    /// Text matching `pattern`, read by `convert`.
    static func pattern<Value: Sendable>(
        _ name: String, _ description: String, _ pattern: String, message: String,
        convert: @escaping @Sendable (String) -> Value?
    ) -> QueryParameter {
        QueryParameter(name: name, description: description, rule: .pattern(pattern), message: message) { convert($0) }
    }

    /// A paged list's `cursor`: text matching `pattern`, read by `convert`.
    static func cursor<Value: Sendable>(_ pattern: String, convert: @escaping @Sendable (String) -> Value?) -> QueryParameter {
        .pattern("cursor", cursorDescription, pattern, message: cursorMessage, convert: convert)
    }

    /// Comma-separated items keeping `item`, each read by `convert`: an `[Value]`.
    /// A refused item is named `name[index]` when there are several.
    static func list<Value: Sendable>(
        _ name: String, _ description: String, item: TextRule, convert: @escaping @Sendable (String) -> Value?
    ) -> QueryParameter {
        QueryParameter(name: name, description: description, rule: .list(item: item)) { text in
            let items = QueryParameter.items(text).map(convert)
            return items.contains { $0 == nil } ? nil : items.compactMap { $0 }
        }
    }

    /// The items of a list, spaces around them dropped.
    private static func items(_ text: String) -> [String] {
        text.split(separator: ",", omittingEmptySubsequences: false).map { item in
            String(item.drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
        }
    }

    /// Whether `text` is matched whole by `regex` (`$` also matches before a final
    /// line break in Foundation, where ECMA-262's does not).
    private func matches(_ text: String) -> Bool {
        guard let regex else { return false }
        let whole = NSRange(text.startIndex..., in: text)
        return regex.firstMatch(in: text, range: whole)?.range == whole
    }

    /// The value of `text`, or the faults (field and message) that refuse it.
    func read(_ text: String) -> Result<any Sendable, QueryFaults> {
        var kept: Bool
        switch rule {
        // JSON's spelling of a number: no `+`.
        case .integer(let range): kept = !text.hasPrefix("+") && (Int64(text).map(range.contains) ?? false)
        case .text(let format): kept = format.problem(text) == nil
        case .oneOf(let values): kept = values.contains(text)
        case .pattern: kept = matches(text)
        case .list(let item):
            let items = Self.items(text)
            var faults: [Problem.FieldError] = []
            for (index, text) in items.enumerated() where item.problem(text) != nil || convert(text) == nil {
                faults.append(.init(field: items.count == 1 ? name : "\(name)[\(index)]", message: message ?? rule.message(text)))
            }
            if !faults.isEmpty { return .failure(QueryFaults(errors: faults)) }
            kept = true
        }
        if kept, let value = convert(text) { return .success(value) }
        return .failure(QueryFaults(errors: [.init(field: name, message: message ?? rule.message(text))]))
    }
}

/// The faults of a query parameter's value.
struct QueryFaults: Error {
    let errors: [Problem.FieldError]
}

/// The checked values of a request's declared query parameters, by name, as their
/// declarations read them (a declared default standing for an absent one).
struct QueryValues: Sendable {
    private var values: [String: any Sendable] = [:]

    init() {}

    /// Checks `request`'s query against `declared`: every name it holds must be a
    /// declared parameter that applies to the request, and every value must keep its
    /// rule; else a 422 naming each at fault (unknown names first, in the query's
    /// order, then the declared ones in their order, then `alsoFaults`: what the
    /// route found wrong in the same pass, such as a header it reads). A repeated
    /// name is read by its first value.
    init(_ request: HTTPRequest, declared: [QueryParameter], alsoFaults: [Problem.FieldError] = []) throws(Problem) {
        var errors: [Problem.FieldError] = []
        // A default stands for its parameter wherever the request does not give it
        // (also where the parameter does not apply: a stream served as a page).
        for parameter in declared { if let value = parameter.defaultValue { values[parameter.name] = value } }
        let applying = declared.filter { $0.applies(request) }
        for (name, _) in request.query where !applying.contains(where: { $0.name == name }) {
            errors.append(.init(field: name, message: "is not a query parameter of this route"))
        }
        for parameter in applying {
            guard let text = request.queryValue(parameter.name) else { continue }
            switch parameter.read(text) {
            case .success(let value): values[parameter.name] = value
            case .failure(let faults): errors += faults.errors
            }
        }
        errors += alsoFaults
        guard errors.isEmpty else { throw Problem(status: 422, detail: "The query has invalid parameters.", errors: errors) }
    }

    /// The value of parameter `name`, when the request has it (or it has a default).
    subscript<Value>(_ name: String, as type: Value.Type = Value.self) -> Value? {
        guard let value = values[name] else { return nil }
        assert(value is Value, "the query parameter \(name) is read as \(type), not \(Swift.type(of: value))")
        return value as? Value
    }

    /// The value of a whole-number parameter `name`, as an `Int`.
    func int(_ name: String) -> Int? { self[name, as: Int64.self].map { Int($0) } }

    /// The value of whole-number parameter `name`, declared with a default: the
    /// request's, or else the default.
    func defaultedInt(_ name: String) -> Int {
        guard let value = int(name) else { preconditionFailure("the query parameter \(name) has no default") }
        return value
    }
}
