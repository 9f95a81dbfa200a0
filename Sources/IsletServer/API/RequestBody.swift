import Foundation
import HTTPServer
import IsletCore

/// Reads a JSON request body strictly, by the route's `BodySchema`: every field is
/// checked for the type and limits its definition gives (the same definition the
/// OpenAPI document shows), every fault is collected with its path (`alert.title`),
/// and fields the schema does not know are refused by name, so that a typo such as
/// `stale_data` never passes silently. `finish()` throws one 422 listing every fault.
final class RequestBody {
    private var errors: [Problem.FieldError] = []

    /// The body's top-level object.
    let root: ObjectReader

    /// Parses `request`'s body by `schema`: 415 when it is declared as something
    /// other than JSON, 400 when it is not JSON, 422 when it is not an object. An
    /// empty body reads as `{}`.
    init(_ request: HTTPRequest, schema: BodySchema) throws(Problem) {
        let value: JSONValue
        if request.body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) {
            value = .object([:])
        } else {
            if let contentType = request.headers["Content-Type"], !RequestBody.isJSON(contentType) {
                throw Problem(status: 415, detail: "The request body must be application/json, not \(contentType).")
            }
            do {
                value = try JSONValue(parsing: request.body)
            } catch {
                throw Problem(status: 400, detail: "The request body is not valid JSON: \(error).")
            }
        }
        guard let members = value.objectValue else {
            throw Problem(status: 422, detail: "The request body must be a JSON object.")
        }
        root = ObjectReader(path: "", schema: schema, members: members)
        root.body = self
    }

    /// Whether a Content-Type names JSON: `application/json` or a `+json` type,
    /// with any parameters.
    static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";", maxSplits: 1).first.map(String.init) ?? ""
        let type = media.trimmingOptionalWhitespace().lowercased()
        return type == "application/json" || (type.hasPrefix("application/") && type.hasSuffix("+json"))
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
            ? "The field \(fields[0]) is invalid: \(Problem.sentence(errors[0].message))"
            : "\(errors.count) fields are invalid: \(fields.joined(separator: ", "))."
        throw Problem(status: 422, detail: detail, errors: errors)
    }
}

/// One JSON object of a request body, read field by field; each field is read by
/// the rules of its definition in the object's `BodySchema`.
final class ObjectReader {
    let path: String
    let schema: BodySchema
    let members: [String: JSONValue]
    private var read: Set<String> = []
    private var children: [ObjectReader] = []
    fileprivate weak var body: RequestBody?
    private var owner: RequestBody? { body }

    fileprivate init(path: String, schema: BodySchema, members: [String: JSONValue]) {
        self.path = path
        self.schema = schema
        self.members = members
    }

    func field(_ key: String) -> String { path.isEmpty ? key : "\(path).\(key)" }

    /// Records a fault at `key` of this object.
    func fail(_ key: String, _ message: String) { owner?.fail(field(key), message) }

    /// Whether the body has `key` with a value other than null.
    func hasValue(_ key: String) -> Bool { members[key].map { $0 != .null } ?? false }

    /// The definition of `key`; asking for a field the schema lacks is a mistake of
    /// the route's code.
    private func definition(_ key: String) -> BodyField? {
        guard let field = schema[key] else {
            assertionFailure("\(field(key)) is not in the route's body schema")
            return nil
        }
        return field
    }

    /// The raw value of `key`, marking it read. JSON `null` reads as absent where
    /// the field takes it; a required field that is absent or null is a fault.
    private func take(_ key: String) -> (BodyField, JSONValue)? {
        read.insert(key)
        guard let definition = definition(key) else { return nil }
        guard let value = members[key], value != .null else {
            if definition.required {
                fail(key, "is required")
            } else if members[key] == .null && !definition.nullable {
                fail(key, "must not be null")
            }
            return nil
        }
        return (definition, value)
    }

    /// Whether `key` is present and explicitly `null`.
    func isNull(_ key: String) -> Bool {
        read.insert(key)
        return members[key] == .null
    }

    /// A string, by its definition's format.
    func string(_ key: String) -> String? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .string(let format) = definition.type else { return mismatch(key) }
        guard case .string(let text) = value else {
            fail(key, "must be a string")
            return nil
        }
        if let problem = format.problem(text) {
            fail(key, problem)
            return nil
        }
        return text
    }

    /// A push token, answered in lowercase. Where the definition says so, an empty
    /// string reads as no token (a registration that never erases a stored one).
    func token(_ key: String) -> String? {
        if case .token(true)? = schema[key]?.type, members[key] == .string("") {
            read.insert(key)
            return nil
        }
        guard let (definition, value) = take(key) else { return nil }
        guard case .token = definition.type else { return mismatch(key) }
        guard case .string(let text) = value else {
            fail(key, "must be a string")
            return nil
        }
        if let problem = TextFormat.token.problem(text) {
            fail(key, problem)
            return nil
        }
        return text.lowercased()
    }

    /// A number.
    func double(_ key: String) -> Double? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .number = definition.type else { return mismatch(key) }
        guard let number = value.doubleValue, number.isFinite else {
            fail(key, "must be a number")
            return nil
        }
        return number
    }

    /// A whole number, one of those its definition allows.
    func integer(_ key: String) -> Int? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .integer(let allowed) = definition.type else { return mismatch(key) }
        guard let number = value.int64Value, let integer = Int(exactly: number) else {
            fail(key, "must be a whole number")
            return nil
        }
        if !allowed.contains(integer) {
            fail(key, "must be one of \(allowed.map(String.init).joined(separator: ", "))")
            return nil
        }
        return integer
    }

    /// A whole number within its definition's range.
    func count(_ key: String) -> Int? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .count(let range) = definition.type else { return mismatch(key) }
        guard let number = value.int64Value, let integer = Int(exactly: number), range.contains(integer) else {
            fail(key, "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
            return nil
        }
        return integer
    }

    /// A number within its definition's range.
    func bounded(_ key: String) -> Double? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .bounded(let range, let note) = definition.type else { return mismatch(key) }
        guard let number = value.doubleValue, number.isFinite, range.contains(number) else {
            fail(key, Self.outside(range, note: note))
            return nil
        }
        return number
    }

    /// The message refusing a number outside `range`.
    static func outside(_ range: ClosedRange<Double>, note: String?) -> String {
        "must be a number from \(text(range.lowerBound)) to \(text(range.upperBound))" + (note.map { " (\($0))" } ?? "")
    }

    /// A date: Unix seconds as a number, or an RFC 3339 string.
    func date(_ key: String) -> Date? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .date = definition.type else { return mismatch(key) }
        switch value {
        case .integer, .double:
            let seconds = value.doubleValue ?? .nan
            guard seconds.isFinite, seconds >= 0 else {
                fail(key, "must be Unix seconds (a number from 0) or an RFC 3339 date")
                return nil
            }
            guard seconds < FieldType.millisecondThreshold else {
                fail(key, "\(ObjectReader.text(seconds)) looks like milliseconds; give Unix seconds")
                return nil
            }
            return Date(timeIntervalSince1970: seconds)
        case .string(let text):
            if let date = SchemaCheck.parseDate(text) {
                guard FieldType.dateYearAllowed(text) else {
                    fail(key, "must be a date of the years \(FieldType.dateYears.lowerBound) to \(FieldType.dateYears.upperBound)")
                    return nil
                }
                return date
            }
            fail(key, "\"\(text)\" is not an RFC 3339 date such as 2026-01-31T18:30:00Z")
            return nil
        default:
            fail(key, "must be Unix seconds or an RFC 3339 date")
            return nil
        }
    }

    /// One of the strings its definition lists.
    func choice(_ key: String) -> String? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .enumeration(let values) = definition.type else { return mismatch(key) }
        guard case .string(let text) = value, values.contains(text) else {
            fail(key, "must be one of \(values.map { "\"\($0)\"" }.joined(separator: ", "))")
            return nil
        }
        return text
    }

    /// One of the strings its definition lists, as `type`.
    func enumeration<T: RawRepresentable>(_ key: String, as type: T.Type) -> T? where T.RawValue == String {
        choice(key).flatMap(T.init(rawValue:))
    }

    /// An array of strings, by its definition's counts and item format.
    func strings(_ key: String) -> [String]? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .strings(let minCount, let maxCount, let item) = definition.type else { return mismatch(key) }
        guard case .array(let elements) = value else {
            fail(key, "must be an array of strings")
            return nil
        }
        if elements.count < minCount {
            fail(key, "must not be empty")
            return nil
        }
        if elements.count > maxCount {
            fail(key, "must have at most \(maxCount) entries (it has \(elements.count))")
            return nil
        }
        var strings: [String] = []
        for (index, element) in elements.enumerated() {
            guard case .string(let text) = element else {
                owner?.fail("\(field(key))[\(index)]", "must be a non-empty string of at most \(item.maxLength) characters")
                return nil
            }
            if let problem = item.problem(text) {
                owner?.fail("\(field(key))[\(index)]", item.rule == .plain ? "must be a non-empty string of at most \(item.maxLength) characters" : problem)
                return nil
            }
            strings.append(text)
        }
        return strings
    }

    /// A bool.
    func bool(_ key: String) -> Bool? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .bool = definition.type else { return mismatch(key) }
        guard case .bool(let flag) = value else {
            fail(key, "must be true or false")
            return nil
        }
        return flag
    }

    /// The value of a field the caller checks itself (field definitions).
    func raw(_ key: String) -> JSONValue? {
        take(key)?.1
    }

    /// Any non-empty JSON object, passed through whole (content states, attributes).
    func jsonObject(_ key: String) -> JSONValue? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .anyObject = definition.type else { return mismatch(key) }
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

    /// A nested object, read field by field by its own schema; its unknown fields
    /// are refused too.
    func object(_ key: String) -> ObjectReader? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .object(let schema) = definition.type else { return mismatch(key) }
        guard case .object(let members) = value else {
            fail(key, "must be a JSON object")
            return nil
        }
        let child = ObjectReader(path: field(key), schema: schema, members: members)
        child.body = owner
        children.append(child)
        return child
    }

    /// An array of objects, each read by the definition's schema as `key[i]`.
    func objects(_ key: String) -> [ObjectReader]? {
        guard let (definition, value) = take(key) else { return nil }
        guard case .objects(let schema, let maxCount) = definition.type else { return mismatch(key) }
        guard case .array(let elements) = value else {
            fail(key, "must be an array of objects")
            return nil
        }
        if elements.count > maxCount {
            fail(key, "must have at most \(maxCount) entries (it has \(elements.count))")
            return nil
        }
        var readers: [ObjectReader] = []
        for (index, element) in elements.enumerated() {
            guard case .object(let members) = element else {
                owner?.fail("\(field(key))[\(index)]", "must be a JSON object")
                return nil
            }
            let child = ObjectReader(path: "\(field(key))[\(index)]", schema: schema, members: members)
            child.body = owner
            children.append(child)
            readers.append(child)
        }
        return readers
    }

    /// The one field of the schema's `exactlyOne` given a value; when none or
    /// several are, a fault at this object itself.
    func chosen() -> String? {
        let options = schema.exactlyOne ?? []
        let given = options.filter { hasValue($0) }
        guard given.count == 1 else {
            for option in options { _ = isNull(option) }
            owner?.fail(
                path,
                given.isEmpty
                    ? "must have one of \(ObjectReader.list(options))"
                    : "must have exactly one of \(ObjectReader.list(options)), not \(given.joined(separator: " and "))")
            return nil
        }
        return given[0]
    }

    private static func list(_ names: [String]) -> String {
        names.count <= 1 ? names.joined() : names.dropLast().joined(separator: ", ") + " or " + names.last!
    }

    private func mismatch<T>(_ key: String) -> T? {
        assertionFailure("\(field(key)) is read as another type than its definition")
        fail(key, "is invalid")
        return nil
    }

    /// Reports every member nobody read, here and in the nested objects read.
    fileprivate func rejectUnknown() {
        for key in members.keys.sortedByScalars() where !read.contains(key) {
            if let definition = schema[key], members[key] == .null, !definition.nullable {
                owner?.fail(field(key), "must not be null")
                continue
            }
            let known = schema.names.sortedByScalars()
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
