import IsletSync

/// The `apns-id` header: a UUID that names one notification, in the canonical
/// 8-4-4-4-12 form. Apple documents it as lowercase; Islet always sends it so.
public enum APNsMessageID {
    /// Whether `text` is a UUID in the canonical lowercase form APNs documents, as
    /// `123e4567-e89b-12d3-a456-4266554400a0`.
    public static func isCanonical(_ text: some StringProtocol) -> Bool {
        check(text, allowUppercase: false)
    }

    /// Whether `text` is a UUID in 8-4-4-4-12 form, in either case.
    public static func isUUID(_ text: some StringProtocol) -> Bool {
        check(text, allowUppercase: true)
    }

    /// A fresh version 4 UUID in canonical lowercase form, from a generator seeded
    /// once per process: ids must be unique, not secret, and Foundation's `UUID()`
    /// reads the system's random device on every call. Safe from any thread.
    public static func mint() -> String {
        mintSource.withLock { make(using: &$0) }
    }

    private static let mintSource = Lock(SeededRandomSource(seed: UInt64.random(in: .min ... .max)))

    /// A fresh version 4 UUID in canonical lowercase form, drawn from `generator`, so
    /// that a seeded generator gives repeatable ids.
    public static func make(using generator: inout some RandomNumberGenerator) -> String {
        let high = generator.next()
        let low = generator.next()
        return String(unsafeUninitializedCapacity: 36) { text in
            var out = 0
            for index in 0..<16 {
                var byte = UInt8(truncatingIfNeeded: (index < 8 ? high : low) >> ((index % 8) * 8))
                if index == 6 { byte = (byte & 0x0F) | 0x40 }  // version 4
                if index == 8 { byte = (byte & 0x3F) | 0x80 }  // RFC 4122 variant
                if index == 4 || index == 6 || index == 8 || index == 10 {
                    text[out] = UInt8(ascii: "-")
                    out += 1
                }
                text[out] = Hex.utf8Digit(byte >> 4)
                text[out + 1] = Hex.utf8Digit(byte & 0x0F)
                out += 2
            }
            return out
        }
    }

    private static func check(_ text: some StringProtocol, allowUppercase: Bool) -> Bool {
        var copy = String(text)
        return copy.withUTF8 { bytes in
            guard bytes.count == 36 else { return false }
            for (index, byte) in bytes.enumerated() {
                switch index {
                case 8, 13, 18, 23:
                    guard byte == UInt8(ascii: "-") else { return false }
                default:
                    guard Hex.isDigit(byte, allowUppercase: allowUppercase) else { return false }
                }
            }
            return true
        }
    }
}

/// Hexadecimal digits, for tokens and ids.
enum Hex {
    /// The lowercase hex digit for `nibble` (0–15), as a UTF-8 byte.
    static func utf8Digit(_ nibble: UInt8) -> UInt8 {
        nibble < 10 ? UInt8(ascii: "0") + nibble : UInt8(ascii: "a") + nibble - 10
    }

    static func isDigit(_ byte: UInt8, allowUppercase: Bool = true) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): true
        case UInt8(ascii: "A")...UInt8(ascii: "F"): allowUppercase
        default: false
        }
    }
}
