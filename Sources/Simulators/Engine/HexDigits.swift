/// Checks text for hexadecimal digits eight bytes at a time: a device token is read
/// on every push, and is 64 to 512 of them.
enum HexDigits {
    /// `nil` when `bytes` holds anything but `0`–`9`, `a`–`f` and `A`–`F`;
    /// otherwise whether any of `A`–`F` is among them.
    static func check(_ bytes: UnsafeRawBufferPointer) -> Bool? {
        var hex: UInt64 = highBits
        var uppercase: UInt64 = 0
        var offset = 0
        while offset + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
            let upper = between(word, 0x40, 0x47)
            hex &= between(word, 0x2F, 0x3A) | between(word, 0x60, 0x67) | upper
            uppercase |= upper
            offset += 8
        }
        while offset < bytes.count {
            let byte = UInt64(bytes[offset])
            let upper = between(byte, 0x40, 0x47) & 0x80
            hex &= (between(byte, 0x2F, 0x3A) | between(byte, 0x60, 0x67) | upper) | (highBits & ~0x80)
            uppercase |= upper
            offset += 1
        }
        guard hex == highBits else { return nil }
        return uppercase != 0
    }

    private static let ones: UInt64 = 0x0101_0101_0101_0101
    private static let highBits: UInt64 = 0x8080_8080_8080_8080

    /// The high bit of each byte of `word` that lies strictly between `low` and
    /// `high` (0 ≤ low < high ≤ 128), and of no other byte; no byte's carry reaches
    /// its neighbour. From "Bit Twiddling Hacks", "Determine if a word has a byte
    /// between m and n" (https://graphics.stanford.edu/~seander/bithacks.html).
    @inline(__always)
    private static func between(_ word: UInt64, _ low: UInt64, _ high: UInt64) -> UInt64 {
        let low7 = word & (ones &* 127)
        return (ones &* (127 + high) &- low7) & ~word & (low7 &+ ones &* (127 - low)) & highBits
    }
}
