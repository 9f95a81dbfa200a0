/// Writes JSON string literals by hand, for hot paths (log lines) where building a
/// Foundation object graph only to serialise it would cost more than the line itself.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included, escaped per RFC 8259.
    public static func quoted(_ value: String) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(value.utf8.count + 2)
        appendQuoted(value, to: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `value` as a JSON string literal to the UTF-8 bytes `out`: the runs
    /// that need no escape are copied whole; `"`, `\` and the control characters
    /// are escaped (`\n`, `\r` and `\t` by name, the others as `\u00XX`).
    /// Everything else, non-ASCII included, is written as its UTF-8 bytes.
    public static func appendQuoted(_ value: String, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        var value = value
        value.withUTF8 { bytes in
            var run = 0
            for index in 0..<bytes.count {
                let byte = bytes[index]
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<index]))
                run = index + 1
                out.append(UInt8(ascii: "\\"))
                switch byte {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"): out.append(byte)
                case UInt8(ascii: "\n"): out.append(UInt8(ascii: "n"))
                case UInt8(ascii: "\r"): out.append(UInt8(ascii: "r"))
                case UInt8(ascii: "\t"): out.append(UInt8(ascii: "t"))
                default:
                    out.append(contentsOf: [UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0")])
                    out.append(hexDigits[Int(byte >> 4)])
                    out.append(hexDigits[Int(byte & 0xF)])
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: bytes[run..<bytes.count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    private static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)
}

/// Writes one JSON object straight to compact text, for hot paths that would
/// otherwise build a dictionary only to print it. Members must be added in the order
/// `JSONValue.jsonText` prints them (their keys' scalars, `sortedByScalars`), so
/// that the text is the one the equal `JSONValue` prints.
public struct JSONObjectWriter: Sendable {
    private var bytes: [UInt8] = [UInt8(ascii: "{")]
    private var lastKey: String?

    /// An empty object.
    public init() {
        bytes.reserveCapacity(256)
    }

    private mutating func key(_ key: String) {
        assert(lastKey.map { $0.utf8.lexicographicallyPrecedes(key.utf8) } ?? true, "members out of order at \(key)")
        if lastKey != nil { bytes.append(UInt8(ascii: ",")) }
        lastKey = key
        JSONText.appendQuoted(key, to: &bytes)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Adds a string member.
    public mutating func string(_ name: String, _ value: String) {
        key(name)
        JSONText.appendQuoted(value, to: &bytes)
    }

    /// Adds a member whose value is `json`, JSON text written elsewhere, as it is.
    public mutating func raw(_ name: String, _ json: String) {
        key(name)
        bytes.append(contentsOf: json.utf8)
    }

    /// Adds an integer member.
    public mutating func integer(_ name: String, _ value: Int64) {
        key(name)
        bytes.append(contentsOf: String(value).utf8)
    }

    /// The object's text.
    public var text: String {
        String(decoding: bytes + [UInt8(ascii: "}")], as: UTF8.self)
    }
}

extension Sequence where Element == String {
    /// The strings in the order of their Unicode scalars: the order JSON members are
    /// printed and checked in. `String`'s own `<` compares canonical equivalents and
    /// is not a strict order for every pair (`"e\u{301}"` and `"é="` are neither
    /// below the other, yet differ), so sorting with it could order the same keys two
    /// ways.
    /// (UTF-8 keeps the order of the scalars it encodes, so the bytes are compared.)
    public func sortedByScalars() -> [String] {
        sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
    }
}
