import Foundation
import IsletCrypto
import Testing

@Suite("HMAC-SHA256")
struct HMACTests {
    func hex(_ data: Data) -> String { data.map { String(format: "%02x", $0) }.joined() }

    /// RFC 4231, test cases 1 and 2.
    @Test func matchesTheRFCVectors() {
        let first = Digest.hmacSHA256(key: Data(repeating: 0x0b, count: 20), Data("Hi There".utf8))
        #expect(hex(first) == "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7")
        let second = Digest.hmacSHA256(key: Data("Jefe".utf8), Data("what do ya want for nothing?".utf8))
        #expect(hex(second) == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
    }

    /// A key longer than the block size is hashed first (RFC 4231, test case 6).
    @Test func hashesAKeyLongerThanABlock() {
        let mac = Digest.hmacSHA256(
            key: Data(repeating: 0xaa, count: 131), Data("Test Using Larger Than Block-Size Key - Hash Key First".utf8))
        #expect(hex(mac) == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }
}
