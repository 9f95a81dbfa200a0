/// Writes JSON string literals by hand, for hot paths (log lines) where building a
/// Foundation object graph only to serialise it would cost more than the line itself.
public enum JSONText {
    /// `value` as a JSON string literal, quotes included, escaped per RFC 8259.
    public static func quoted(_ value: String) -> String {
        var out = "\""
        out.reserveCapacity(value.utf8.count + 2)
        for scalar in value.unicodeScalars {
            switch scalar {
            case "\"": out += "\\\""
            case "\\": out += "\\\\"
            case "\n": out += "\\n"
            case "\r": out += "\\r"
            case "\t": out += "\\t"
            case _ where scalar.value < 0x20:
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default:
                out.unicodeScalars.append(scalar)
            }
        }
        out += "\""
        return out
    }
}

extension Sequence where Element == String {
    /// The strings in the order of their Unicode scalars: the order JSON members are
    /// printed and checked in. `String`'s own `<` compares canonical equivalents and
    /// is not a strict order for every pair (`"e\u{301}"` and `"é="` are neither
    /// below the other, yet differ), so sorting with it could order the same keys two
    /// ways.
    public func sortedByScalars() -> [String] {
        sorted { $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars) }
    }
}
