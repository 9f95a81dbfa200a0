import Foundation
import HTTPServer
import IsletCore

/// Reads a JSON request body strictly: every field is checked for its type and
/// rules, every fault is collected with its path (`alert.title`), and fields the
/// route does not know are refused by name, so that a typo such as `stale_data`
/// never passes silently. `finish()` throws one 422 listing every fault.
final class RequestBody {
    private var errors: [Problem.FieldError] = []

    /// The body's top-level object.
    let root: ObjectReader

    /// Parses `request`'s body: 400 when it is not JSON, 422 when it is not an
    /// object. An empty body reads as `{}`.
    init(_ request: HTTPRequest) throws(Problem) {
        let value: JSONValue
        if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            value = .object([:])
        } else {
            do {
                value = try JSONValue(parsing: request.body)
            } catch {
                throw Problem(status: 400, detail: "The request body is not valid JSON: \(error).")
            }
        }
        guard let members = value.objectValue else {
            throw Problem(status: 422, detail: "The request body must be a JSON object.")
        }
        root = ObjectReader(path: "", members: members)
        root.body = self
    }

    /// Records a fault at `field`.
    func fail(_ field: String, _ message: String) {
        errors.append(Problem.FieldError(field: field, message: message))
    }

    /// Whether any fault was found so far.
    var hasErrors: Bool { !errors.isEmpty }

    /// `value`, which a field reader answered after `finish()` passed; a nil here
    /// is a 422 naming `field`, never a crash.
    func required<T>(_ value: T?, _ field: String) throws(Problem) -> T {
        guard let value else {
            throw Problem(status: 422, detail: "The field \(field) is invalid.", errors: [.init(field: field, message: "is invalid")])
        }
        return value
    }

    /// Throws a 422 listing every fault, if any; checks the root object for unknown
    /// fields first.
    func finish() throws(Problem) {
        root.rejectUnknown()
        guard !errors.isEmpty else { return }
        let fields = errors.map(\.field)
        let detail = errors.count == 1
            ? "The field \(fields[0]) is invalid: \(errors[0].message)."
            : "\(errors.count) fields are invalid: \(fields.joined(separator: ", "))."
        throw Problem(status: 422, detail: detail, errors: errors)
    }
}

/// One JSON object of a request body, read field by field.
final class ObjectReader {
    let path: String
    let members: [String: JSONValue]
    private var read: Set<String> = []
    private var children: [ObjectReader] = []
    fileprivate weak var body: RequestBody?
    private var owner: RequestBody? { body }

    fileprivate init(path: String, members: [String: JSONValue]) {
        self.path = path
        self.members = members
    }

    func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Records a fault at `key` of this object.
    func fail(_ key: String, _ message: String) { owner?.fail(field(key), message) }

    /// Whether the body has `key` with a value other than null.
    func hasValue(_ key: String) -> Bool { members[key].map { $0 != .null } ?? false }

    /// The raw value of `key`, marking it read; JSON `null` reads as absent.
    private func take(_ key: String, required: Bool) -> JSONValue? {
        read.insert(key)
        guard let value = members[key], value != .null else {
            if required { fail(key, "is required") }
            return nil
        }
        return value
    }

    /// Whether `key` is present and explicitly `null`.
    func isNull(_ key: String) -> Bool {
        read.insert(key)
        return members[key] == .null
    }

    /// A string; `maxLength` in characters.
    func string(_ key: String, required: Bool = false, maxLength: Int = 1_024, allowEmpty: Bool = false) -> String? {
        guard let value = take(key, required: required) else { return nil }
        guard case .string(let text) = value else {
            fail(key, "must be a string")
            return nil
        }
        if text.isEmpty && !allowEmpty {
            fail(key, "must not be empty")
            return nil
        }
        if text.count > maxLength {
            fail(key, "must be at most \(maxLength) characters (it has \(text.count))")
            return nil
        }
        return text
    }

    /// An identifier: 1 to 128 characters, none of them `/`, whitespace or a control
    /// character.
    func identifier(_ key: String, required: Bool = false) -> String? {
        guard let text = string(key, required: required, maxLength: 128) else { return nil }
        if let problem = ObjectReader.identifierProblem(text) {
            fail(key, problem)
            return nil
        }
        return text
    }

    /// Why `text` cannot be an id, if it cannot.
    static func identifierProblem(_ text: String) -> String? {
        if text.isEmpty { return "must not be empty" }
        if text.count > 128 { return "must be at most 128 characters" }
        if text.contains("/") { return "must not contain /" }
        if text.unicodeScalars.contains(where: { $0.properties.isWhitespace || $0.value < 0x20 || $0.value == 0x7F }) {
            return "must not contain whitespace or control characters"
        }
        return nil
    }

    /// A push token: hex, even length, 64 to 512 characters; answered in lowercase.
    /// With `emptyMeansAbsent`, an empty string reads as no token (a registration
    /// that never erases a stored one).
    func token(_ key: String, required: Bool = false, emptyMeansAbsent: Bool = false) -> String? {
        if emptyMeansAbsent, members[key] == .string("") {
            read.insert(key)
            return nil
        }
        guard let text = string(key, required: required, maxLength: 10_000) else { return nil }
        do {
            try PushToken.validate(text)
        } catch {
            fail(key, "\(error.description); a token is hex, of even length, 64 to 512 characters")
            return nil
        }
        return text.lowercased()
    }

    /// A number.
    func double(_ key: String, required: Bool = false, range: ClosedRange<Double>? = nil) -> Double? {
        guard let value = take(key, required: required) else { return nil }
        guard let number = value.doubleValue, number.isFinite else {
            fail(key, "must be a number")
            return nil
        }
        if let range, !range.contains(number) {
            fail(key, "must be from \(ObjectReader.text(range.lowerBound)) to \(ObjectReader.text(range.upperBound))")
            return nil
        }
        return number
    }

    /// A whole number.
    func integer(_ key: String, required: Bool = false, allowed: [Int]? = nil) -> Int? {
        guard let value = take(key, required: required) else { return nil }
        guard let number = value.int64Value, let integer = Int(exactly: number) else {
            fail(key, "must be a whole number")
            return nil
        }
        if let allowed, !allowed.contains(integer) {
            fail(key, "must be one of \(allowed.map(String.init).joined(separator: ", "))")
            return nil
        }
        return integer
    }

    /// A date: Unix seconds as a number, or an RFC 3339 string.
    func date(_ key: String, required: Bool = false) -> Date? {
        guard let value = take(key, required: required) else { return nil }
        switch value {
        case .integer, .double:
            let seconds = value.doubleValue ?? .nan
            guard seconds.isFinite, seconds >= 0 else {
                fail(key, "must be Unix seconds (a number from 0) or an RFC 3339 date")
                return nil
            }
            guard seconds < 1e11 else {
                fail(key, "\(ObjectReader.text(seconds)) looks like milliseconds; give Unix seconds")
                return nil
            }
            return Date(timeIntervalSince1970: seconds)
        case .string(let text):
            if let date = SchemaCheck.parseDate(text) { return date }
            fail(key, "\"\(text)\" is not an RFC 3339 date such as 2026-01-31T18:30:00Z")
            return nil
        default:
            fail(key, "must be Unix seconds or an RFC 3339 date")
            return nil
        }
    }

    /// One of the raw values of `type`.
    func enumeration<T: RawRepresentable & CaseIterable>(_ key: String, as type: T.Type, required: Bool = false) -> T?
    where T.RawValue == String {
        guard let text = string(key, required: required) else { return nil }
        guard let value = T(rawValue: text) else {
            fail(key, "must be one of \(T.allCases.map { "\"\($0.rawValue)\"" }.joined(separator: ", "))")
            return nil
        }
        return value
    }

    /// A non-empty array of non-empty strings, each at most `maxLength` characters.
    func strings(_ key: String, required: Bool = false, maxCount: Int = 10_000, maxLength: Int = 256, allowEmptyList: Bool = false) -> [String]? {
        guard let value = take(key, required: required) else { return nil }
        guard case .array(let elements) = value else {
            fail(key, "must be an array of strings")
            return nil
        }
        if elements.isEmpty && !allowEmptyList {
            fail(key, "must not be empty")
            return nil
        }
        if elements.count > maxCount {
            fail(key, "must have at most \(maxCount) entries (it has \(elements.count))")
            return nil
        }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element, !text.isEmpty, text.count <= maxLength else {
                owner?.fail("\(field(key))[\(index)]", "must be a non-empty string of at most \(maxLength) characters")
                return nil
            }
            strings.append(text)
        }
        return strings
    }

    /// A bool.
    func bool(_ key: String, required: Bool = false) -> Bool? {
        guard let value = take(key, required: required) else { return nil }
        guard case .bool(let flag) = value else {
            fail(key, "must be true or false")
            return nil
        }
        return flag
    }

    /// Any JSON value, unchecked (for parts a caller checks itself).
    func raw(_ key: String, required: Bool = false) -> JSONValue? {
        take(key, required: required)
    }

    /// Any JSON object, passed through whole (content states, attributes).
    func jsonObject(_ key: String, required: Bool = false) -> JSONValue? {
        guard let value = take(key, required: required) else { return nil }
        guard case .object(let members) = value else {
            fail(key, "must be a JSON object")
            return nil
        }
        if members.isEmpty {
            fail(key, "must not be an empty object")
            return nil
        }
        return value
    }

    /// A nested object, read field by field; its unknown fields are refused too.
    func object(_ key: String, required: Bool = false) -> ObjectReader? {
        guard let value = take(key, required: required) else { return nil }
        guard case .object(let members) = value else {
            fail(key, "must be a JSON object")
            return nil
        }
        let child = ObjectReader(path: field(key), members: members)
        child.body = owner
        children.append(child)
        return child
    }

    /// Reports every member nobody read, here and in the nested objects read.
    fileprivate func rejectUnknown() {
        for key in members.keys.sorted() where !read.contains(key) {
            let known = read.sorted()
            var message = "is not a field of this request"
            if let guess = ObjectReader.closest(to: key, in: known) { message += "; did you mean \(guess)?" }
            owner?.fail(field(key), message)
        }
        for child in children { child.rejectUnknown() }
    }

    /// The known field nearest to `key` by edit distance, if it is near.
    static func closest(to key: String, in known: [String]) -> String? {
        let scored = known.map { ($0, editDistance(Array(key), Array($0))) }.min { $0.1 < $1.1 }
        guard let (name, distance) = scored, distance <= max(2, key.count / 3) else { return nil }
        return name
    }

    private static func editDistance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + [Int](repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }

    static func text(_ value: Double) -> String {
        if let whole = Int64(exactly: value) { return String(whole) }
        return String(value)
    }
}
