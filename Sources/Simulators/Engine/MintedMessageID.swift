import IsletCore

/// An `apns-id` or `apns-unique-id` the simulator minted, kept as the 128 random
/// bits it was drawn from; its text is written when it is needed.
struct MintedMessageID: Sendable, Hashable {
    private let high: UInt64
    private let low: UInt64

    /// Draws an id from `random`, as ``APNsMessageID/make(using:)`` does: two words,
    /// the first for the id's first eight bytes.
    init(drawingFrom random: inout some RandomNumberGenerator) {
        high = random.next()
        low = random.next()
    }

    /// The id in canonical form: exactly the text ``APNsMessageID/make(using:)``
    /// writes for the same two words (each word's bytes lowest first, version 4,
    /// RFC 4122 variant), written four bytes at a time.
    var text: String {
        // Byte 6 carries the version, byte 8 the variant.
        let high = (self.high & ~(0xF0 << 48)) | (0x40 << 48)
        let low = (self.low & ~0xC0) | 0x80
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let out = UnsafeMutableRawPointer(buffer.baseAddress!)
            let b0to3 = Self.hex(UInt32(truncatingIfNeeded: high))
            let b4to7 = Self.hex(UInt32(truncatingIfNeeded: high >> 32))
            let b8to11 = Self.hex(UInt32(truncatingIfNeeded: low))
            let b12to15 = Self.hex(UInt32(truncatingIfNeeded: low >> 32))
            // 8-4-4-4-12: bytes 0–3, 4–5, 6–7, 8–9, 10–15.
            out.storeBytes(of: b0to3.littleEndian, toByteOffset: 0, as: UInt64.self)
            out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 8, as: UInt8.self)
            out.storeBytes(of: UInt32(truncatingIfNeeded: b4to7).littleEndian, toByteOffset: 9, as: UInt32.self)
            out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 13, as: UInt8.self)
            out.storeBytes(of: UInt32(truncatingIfNeeded: b4to7 >> 32).littleEndian, toByteOffset: 14, as: UInt32.self)
            out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 18, as: UInt8.self)
            out.storeBytes(of: UInt32(truncatingIfNeeded: b8to11).littleEndian, toByteOffset: 19, as: UInt32.self)
            out.storeBytes(of: UInt8(ascii: "-"), toByteOffset: 23, as: UInt8.self)
            out.storeBytes(of: UInt32(truncatingIfNeeded: b8to11 >> 32).littleEndian, toByteOffset: 24, as: UInt32.self)
            out.storeBytes(of: b12to15.littleEndian, toByteOffset: 28, as: UInt64.self)
            return 36
        }
    }

    /// The eight lowercase hex digits of the four bytes of `bytes`, lowest byte
    /// first and each byte's high digit first: digit `i` in byte `i` of the result,
    /// counting from the low end.
    private static func hex(_ bytes: UInt32) -> UInt64 {
        // Spread the bytes into the low halves of four 16-bit lanes...
        var lanes = UInt64(bytes)
        lanes = (lanes | lanes << 16) & 0x0000_FFFF_0000_FFFF
        lanes = (lanes | lanes << 8) & 0x00FF_00FF_00FF_00FF
        // ...and each lane's byte into its high nibble, then its low nibble.
        let nibbles = (lanes >> 4) & 0x000F_000F_000F_000F | (lanes & 0x000F_000F_000F_000F) << 8
        // 0–9 become "0"–"9"; 10–15, which reach 0x80 once 0x76 is added, "a"–"f".
        let ones: UInt64 = 0x0101_0101_0101_0101
        let letters = ((nibbles &+ ones &* 0x76) >> 7) & ones
        return nibbles &+ ones &* 0x30 &+ letters &* 39
    }
}
