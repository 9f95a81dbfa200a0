/// Shortens secrets (push tokens, API keys, private keys) to a form that is safe to
/// log: enough to tell two values apart, never enough to use one.
public enum Redaction {
    /// How many leading characters of a secret stay visible.
    public static let visiblePrefix = 6

    /// The redacted form of `secret`: its first few characters, an ellipsis and its
    /// length, as in `a1b2c3…(64)`. Secrets shorter than twice the visible prefix
    /// show no characters at all.
    public static func redact(_ secret: some StringProtocol) -> String {
        let count = secret.count
        guard count >= visiblePrefix * 2 else { return "…(\(count))" }
        return "\(secret.prefix(visiblePrefix))…(\(count))"
    }
}

extension Redaction {
    /// `text` with every password it holds replaced by `***`: the password of a URL's
    /// user part (`scheme://user:password@host`) and the value of every parameter
    /// whose name ends in `password` (`password=`, `sslpassword=`, `PGPASSWORD=`, a
    /// percent-encoded `pass%77ord=`), in a URL's query or in `key=value` text such as
    /// libpq's connection strings and its messages. An empty password stays as it is.
    ///
    /// Where a password holds what a URL reserves, it leans toward hiding too much:
    /// the authority after `://` ends at the first `/`, or at the first `?` or `#`
    /// after its first `@`, and the user part at the authority's last `@` (libpq
    /// takes the first, but an `@` may stand in a password, and so may a `?` or `#`
    /// before the first `@`). An `@` in the path, the query or the fragment is no
    /// user part's.
    public static func hidingPasswords(in text: String) -> String {
        var hidden = text
        for range in passwordRanges(in: text).reversed() {
            hidden.replaceSubrange(range, with: "***")
        }
        return hidden
    }

    /// Where the passwords that ``hidingPasswords(in:)`` hides are in `text`: not
    /// empty, not overlapping, in order.
    public static func passwordRanges(in text: String) -> [Range<String.Index>] {
        var ranges = userPasswordRanges(in: text) + parameterPasswordRanges(in: text)
        ranges.removeAll(where: \.isEmpty)
        ranges.sort { $0.lowerBound < $1.lowerBound }
        var merged: [Range<String.Index>] = []
        for range in ranges {
            if let last = merged.last, range.lowerBound <= last.upperBound {
                merged[merged.count - 1] = last.lowerBound..<max(last.upperBound, range.upperBound)
            } else {
                merged.append(range)
            }
        }
        return merged
    }

    /// The password of each `scheme://user:password@host` in `text`.
    private static func userPasswordRanges(in text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var searchStart = text.startIndex
        while let scheme = text.range(of: "://", range: searchStart..<text.endIndex) {
            let rest = text[scheme.upperBound...]
            let beforePath = rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)]
            if let firstAt = beforePath.firstIndex(of: "@") {
                let hostEnd = beforePath[firstAt...].firstIndex { $0 == "?" || $0 == "#" } ?? beforePath.endIndex
                let authority = beforePath[..<hostEnd]
                if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                    ranges.append(text.index(after: colon)..<at)
                }
            }
            searchStart = scheme.upperBound
        }
        return ranges
    }

    /// The value of each `…password=value` in `text`: up to the next `&` or space, or
    /// the closing quote of a value in single quotes (as libpq's `key='value'`).
    private static func parameterPasswordRanges(in text: String) -> [Range<String.Index>] {
        var ranges: [Range<String.Index>] = []
        var index = text.startIndex
        while let equals = text[index...].firstIndex(of: "=") {
            let valueStart = text.index(after: equals)
            index = valueStart
            let nameStart = text[..<equals].lastIndex(where: isSeparator).map { text.index(after: $0) } ?? text.startIndex
            guard percentDecoded(text[nameStart..<equals]).lowercased().hasSuffix("password") else { continue }
            var valueEnd = text[valueStart...].firstIndex(where: { $0 == "&" || $0.isWhitespace }) ?? text.endIndex
            if text[valueStart...].first == "'" {
                valueEnd = closingQuote(in: text, after: valueStart) ?? text.endIndex
            }
            ranges.append(valueStart..<valueEnd)
            index = valueEnd
        }
        return ranges
    }

    /// What ends a parameter's name on its left.
    private static func isSeparator(_ character: Character) -> Bool {
        character == "?" || character == "&" || character == ";" || character.isWhitespace
    }

    /// The index just past the quote that closes the one at `start` (a backslash
    /// escapes the character after it), or nil when none does.
    private static func closingQuote(in text: String, after start: String.Index) -> String.Index? {
        var index = text.index(after: start)
        while index < text.endIndex {
            switch text[index] {
            case "\\":
                index = text.index(after: index)
                if index < text.endIndex { index = text.index(after: index) }
            case "'":
                return text.index(after: index)
            default:
                index = text.index(after: index)
            }
        }
        return nil
    }

    /// `text` with its `%XX` escapes decoded; a malformed escape stays as written.
    private static func percentDecoded(_ text: some StringProtocol) -> String {
        var bytes: [UInt8] = []
        var utf8 = Array(text.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%"), utf8.count >= 2,
                let high = hexValue(utf8[utf8.startIndex]), let low = hexValue(utf8[utf8.startIndex + 1])
            {
                bytes.append(high << 4 | low)
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
