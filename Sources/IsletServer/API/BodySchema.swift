import Foundation
import IsletCore

/// The rule a string of the API follows: the JSON Schema pattern the OpenAPI
/// document shows and the check the server applies are both made here, from the
/// same character sets, so that the two cannot disagree.
enum TextRule: Sendable, Equatable {
    /// Any text.
    case plain
    /// An id of the app's own (device, activity, user): no `/`, whitespace or
    /// control character.
    case identifier
    /// The name of an app's `ActivityAttributes` type: letters, digits, `_` and `.`,
    /// not starting with a digit.
    case activityType
    /// A bundle id: dot-separated labels of letters, digits and `-`.
    case bundleID
    /// A team id or key id: upper-case letters and digits.
    case appleID
    /// A push token: hex, of even length.
    case token
    /// An `Idempotency-Key`: visible ASCII.
    case visibleASCII
    /// An app id as minted: `app_` and lower-case hex digits.
    case appID
    /// An APNs signing key in PEM: the armour of a PKCS #8 key (`PRIVATE KEY`, as
    /// Apple's .p8 files are) or an SEC 1 one (`EC PRIVATE KEY`) around lines of
    /// base64, with blank space around it. Whether the key inside is a P-256 key is
    /// checked apart (a pattern cannot tell).
    case privateKeyPEM
    /// A webhook URL: absolute, `https` (or `http` when `allowHTTP`), a host name or
    /// an IP address in brackets, an optional port, and RFC 3986's characters after
    /// it; no credentials. Whether the host resolves to an address webhooks may
    /// reach is checked apart.
    case webhookURL(allowHTTP: Bool)
    /// What a webhook takes: an event type (`push.failed`), a family of them
    /// (`activity.*`), or `*`.
    case eventPattern

    /// Unicode's White_Space characters (what `Character.isWhitespace` and
    /// `Unicode.Scalar.Properties.isWhitespace` answer true for), as ranges.
    static let whitespace: [ClosedRange<UInt32>] = [
        0x09...0x0D, 0x20...0x20, 0x85...0x85, 0xA0...0xA0, 0x1680...0x1680, 0x2000...0x200A, 0x2028...0x2029,
        0x202F...0x202F, 0x205F...0x205F, 0x3000...0x3000,
    ]

    /// What an identifier may not contain: `/`, control characters (C0 and DEL) and
    /// whitespace.
    static let identifierForbidden: [ClosedRange<UInt32>] =
        [0x00...0x1F, 0x2F...0x2F, 0x7F...0x7F] + whitespace

    /// What a bundle id may not contain: APNs topics carry it after the bare id.
    static let pushTypeInfix = ".push-type."

    /// The ECMA-262 pattern of the rule (anchored), without the length limits.
    var pattern: String? {
        switch self {
        case .plain: "^[^\\u0000]*$"
        case .identifier: "^[^" + TextRule.identifierForbidden.map(TextRule.patternRange).joined() + "]+$"
        case .activityType: "^[A-Za-z_.][A-Za-z0-9_.]*$"
        case .bundleID: "^[A-Za-z0-9-]+(\\.[A-Za-z0-9-]+)*$"
        case .appleID: "^[A-Z0-9]+$"
        case .token: "^([0-9a-fA-F]{2})+$"
        case .visibleASCII: "^[!-~]+$"
        case .appID: "^app_[0-9a-f]+$"
        case .privateKeyPEM: TextRule.privateKeyPEMPattern
        case .webhookURL(let allowHTTP): allowHTTP ? TextRule.httpURLPattern : TextRule.httpsURLPattern
        case .eventPattern: "^" + TextRule.oneEventPattern + "$"
        }
    }

    /// The rule's pattern without its anchors, as one group: an item of a list
    /// (`QueryRule.list`).
    var group: String {
        if self == .eventPattern { return TextRule.oneEventPattern }
        let pattern = self.pattern ?? "^.*$"
        return "(" + pattern.dropFirst().dropLast() + ")"
    }

    /// Blank space around a PEM block.
    private static let blank = "[ \\t\\r\\n]*"
    /// The armour of a PKCS #8 or SEC 1 key around base64 lines.
    static let privateKeyPEMPattern: String = {
        let lines = "([A-Za-z0-9+/=]+\\r?\\n)+"
        func block(_ label: String) -> String {
            "-----BEGIN \(label)-----\\r?\\n" + lines + "-----END \(label)-----"
        }
        return "^" + blank + "(" + block("PRIVATE KEY") + "|" + block("EC PRIVATE KEY") + ")" + blank + "$"
    }()

    /// An absolute URL of scheme `scheme` (a case-insensitive pattern) as webhooks
    /// take it.
    private static func urlPattern(scheme: String) -> String {
        // RFC 3986's unreserved characters and sub-delimiters; "-" last, as a class
        // takes it literally there.
        let plain = "A-Za-z0-9._~!$&'()*+,;="
        let escaped = "%[0-9A-Fa-f]{2}"
        let host = "(\\[[0-9A-Fa-f:.]+\\]|[\(plain)-]+)"
        let segment = "([\(plain):@-]|\(escaped))*"
        let query = "([\(plain):@/?-]|\(escaped))*"
        return "^" + scheme + "://" + host + "(:[0-9]{1,5})?" + "(/" + segment + ")*" + "(\\?" + query + ")?"
            + "(#" + query + ")?$"
    }
    static let httpsURLPattern = urlPattern(scheme: "[Hh][Tt][Tt][Pp][Ss]")
    static let httpURLPattern = urlPattern(scheme: "[Hh][Tt][Tt][Pp][Ss]?")

    /// One event pattern (`*`, a family such as `activity.*`, or a type), as a group
    /// of alternatives.
    static let oneEventPattern: String = {
        let families = Set(EventType.allCases.map { String($0.family) }).sorted().map { "\($0)\\.\\*" }
        let exact = EventType.allCases.map { $0.rawValue.replacingOccurrences(of: ".", with: "\\.") }
        return "(\\*|" + (families + exact).joined(separator: "|") + ")"
    }()

    /// The rules checked by their pattern itself, compiled once.
    private static let compiled: [String: NSRegularExpression] = {
        var compiled: [String: NSRegularExpression] = [:]
        for pattern in [privateKeyPEMPattern, httpsURLPattern, httpURLPattern] {
            compiled[pattern] = try? NSRegularExpression(pattern: pattern)
        }
        return compiled
    }()

    /// Whether `text` matches `pattern` (one of `compiled`) as a whole: the match
    /// must cover it all, since `$` here also matches before a final line break,
    /// where ECMA-262's does not.
    private static func matches(_ text: String, _ pattern: String) -> Bool {
        guard let regex = compiled[pattern] else { return false }
        let whole = NSRange(text.startIndex..., in: text)
        return regex.firstMatch(in: text, range: whole)?.range == whole
    }

    /// Why `text` breaks the rule, if it does (lengths are checked apart).
    func problem(_ text: String) -> String? {
        let scalars = text.unicodeScalars
        switch self {
        case .plain:
            // No text Islet stores may hold U+0000: PostgreSQL's text cannot, and
            // nothing a person or an app writes has a use for it.
            return scalars.contains("\u{0}") ? "must not contain the NUL character (U+0000)" : nil
        case .identifier:
            if scalars.contains(where: { $0 == "/" }) { return "must not contain /" }
            if scalars.contains(where: { scalar in TextRule.identifierForbidden.contains { $0.contains(scalar.value) } }) {
                return "must not contain whitespace or control characters"
            }
            return nil
        case .activityType:
            let valid = scalars.allSatisfy(TextRule.isTypeNameScalar)
            guard valid, let first = scalars.first, !("0"..."9").contains(first) else {
                return "must be the name of the app's ActivityAttributes type (letters, digits, _ and .)"
            }
            return nil
        case .bundleID:
            let allowed = scalars.allSatisfy { TextRule.isAlphanumeric($0) || $0 == "-" || $0 == "." }
            guard allowed, !text.hasPrefix("."), !text.hasSuffix("."), !text.contains("..") else {
                return "must be a bundle id such as com.example.app (letters, digits, - and .)"
            }
            guard !text.contains(TextRule.pushTypeInfix) else {
                return "must be the bare bundle id, without a .push-type. suffix"
            }
            return nil
        case .appleID:
            return scalars.allSatisfy({ ("A"..."Z").contains($0) || ("0"..."9").contains($0) }) ? nil : TextRule.appleIDProblem
        case .token:
            do {
                try PushToken.validate(text)
            } catch {
                return "\(error.description); a token is hex, of even length, 64 to 512 characters"
            }
            return nil
        case .visibleASCII:
            return scalars.allSatisfy({ (0x21...0x7E).contains($0.value) }) ? nil : "must be visible ASCII characters"
        case .appID:
            let hex = scalars.dropFirst(4).allSatisfy { ("0"..."9").contains($0) || ("a"..."f").contains($0) }
            return text.hasPrefix("app_") && hex ? nil : "must be an app id (app_ and hex digits)"
        case .privateKeyPEM:
            return TextRule.matches(text, TextRule.privateKeyPEMPattern)
                ? nil : "must be the .p8 key's PEM text, from -----BEGIN PRIVATE KEY----- to -----END PRIVATE KEY-----"
        case .webhookURL(let allowHTTP):
            guard TextRule.matches(text, allowHTTP ? TextRule.httpURLPattern : TextRule.httpsURLPattern) else {
                let scheme = allowHTTP ? "an absolute http or https URL" : "an absolute https URL (http needs --webhooks-allow-http)"
                return "must be \(scheme) with a host and no credentials, in URL characters (others %-encoded)"
            }
            return nil
        case .eventPattern:
            return EventPattern(text) == nil ? "must be \(EventPattern.explanation)" : nil
        }
    }

    static let appleIDProblem = "must be 10 upper-case letters and digits, as in the Apple developer account"

    private static func isAlphanumeric(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || ("0"..."9").contains(scalar)
    }

    private static func isTypeNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        isAlphanumeric(scalar) || scalar == "_" || scalar == "."
    }

    private static func patternRange(_ range: ClosedRange<UInt32>) -> String {
        func escape(_ value: UInt32) -> String {
            value <= 0xFF ? String(format: "\\x%02X", value) : String(format: "\\u%04X", value)
        }
        return range.lowerBound == range.upperBound
            ? escape(range.lowerBound) : escape(range.lowerBound) + "-" + escape(range.upperBound)
    }
}

/// A string's rule and its length, in Unicode code points as JSON Schema counts.
struct TextFormat: Sendable, Equatable {
    var rule: TextRule = .plain
    var minLength = 1
    var maxLength: Int

    static func text(max: Int) -> TextFormat { TextFormat(maxLength: max) }
    static let identifier = TextFormat(rule: .identifier, maxLength: 128)
    static let activityType = TextFormat(rule: .activityType, maxLength: 128)
    static let bundleID = TextFormat(rule: .bundleID, maxLength: 155)
    static let appleID = TextFormat(rule: .appleID, minLength: 10, maxLength: 10)
    static let token = TextFormat(rule: .token, minLength: PushToken.minimumLength, maxLength: PushToken.maximumLength)
    static let idempotencyKey = TextFormat(rule: .visibleASCII, maxLength: 255)
    static let privateKeyPEM = TextFormat(rule: .privateKeyPEM, maxLength: 10_000)
    static let eventPattern = TextFormat(rule: .eventPattern, maxLength: 64)
    static func webhookURL(allowHTTP: Bool) -> TextFormat { TextFormat(rule: .webhookURL(allowHTTP: allowHTTP), maxLength: 2_048) }

    /// Why `text` does not fit, if it does not.
    func problem(_ text: String) -> String? {
        let length = text.unicodeScalars.count
        if length == 0 && minLength > 0 { return "must not be empty" }
        // A token's own check names its faults (length included).
        if rule == .token { return rule.problem(text) }
        if length > maxLength { return "must be at most \(maxLength) characters (it has \(length))" }
        if let problem = rule.problem(text) { return problem }
        if length < minLength {
            return rule == .appleID
                ? TextRule.appleIDProblem : "must be at least \(minLength) characters (it has \(length))"
        }
        return nil
    }

    /// The JSON Schema of such a string.
    var jsonSchema: JSONValue {
        var schema: [String: JSONValue] = ["type": "string", "maxLength": .integer(Int64(maxLength))]
        if minLength > 0 { schema["minLength"] = .integer(Int64(minLength)) }
        if let pattern = rule.pattern { schema["pattern"] = .string(pattern) }
        if rule == .bundleID { schema["not"] = ["pattern": "\\.push-type\\."] }
        return .object(schema)
    }
}

/// What a field of a request body holds.
indirect enum FieldType: Sendable {
    /// A string.
    case string(TextFormat)
    /// A push token (lower-cased when read); with `emptyMeansAbsent` an empty string
    /// reads as no token.
    case token(emptyMeansAbsent: Bool)
    /// A finite number.
    case number
    /// A whole number, one of `allowed`.
    case integer(allowed: [Int])
    /// A whole number within `range`.
    case count(ClosedRange<Int>)
    /// A finite number within `range`; `note` says the range in words, after the
    /// figures, in the message that refuses a number outside it.
    case bounded(ClosedRange<Double>, note: String? = nil)
    /// `true` or `false`.
    case bool
    /// Unix seconds (a number from 0, below 1e11) or an RFC 3339 string.
    case date
    /// One of a few strings.
    case enumeration([String])
    /// An array of strings.
    case strings(minCount: Int, maxCount: Int, item: TextFormat)
    /// Any non-empty JSON object, passed through (content states, attributes).
    case anyObject
    /// A nested object with fields of its own.
    case object(BodySchema)
    /// An array of objects, each with the fields of `schema`.
    case objects(BodySchema, maxCount: Int)
    /// Field definitions of an activity type (`{name: Field}`).
    case fieldDefinitions
}

/// One field of a request body.
struct BodyField: Sendable {
    let name: String
    let type: FieldType
    let required: Bool
    /// Whether an explicit `null` is taken (as absent, or with a meaning of its own
    /// the description gives). A required field never is.
    let nullable: Bool
    let description: String?

    init(_ name: String, _ type: FieldType, required: Bool = false, nullable: Bool? = nil, description: String? = nil) {
        self.name = name
        self.type = type
        self.required = required
        self.nullable = nullable ?? !required
        self.description = description
    }
}

/// The fields of a request body (or of an object inside one): what the strict reader
/// (`RequestBody`) enforces and what the OpenAPI document shows, from one
/// definition.
struct BodySchema: Sendable {
    let fields: [BodyField]
    /// Exactly one of these fields must be given (with a value other than null).
    let exactlyOne: [String]?
    /// A rule between fields that the service checks, as the alternatives of a JSON
    /// Schema `anyOf` (the document shows it; the reader leaves it to the service).
    let anyOf: [JSONValue]?
    /// At least one field must be given (the handler names the fault): the
    /// document shows it as `minProperties: 1`, and the body is required.
    let atLeastOne: Bool

    init(_ fields: [BodyField], exactlyOne: [String]? = nil, anyOf: [JSONValue]? = nil, atLeastOne: Bool = false) {
        self.fields = fields
        self.exactlyOne = exactlyOne
        self.anyOf = anyOf
        self.atLeastOne = atLeastOne
    }

    subscript(name: String) -> BodyField? { fields.first { $0.name == name } }

    var names: [String] { fields.map(\.name) }

    /// Whether the body must be sent at all: an absent body reads as `{}`.
    var requiresBody: Bool { fields.contains(where: \.required) || exactlyOne != nil || atLeastOne }

    /// The JSON Schema: an object with exactly these properties.
    var jsonSchema: JSONValue {
        var properties: [String: JSONValue] = [:]
        for field in fields { properties[field.name] = field.jsonSchema }
        var schema: [String: JSONValue] = [
            "type": "object", "properties": .object(properties), "additionalProperties": false,
        ]
        let required = fields.filter(\.required).map { JSONValue.string($0.name) }
        if !required.isEmpty { schema["required"] = .array(required) }
        if exactlyOne != nil {
            schema["minProperties"] = 1
            schema["maxProperties"] = 1
        } else if atLeastOne {
            schema["minProperties"] = 1
        }
        if let anyOf { schema["anyOf"] = .array(anyOf) }
        return .object(schema)
    }
}

extension BodyField {
    /// The field's JSON Schema, null included when it is nullable.
    var jsonSchema: JSONValue {
        var schema = type.jsonSchema
        if nullable {
            if case .object(var members) = schema, case .string(let name)? = members["type"] {
                members["type"] = [.string(name), "null"]
                // An enumeration lists every value it takes: null too.
                if case .array(let values)? = members["enum"] { members["enum"] = .array(values + [.null]) }
                schema = .object(members)
            } else {
                schema = ["anyOf": [schema, ["type": "null"]]]
            }
        }
        if let description, case .object(var members) = schema {
            members["description"] = .string(description)
            schema = .object(members)
        }
        return schema
    }
}

extension FieldType {
    /// Dates given as numbers are refused from here on: they look like milliseconds.
    static let millisecondThreshold = 1e11

    /// The years a date given as a string may name: from 1971 (before that is
    /// before 1970 in some offset, and no Unix seconds) to 4999 (well below the
    /// milliseconds threshold in any offset).
    static let dateYears = 1971...4999
    /// `dateYears` as the pattern of a string's first digits.
    static let dateYearPattern = "^(197[1-9]|19[89][0-9]|[2-4][0-9]{3})-"

    /// Whether an RFC 3339 string names a year of `dateYears`.
    static func dateYearAllowed(_ text: String) -> Bool {
        let digits = text.utf8.prefix(5)
        guard digits.count == 5, digits.last == UInt8(ascii: "-"), let year = Int(String(decoding: digits.dropLast(), as: UTF8.self))
        else { return false }
        return dateYears.contains(year)
    }

    var jsonSchema: JSONValue {
        switch self {
        case .string(let format):
            return format.jsonSchema
        case .token(let emptyMeansAbsent):
            let token = TextFormat.token.jsonSchema
            return emptyMeansAbsent ? ["anyOf": [token, ["const": ""]]] : token
        case .number:
            return ["type": "number"]
        case .integer(let allowed):
            return ["type": "integer", "enum": .array(allowed.map { .integer(Int64($0)) })]
        case .count(let range):
            return [
                "type": "integer", "minimum": .integer(Int64(range.lowerBound)),
                "maximum": .integer(Int64(range.upperBound)),
            ]
        case .bounded(let range, _):
            return ["type": "number", "minimum": .double(range.lowerBound), "maximum": .double(range.upperBound)]
        case .bool:
            return ["type": "boolean"]
        case .date:
            return [
                "anyOf": [
                    ["type": "number", "minimum": 0, "exclusiveMaximum": .double(FieldType.millisecondThreshold)],
                    ["type": "string", "format": "date-time", "pattern": .string(FieldType.dateYearPattern)],
                ],
                "description": "Unix seconds, or an RFC 3339 date",
            ]
        case .enumeration(let values):
            return ["type": "string", "enum": .array(values.map(JSONValue.string))]
        case .strings(let minCount, let maxCount, let item):
            var schema: [String: JSONValue] = [
                "type": "array", "items": item.jsonSchema, "maxItems": .integer(Int64(maxCount)),
            ]
            if minCount > 0 { schema["minItems"] = .integer(Int64(minCount)) }
            return .object(schema)
        case .anyObject:
            return ["type": "object", "minProperties": 1]
        case .object(let schema):
            return schema.jsonSchema
        case .objects(let schema, let maxCount):
            return ["type": "array", "items": schema.jsonSchema, "maxItems": .integer(Int64(maxCount))]
        case .fieldDefinitions:
            return [
                "type": "object", "propertyNames": ["minLength": 1],
                "additionalProperties": ["$ref": "#/components/schemas/Field"],
            ]
        }
    }
}
