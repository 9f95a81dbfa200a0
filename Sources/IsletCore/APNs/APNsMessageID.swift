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

    /// The `apns-id` of the push of send `sendID` to device `deviceID`, derived
    /// rather than drawn, so that a push that has no row of its own is found again
    /// from its id (``derivedSend(_:deviceID:)``) and a window sent again after a
    /// crash carries the ids it carried the first time. Sixty bits of the send's id,
    /// the version nibble 8 (a UUID laid out by its maker), and a 64-bit FNV-1a
    /// hash of the device's id, in canonical lowercase form. Ids need to be unique,
    /// not secret: APNs reports by them, and a device that names one is checked
    /// against its own id.
    public static func derived(sendID: Int64, deviceID: String) -> String {
        let send = UInt64(bitPattern: sendID) & 0x0FFF_FFFF_FFFF_FFFF
        let hash = deviceHash(deviceID)
        // Without the dashes: 12 digits of the send, the version, the send's last
        // 3 digits, then the hash's 16.
        var digits = [UInt8]()
        digits.reserveCapacity(36)
        for index in 0..<15 {
            if index == 12 { digits.append(UInt8(ascii: "8")) }
            digits.append(Hex.utf8Digit(UInt8((send >> UInt64((14 - index) * 4)) & 0xF)))
        }
        for index in 0..<16 { digits.append(Hex.utf8Digit(UInt8((hash >> UInt64((15 - index) * 4)) & 0xF))) }
        for position in [20, 16, 12, 8] { digits.insert(UInt8(ascii: "-"), at: position) }
        return String(decoding: digits, as: UTF8.self)
    }

    /// The send whose push to `deviceID` carries `apnsID`, when `apnsID` is such a
    /// derived id and names that device; nil otherwise (a drawn id, another
    /// device's).
    public static func derivedSend(_ apnsID: String, deviceID: String) -> Int64? {
        guard let parts = derivedParts(apnsID), parts.deviceHash == deviceHash(deviceID) else { return nil }
        return parts.sendID
    }

    /// The send and the device's hash a derived id carries; nil for any other id.
    public static func derivedParts(_ apnsID: String) -> (sendID: Int64, deviceHash: UInt64)? {
        let bytes = Array(apnsID.utf8)
        guard bytes.count == 36, isCanonical(apnsID), bytes[14] == UInt8(ascii: "8") else { return nil }
        let hex = bytes.filter { $0 != UInt8(ascii: "-") }
        func value(_ digits: ArraySlice<UInt8>) -> UInt64 {
            digits.reduce(UInt64(0)) { ($0 << 4) | UInt64(Hex.value(of: $1) ?? 0) }
        }
        // hex: 12 send digits, the version, 3 send digits, 16 hash digits.
        let send = (value(hex[0..<12]) << 12) | value(hex[13..<16])
        return (Int64(bitPattern: send), value(hex[16..<32]))
    }

    /// A 64-bit FNV-1a hash of a device's id.
    static func deviceHash(_ deviceID: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in deviceID.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01B3
        }
        return hash
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

    /// The value of a hex digit, in either case; nil for any other byte.
    static func value(of byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }

    static func isDigit(_ byte: UInt8, allowUppercase: Bool = true) -> Bool {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): true
        case UInt8(ascii: "A")...UInt8(ascii: "F"): allowUppercase
        default: false
        }
    }
}
