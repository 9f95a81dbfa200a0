public import Foundation

/// A JSON document as a value: what a push payload, an activity's attributes or its
/// content state is before anything decodes it into a type.
///
/// Integers and fractions are kept apart so that a timestamp reads back exactly as
/// it was sent. Parsing (``init(parsing:maximumDepth:)``) is strict RFC 8259 with a
/// depth limit, and is written for the send path, where a payload is read once per
/// push.
public enum JSONValue: Sendable, Hashable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number written without a fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other finite number.
    case double(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object. Member order is not kept. Keys compare as Swift strings do, by
    /// canonical equivalence, so the parser refuses an object that repeats a key,
    /// spelled the same or not ("e\u{301}" and "\u{e9}" are one key).
    case object([String: JSONValue])

    /// What the parser does with an object that names a key twice.
    public enum RepeatedKeys: Sendable {
        /// Refuses it (`JSONParseError.Code.duplicateKey`): the default.
        case refused
        /// Keeps the last value, as most parsers do (and so as APNs may read a
        /// payload; the simulator reads pushes this way).
        case lastWins
    }

    /// Parses `data` as one JSON value, refusing anything RFC 8259 refuses, nesting
    /// deeper than `maximumDepth` arrays and objects, and an object that names a key
    /// twice.
    public init(parsing data: Data, maximumDepth: Int = 64) throws(JSONParseError) {
        try self.init(parsing: data, maximumDepth: maximumDepth, repeatedKeys: .refused)
    }

    /// Parses `data` as one JSON value, as `init(parsing:maximumDepth:)` does, with
    /// repeated keys treated as `repeatedKeys` says.
    public init(parsing data: Data, maximumDepth: Int = 64, repeatedKeys: RepeatedKeys) throws(JSONParseError) {
        let result: Result<JSONValue, JSONParseError> = data.withUnsafeBytes { raw in
            var parser = JSONParser(
                bytes: raw.bindMemory(to: UInt8.self), maximumDepth: maximumDepth, refusesRepeatedKeys: repeatedKeys == .refused)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        self = try result.get()
    }

    /// The member `key` of an object; `nil` when this is not an object or has no
    /// such member.
    public subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }

    /// The members, when this is an object.
    public var objectValue: [String: JSONValue]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, when this is an array.
    public var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let text) = self { return text }
        return nil
    }

    /// The boolean, when this is one.
    public var boolValue: Bool? {
        if case .bool(let flag) = self { return flag }
        return nil
    }

    /// The number as a `Double`, when this is a number.
    public var doubleValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        default: nil
        }
    }

    /// The number as an `Int64`, when this is an integer or a whole fraction (`5.0`)
    /// that fits.
    public var int64Value: Int64? {
        switch self {
        case .integer(let value): value
        case .double(let value): Int64(exactly: value)
        default: nil
        }
    }

    /// Whether this is a number.
    public var isNumber: Bool { doubleValue != nil }

    /// Compact JSON text with members in sorted order, so that equal values always
    /// print the same.
    public var jsonText: String {
        var out: [UInt8] = []
        out.reserveCapacity(64)
        write(to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the value's compact JSON text, members in sorted order, to the UTF-8
    /// bytes `out`.
    public func write(to out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let flag): out.append(contentsOf: (flag ? "true" : "false").utf8)
        case .integer(let value): out.append(contentsOf: String(value).utf8)
        case .double(let value): out.append(contentsOf: (value.isFinite ? "\(value)" : "null").utf8)
        case .string(let text): JSONText.appendQuoted(text, to: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                element.write(to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            // By the keys' UTF-8 bytes, which order as their scalars do (`sortedByScalars`).
            let sorted = members.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }
            for (index, member) in sorted.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONText.appendQuoted(member.key, to: &out)
                out.append(UInt8(ascii: ":"))
                member.value.write(to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }
}

extension JSONValue: Codable {
    /// Reads any JSON value through a `Decoder`.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let flag = try? container.decode(Bool.self) {
            self = .bool(flag)
        } else if let integer = try? container.decode(Int64.self) {
            self = .integer(integer)
        } else if let number = try? container.decode(Double.self) {
            self = .double(number)
        } else if let text = try? container.decode(String.self) {
            self = .string(text)
        } else if let elements = try? container.decode([JSONValue].self) {
            self = .array(elements)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    /// Writes the value through an `Encoder`.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let flag): try container.encode(flag)
        case .integer(let value): try container.encode(value)
        case .double(let value): try container.encode(value)
        case .string(let text): try container.encode(text)
        case .array(let elements): try container.encode(elements)
        case .object(let members): try container.encode(members)
        }
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `null`.
    public init(nilLiteral: ()) { self = .null }
    /// A boolean.
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    public init(integerLiteral value: Int64) { self = .integer(value) }
    /// A fraction.
    public init(floatLiteral value: Double) { self = .double(value) }
    /// A string.
    public init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    public init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    public init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { _, last in last }))
    }
}

/// Text that is not one well-formed JSON value. The description names the fault and
/// the byte offset where it was found, never the text itself.
public struct JSONParseError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case unexpectedEnd, unexpectedCharacter, invalidString, invalidNumber, tooDeep, trailingData, duplicateKey
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The text stops in the middle of a value (or is empty).
        public static let unexpectedEnd = Code(.unexpectedEnd)
        /// A character that cannot start or continue what came before.
        public static let unexpectedCharacter = Code(.unexpectedCharacter)
        /// A string with a raw control character, a bad escape or invalid UTF-8.
        public static let invalidString = Code(.invalidString)
        /// A number JSON does not allow, or one too large to be finite.
        public static let invalidNumber = Code(.invalidNumber)
        /// Arrays and objects nested deeper than the limit.
        public static let tooDeep = Code(.tooDeep)
        /// More text after the value.
        public static let trailingData = Code(.trailingData)
        /// An object names the same key twice (or two keys Swift holds equal: two
        /// spellings of one canonically equivalent string); two readers of such an
        /// object could each take a different value.
        public static let duplicateKey = Code(.duplicateKey)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// What is wrong.
    public let code: Code
    /// The byte offset where the fault was found.
    public let offset: Int
    /// For `duplicateKey`: the key, as it was spelled the second time.
    public let key: String?
    /// For `duplicateKey`: the first spelling, when it differs from `key` (a
    /// canonically equivalent string of other code points).
    public let firstSpelling: String?

    /// Creates an error.
    public init(_ code: Code, offset: Int, key: String? = nil, firstSpelling: String? = nil) {
        self.code = code
        self.offset = offset
        self.key = key
        self.firstSpelling = firstSpelling
    }

    /// The fault and where it is. A repeated key is named (escaped, at most 64
    /// characters), never the values.
    public var description: String {
        guard code == .duplicateKey, let key else { return "\(code) at byte \(offset)" }
        var text = "the key \(Self.shown(key)) appears twice in one object (at byte \(offset))"
        if let firstSpelling {
            text += "; it was spelled \(Self.shown(firstSpelling)) the first time, which Unicode holds to be the same"
                + " text (canonically equivalent), so both name one key"
        }
        return text
    }

    /// A key as JSON would write it, with every code point outside printable ASCII
    /// escaped, so that two equivalent spellings look different.
    static func shown(_ key: String) -> String {
        var out = "\""
        for (count, scalar) in key.unicodeScalars.enumerated() {
            if count == 64 { out += "…"; break }
            switch scalar.value {
            case 0x22: out += "\\\""
            case 0x5C: out += "\\\\"
            case 0x20...0x7E: out.unicodeScalars.append(scalar)
            case 0...0xFFFF: out += "\\u" + Self.hex(scalar.value)
            default:
                let value = scalar.value - 0x10000
                out += "\\u" + Self.hex(0xD800 + (value >> 10)) + "\\u" + Self.hex(0xDC00 + (value & 0x3FF))
            }
        }
        return out + "\""
    }

    private static func hex(_ value: UInt32) -> String {
        let digits = String(value, radix: 16)
        return String(repeating: "0", count: max(0, 4 - digits.count)) + digits
    }
}

/// A recursive-descent RFC 8259 parser over UTF-8 bytes.
private struct JSONParser {
    let bytes: UnsafeBufferPointer<UInt8>
    let maximumDepth: Int
    let refusesRepeatedKeys: Bool
    var index = 0

    init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int, refusesRepeatedKeys: Bool) {
        self.bytes = bytes
        self.maximumDepth = maximumDepth
        self.refusesRepeatedKeys = refusesRepeatedKeys
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        let value = try parseValue(depth: 0)
        skipWhitespace()
        guard index == bytes.count else { throw JSONParseError(.trailingData, offset: index) }
        return value
    }

    private mutating func skipWhitespace() {
        while index < bytes.count {
            switch bytes[index] {
            case 0x20, 0x09, 0x0A, 0x0D: index += 1
            default: return
            }
        }
    }

    private mutating func parseValue(depth: Int) throws(JSONParseError) -> JSONValue {
        skipWhitespace()
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        switch bytes[index] {
        case UInt8(ascii: "{"): return try parseObject(depth: depth + 1)
        case UInt8(ascii: "["): return try parseArray(depth: depth + 1)
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"):
            try expectWord("true")
            return .bool(true)
        case UInt8(ascii: "f"):
            try expectWord("false")
            return .bool(false)
        case UInt8(ascii: "n"):
            try expectWord("null")
            return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
            return try parseNumber()
        default:
            throw JSONParseError(.unexpectedCharacter, offset: index)
        }
    }

    private mutating func expectWord(_ word: StaticString) throws(JSONParseError) {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { throw JSONParseError(.unexpectedEnd, offset: bytes.count) }
        let pointer = word.utf8Start
        for offset in 0..<count where bytes[index + offset] != pointer[offset] {
            throw JSONParseError(.unexpectedCharacter, offset: index + offset)
        }
        index += count
    }

    private mutating func expect(_ byte: UInt8) throws(JSONParseError) {
        skipWhitespace()
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        guard bytes[index] == byte else { throw JSONParseError(.unexpectedCharacter, offset: index) }
        index += 1
    }

    private mutating func parseObject(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw JSONParseError(.tooDeep, offset: index) }
        index += 1
        var members: [String: JSONValue] = [:]
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "}") {
            index += 1
            return .object(members)
        }
        while true {
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            guard bytes[index] == UInt8(ascii: "\"") else { throw JSONParseError(.unexpectedCharacter, offset: index) }
            let keyOffset = index
            let key = try parseString()
            if refusesRepeatedKeys, let index = members.index(forKey: key) {
                let first = members[index].key
                let same = first.unicodeScalars.elementsEqual(key.unicodeScalars)
                throw JSONParseError(.duplicateKey, offset: keyOffset, key: key, firstSpelling: same ? nil : first)
            }
            try expect(UInt8(ascii: ":"))
            members[key] = try parseValue(depth: depth)
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "}"):
                index += 1
                return .object(members)
            default: throw JSONParseError(.unexpectedCharacter, offset: index)
            }
        }
    }

    private mutating func parseArray(depth: Int) throws(JSONParseError) -> JSONValue {
        guard depth <= maximumDepth else { throw JSONParseError(.tooDeep, offset: index) }
        index += 1
        var elements: [JSONValue] = []
        skipWhitespace()
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") {
            index += 1
            return .array(elements)
        }
        while true {
            elements.append(try parseValue(depth: depth))
            skipWhitespace()
            guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
            switch bytes[index] {
            case UInt8(ascii: ","): index += 1
            case UInt8(ascii: "]"):
                index += 1
                return .array(elements)
            default: throw JSONParseError(.unexpectedCharacter, offset: index)
            }
        }
    }

    /// Reads a string whose opening quote is at `index`.
    private mutating func parseString() throws(JSONParseError) -> String {
        index += 1
        let start = index
        var isASCII = true
        // Fast path: no escapes.
        while index < bytes.count {
            let byte = bytes[index]
            if byte == UInt8(ascii: "\"") {
                let span = UnsafeBufferPointer(rebasing: bytes[start..<index])
                let text: String?
                if isASCII {
                    // ASCII is valid UTF-8: skip the slower validating initialiser.
                    text = String(decoding: span, as: UTF8.self)
                } else {
                    text = String(validating: span, as: UTF8.self)
                }
                guard let text else { throw JSONParseError(.invalidString, offset: start) }
                index += 1
                return text
            }
            if byte == UInt8(ascii: "\\") { break }
            guard byte >= 0x20 else { throw JSONParseError(.invalidString, offset: index) }
            if byte >= 0x80 { isASCII = false }
            index += 1
        }
        var buffer = Array(bytes[start..<index])
        while index < bytes.count {
            let byte = bytes[index]
            switch byte {
            case UInt8(ascii: "\""):
                guard let text = String(validating: buffer, as: UTF8.self) else {
                    throw JSONParseError(.invalidString, offset: start)
                }
                index += 1
                return text
            case UInt8(ascii: "\\"):
                try appendEscape(to: &buffer)
            case ..<0x20:
                throw JSONParseError(.invalidString, offset: index)
            default:
                buffer.append(byte)
                index += 1
            }
        }
        throw JSONParseError(.unexpectedEnd, offset: index)
    }

    /// Decodes the escape whose backslash is at `index`.
    private mutating func appendEscape(to buffer: inout [UInt8]) throws(JSONParseError) {
        let escapeStart = index
        index += 1
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        let letter = bytes[index]
        index += 1
        switch letter {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): buffer.append(letter)
        case UInt8(ascii: "b"): buffer.append(0x08)
        case UInt8(ascii: "f"): buffer.append(0x0C)
        case UInt8(ascii: "n"): buffer.append(0x0A)
        case UInt8(ascii: "r"): buffer.append(0x0D)
        case UInt8(ascii: "t"): buffer.append(0x09)
        case UInt8(ascii: "u"):
            var scalar = try readHexQuad()
            if (0xD800...0xDBFF).contains(scalar) {
                guard index + 1 < bytes.count, bytes[index] == UInt8(ascii: "\\"), bytes[index + 1] == UInt8(ascii: "u")
                else { throw JSONParseError(.invalidString, offset: escapeStart) }
                index += 2
                let low = try readHexQuad()
                guard (0xDC00...0xDFFF).contains(low) else { throw JSONParseError(.invalidString, offset: escapeStart) }
                scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
            } else if (0xDC00...0xDFFF).contains(scalar) {
                throw JSONParseError(.invalidString, offset: escapeStart)
            }
            guard let unicode = Unicode.Scalar(scalar) else { throw JSONParseError(.invalidString, offset: escapeStart) }
            buffer.append(contentsOf: UTF8.encode(unicode)!)
        default:
            throw JSONParseError(.invalidString, offset: escapeStart)
        }
    }

    private mutating func readHexQuad() throws(JSONParseError) -> UInt32 {
        guard index + 4 <= bytes.count else { throw JSONParseError(.unexpectedEnd, offset: bytes.count) }
        var value: UInt32 = 0
        for _ in 0..<4 {
            let byte = bytes[index]
            let digit: UInt8
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = byte - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = byte - UInt8(ascii: "a") + 10
            case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = byte - UInt8(ascii: "A") + 10
            default: throw JSONParseError(.invalidString, offset: index)
            }
            value = value << 4 | UInt32(digit)
            index += 1
        }
        return value
    }

    private mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = index
        var isInteger = true
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { throw JSONParseError(.unexpectedEnd, offset: index) }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else if isDigit(bytes[index]) {
            skipDigits()
        } else {
            throw JSONParseError(.invalidNumber, offset: start)
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            isInteger = false
            index += 1
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, offset: start) }
            skipDigits()
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") {
            isInteger = false
            index += 1
            if index < bytes.count, bytes[index] == UInt8(ascii: "+") || bytes[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard index < bytes.count, isDigit(bytes[index]) else { throw JSONParseError(.invalidNumber, offset: start) }
            skipDigits()
        }
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        if isInteger, let integer = Int64(text) { return .integer(integer) }
        guard let number = Double(text), number.isFinite else { throw JSONParseError(.invalidNumber, offset: start) }
        return .double(number)
    }

    private func isDigit(_ byte: UInt8) -> Bool {
        byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9")
    }

    private mutating func skipDigits() {
        while index < bytes.count, isDigit(bytes[index]) { index += 1 }
    }
}
