import Foundation

/// How libpq's and the server's messages are made fit for an error: one line,
/// without any secret.
enum PostgresMessage {
    /// `text` on one line: each line trimmed, empty ones dropped, joined by spaces.
    static func oneLine(_ text: String) -> String {
        text.split(whereSeparator: \.isNewline)
            .map { $0.trimmingCharacters(in: .whitespaces) }
            .filter { !$0.isEmpty }
            .joined(separator: " ")
    }

    /// `text` with every occurrence of each of `secrets` replaced by `***`, longest
    /// first (so that a secret that holds another is hidden whole).
    static func hiding(_ secrets: [String], in text: String) -> String {
        var hidden = text
        for secret in secrets.sorted(by: { $0.count > $1.count }) where !secret.isEmpty {
            hidden = hidden.replacing(secret, with: "***")
        }
        return hidden
    }

    /// `text` with each `%XX` decoded, as libpq decodes a URL's parts; a `%` not
    /// followed by two hex digits stays as it is. Bytes that are not UTF-8 decode
    /// as U+FFFD.
    static func percentDecoded(_ text: String) -> String {
        guard text.utf8.contains(UInt8(ascii: "%")) else { return text }
        let bytes = Array(text.utf8)
        var decoded: [UInt8] = []
        decoded.reserveCapacity(bytes.count)
        var index = 0
        while index < bytes.count {
            if bytes[index] == UInt8(ascii: "%"), index + 2 < bytes.count,
                let high = hexValue(bytes[index + 1]), let low = hexValue(bytes[index + 2])
            {
                decoded.append(high << 4 | low)
                index += 3
            } else {
                decoded.append(bytes[index])
                index += 1
            }
        }
        return String(decoding: decoded, as: UTF8.self)
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
