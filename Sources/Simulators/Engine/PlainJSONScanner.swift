import Foundation
import IsletCore

/// A one-pass check of JSON text that keeps to a plain subset: strings of printable
/// ASCII without escapes, numbers without exponents and with at most 18 digits
/// before the point, at most 32 levels of nesting. Within the subset, text is
/// well-formed exactly when ``JSONValue/init(parsing:maximumDepth:)`` accepts it; the
/// scan gives up (answers `nil`) on anything else, well-formed or not.
struct PlainJSONScanner {
    let bytes: UnsafeBufferPointer<UInt8>
    private var index = 0

    private static let maximumDepth = 32
    private static let maximumIntegerDigits = 18

    init(bytes: UnsafeBufferPointer<UInt8>) {
        self.bytes = bytes
    }

    /// What a scan found.
    enum Outcome {
        /// The text is an object whose (last) `aps` member is an object.
        case aps
        /// The text is not an object.
        case notObject
        /// The text is an object without `aps`.
        case noAPS
        /// The text is an object whose (last) `aps` is not an object.
        case apsNotObject
    }

    /// Scans the whole text: `nil` when it is not in the subset; otherwise what it
    /// is. For an `aps` object, notes in `members` whether it has an alert, and,
    /// when `positions`, where the members a device reads lie.
    ///
    /// One loop over the bytes, with the open containers kept as bits (set for an
    /// object), so that the scan keeps its place in registers.
    func scanDocument(noting members: inout APSMembers, positions: Bool) -> Outcome? {
        let bytes = self.bytes
        let count = bytes.count
        var at = 0
        var depth = 0
        var objects: UInt64 = 0
        var outcome = Outcome.noAPS
        // The top-level member being read is `aps`, and whether its value is an
        // object; the container at depth 2 is that object.
        var readingAPS = false
        var apsIsObject = false
        var insideAPS = false
        // The `aps` member being read, when it is one a device reads.
        var field: APSField?
        var fieldStart = 0

        func skipSpace() {
            while at < count {
                switch bytes[at] {
                case 0x20, 0x09, 0x0A, 0x0D: at += 1
                default: return
                }
            }
        }
        /// A string at `at`: the range of its contents.
        func string() -> Range<Int>? {
            guard at < count, bytes[at] == UInt8(ascii: "\"") else { return nil }
            let start = at + 1
            var end = start
            while end < count {
                let byte = bytes[end]
                if byte == UInt8(ascii: "\"") {
                    at = end + 1
                    return start..<end
                }
                // Printable ASCII (0x20–0x7E), but no escape.
                guard byte &- 0x20 < 0x5F, byte != UInt8(ascii: "\\") else { return nil }
                end += 1
            }
            return nil
        }
        /// A member's name and colon, in the object at `depth`.
        func key() -> Bool {
            guard let key = string() else { return false }
            skipSpace()
            guard at < count, bytes[at] == UInt8(ascii: ":") else { return false }
            at += 1
            skipSpace()
            if depth == 1 {
                readingAPS = key.count == 3 && bytes[key.lowerBound] == UInt8(ascii: "a")
                    && bytes[key.lowerBound + 1] == UInt8(ascii: "p") && bytes[key.lowerBound + 2] == UInt8(ascii: "s")
                if readingAPS {
                    // A later `aps` replaces an earlier one.
                    members = APSMembers()
                    apsIsObject = at < count && bytes[at] == UInt8(ascii: "{")
                }
            } else if depth == 2, insideAPS {
                field = APSField(UnsafeBufferPointer(rebasing: bytes[key]))
                if !positions, field != .alert { field = nil }
                fieldStart = at
            }
            return true
        }
        func word(_ word: StaticString) -> Bool {
            let length = word.utf8CodeUnitCount
            guard at + length <= count, memcmp(bytes.baseAddress! + at, word.utf8Start, length) == 0 else { return false }
            at += length
            return true
        }
        /// `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)?, with at most 18 digits before the
        /// point: always a finite number, and an integer that fits in 64 bits.
        func number() -> Bool {
            if bytes[at] == UInt8(ascii: "-") { at += 1 }
            guard at < count else { return false }
            if bytes[at] == UInt8(ascii: "0") {
                at += 1
            } else {
                let start = at
                while at < count, bytes[at] &- UInt8(ascii: "0") < 10 { at += 1 }
                guard at > start, at - start <= Self.maximumIntegerDigits else { return false }
            }
            if at < count, bytes[at] == UInt8(ascii: ".") {
                at += 1
                let start = at
                while at < count, bytes[at] &- UInt8(ascii: "0") < 10 { at += 1 }
                guard at > start else { return false }
            }
            return at == count || (bytes[at] != UInt8(ascii: "e") && bytes[at] != UInt8(ascii: "E"))
        }

        skipSpace()
        guard at < count else { return nil }
        let isObject = bytes[at] == UInt8(ascii: "{")
        while true {
            // A value starts at `at`.
            guard at < count else { return nil }
            switch bytes[at] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                let opensObject = bytes[at] == UInt8(ascii: "{")
                depth += 1
                guard depth <= Self.maximumDepth else { return nil }
                objects = objects << 1 | (opensObject ? 1 : 0)
                if depth == 2, readingAPS, opensObject { insideAPS = true }
                at += 1
                skipSpace()
                guard at < count else { return nil }
                if bytes[at] != (opensObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                    if opensObject { guard key() else { return nil } }
                    continue
                }
                // Empty: the container ends here.
                at += 1
                if depth == 2 { insideAPS = false }
                depth -= 1
                objects >>= 1
            case UInt8(ascii: "\""): guard string() != nil else { return nil }
            case UInt8(ascii: "t"): guard word("true") else { return nil }
            case UInt8(ascii: "f"): guard word("false") else { return nil }
            case UInt8(ascii: "n"): guard word("null") else { return nil }
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): guard number() else { return nil }
            default: return nil
            }
            // A value ended at `at`: note it, then close containers until the next
            // value starts.
            while true {
                if depth == 1, readingAPS {
                    outcome = apsIsObject ? .aps : .apsNotObject
                    readingAPS = false
                } else if depth == 2, insideAPS, let found = field {
                    members.found(found, at: fieldStart..<at)
                    field = nil
                }
                skipSpace()
                if depth == 0 {
                    guard at == count else { return nil }
                    return isObject ? outcome : .notObject
                }
                guard at < count else { return nil }
                let inObject = objects & 1 == 1
                if bytes[at] == UInt8(ascii: ",") {
                    at += 1
                    skipSpace()
                    if inObject { guard key() else { return nil } }
                    break
                }
                guard bytes[at] == (inObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) else { return nil }
                at += 1
                if depth == 2 { insideAPS = false }
                depth -= 1
                objects >>= 1
            }
        }
    }

    /// The value at `range`, which a scan accepted, as
    /// ``JSONValue/init(parsing:maximumDepth:)`` makes it: objects are made at
    /// their size, and a repeated member keeps its last value.
    /// `nil` only if the text is not what the scan accepted.
    func value(at range: Range<Int>) -> JSONValue? {
        var builder = self
        builder.index = range.lowerBound
        return builder.buildValue()
    }

    // MARK: - Building accepted text

    private mutating func buildValue() -> JSONValue? {
        switch bytes[index] {
        case UInt8(ascii: "\""): return .string(buildString())
        case UInt8(ascii: "t"):
            index += 4
            return .bool(true)
        case UInt8(ascii: "f"):
            index += 5
            return .bool(false)
        case UInt8(ascii: "n"):
            index += 4
            return .null
        case UInt8(ascii: "{"): return buildObject()
        case UInt8(ascii: "["): return buildArray()
        default: return buildNumber()
        }
    }

    /// Printable ASCII without escapes: the text between the quotes.
    private mutating func buildString() -> String {
        let start = index + 1
        var end = start
        while bytes[end] != UInt8(ascii: "\"") { end += 1 }
        index = end + 1
        return String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<end]), as: UTF8.self)
    }

    private mutating func buildObject() -> JSONValue? {
        var members = [String: JSONValue](minimumCapacity: elementCount())
        index += 1
        while true {
            skipWhitespace()
            if bytes[index] == UInt8(ascii: "}") {
                index += 1
                return .object(members)
            }
            let key = buildString()
            skipWhitespace()
            index += 1  // the colon
            skipWhitespace()
            guard let value = buildValue() else { return nil }
            members[key] = value
            skipWhitespace()
            if bytes[index] == UInt8(ascii: ",") { index += 1 }
        }
    }

    private mutating func buildArray() -> JSONValue? {
        var elements: [JSONValue] = []
        elements.reserveCapacity(elementCount())
        index += 1
        while true {
            skipWhitespace()
            if bytes[index] == UInt8(ascii: "]") {
                index += 1
                return .array(elements)
            }
            guard let element = buildValue() else { return nil }
            elements.append(element)
            skipWhitespace()
            if bytes[index] == UInt8(ascii: ",") { index += 1 }
        }
    }

    /// How many members or elements the container at `index` has.
    private func elementCount() -> Int {
        var counter = self
        let close = bytes[index] == UInt8(ascii: "{") ? UInt8(ascii: "}") : UInt8(ascii: "]")
        counter.index += 1
        counter.skipWhitespace()
        if bytes[counter.index] == close { return 0 }
        var count = 0
        while true {
            counter.skipWhitespace()
            if close == UInt8(ascii: "}") {
                _ = counter.scanString()
                _ = counter.skipColon()
                counter.skipWhitespace()
            }
            _ = counter.skipValue(depth: 0)
            count += 1
            guard counter.skipCommaOrClose(close) == false else { return count }
        }
    }

    /// A number as the parser reads one: an integer unless it has a point (at most
    /// 18 digits, so it fits), otherwise a double.
    private mutating func buildNumber() -> JSONValue? {
        let start = index
        let negative = bytes[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var magnitude: Int64 = 0
        while index < bytes.count, bytes[index] &- UInt8(ascii: "0") < 10 {
            magnitude = magnitude * 10 + Int64(bytes[index] &- UInt8(ascii: "0"))
            index += 1
        }
        guard index < bytes.count, bytes[index] == UInt8(ascii: ".") else {
            return .integer(negative ? -magnitude : magnitude)
        }
        index += 1
        skipDigits()
        let text = String(decoding: UnsafeBufferPointer(rebasing: bytes[start..<index]), as: UTF8.self)
        return Double(text).map(JSONValue.double)
    }

    // MARK: - Skipping values, to count a container's

    private mutating func skipWhitespace() {
        var at = index
        while at < bytes.count {
            switch bytes[at] {
            case 0x20, 0x09, 0x0A, 0x0D: at += 1
            default:
                index = at
                return
            }
        }
        index = at
    }

    private mutating func skipColon() -> Bool {
        skipWhitespace()
        guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return false }
        index += 1
        return true
    }

    /// After a member or element: `false` after a comma, `true` after `close`, `nil`
    /// for anything else.
    private mutating func skipCommaOrClose(_ close: UInt8) -> Bool? {
        skipWhitespace()
        guard index < bytes.count else { return nil }
        switch bytes[index] {
        case UInt8(ascii: ","):
            index += 1
            return false
        case close:
            index += 1
            return true
        default:
            return nil
        }
    }

    /// A string at `index`: the range of its contents.
    private mutating func scanString() -> Range<Int>? {
        guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else { return nil }
        let start = index + 1
        var at = start
        while at < bytes.count {
            let byte = bytes[at]
            if byte == UInt8(ascii: "\"") {
                index = at + 1
                return start..<at
            }
            // Printable ASCII (0x20–0x7E), but no escape.
            guard byte &- 0x20 < 0x5F, byte != UInt8(ascii: "\\") else { return nil }
            at += 1
        }
        return nil
    }

    private mutating func skipValue(depth: Int) -> Bool {
        guard index < bytes.count else { return false }
        switch bytes[index] {
        case UInt8(ascii: "{"): return skipContainer(close: UInt8(ascii: "}"), keyed: true, depth: depth + 1)
        case UInt8(ascii: "["): return skipContainer(close: UInt8(ascii: "]"), keyed: false, depth: depth + 1)
        case UInt8(ascii: "\""): return scanString() != nil
        case UInt8(ascii: "t"): return skipWord("true")
        case UInt8(ascii: "f"): return skipWord("false")
        case UInt8(ascii: "n"): return skipWord("null")
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return skipNumber()
        default: return false
        }
    }

    private mutating func skipContainer(close: UInt8, keyed: Bool, depth: Int) -> Bool {
        guard depth <= Self.maximumDepth else { return false }
        index += 1
        skipWhitespace()
        if index < bytes.count, bytes[index] == close {
            index += 1
            return true
        }
        while true {
            skipWhitespace()
            if keyed {
                guard scanString() != nil, skipColon() else { return false }
                skipWhitespace()
            }
            guard skipValue(depth: depth) else { return false }
            guard let closed = skipCommaOrClose(close) else { return false }
            if closed { return true }
        }
    }

    private mutating func skipWord(_ word: StaticString) -> Bool {
        let count = word.utf8CodeUnitCount
        guard index + count <= bytes.count else { return false }
        let pointer = word.utf8Start
        for offset in 0..<count where bytes[index + offset] != pointer[offset] { return false }
        index += count
        return true
    }

    /// `-`? (`0` | [1-9][0-9]*) (`.` [0-9]+)?, with at most 18 digits before the
    /// point: always a finite number, and an integer that fits in 64 bits.
    private mutating func skipNumber() -> Bool {
        if bytes[index] == UInt8(ascii: "-") { index += 1 }
        guard index < bytes.count else { return false }
        if bytes[index] == UInt8(ascii: "0") {
            index += 1
        } else {
            let start = index
            skipDigits()
            guard index > start, index - start <= Self.maximumIntegerDigits else { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: ".") {
            index += 1
            let start = index
            skipDigits()
            guard index > start else { return false }
        }
        if index < bytes.count, bytes[index] == UInt8(ascii: "e") || bytes[index] == UInt8(ascii: "E") { return false }
        return true
    }

    private mutating func skipDigits() {
        var at = index
        while at < bytes.count, bytes[at] &- UInt8(ascii: "0") < 10 { at += 1 }
        index = at
    }
}
