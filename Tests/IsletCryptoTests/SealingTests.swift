import Foundation
import IsletCrypto
import Testing

@Suite("AES-256-GCM and the secrets key")
struct SealingTests {
    func bytes(_ hex: String) -> Data {
        var data = Data()
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            data.append(UInt8(hex[index..<next], radix: 16)!)
            index = next
        }
        return data
    }

    /// The GCM specification's test case 16 (AES-256, 60 bytes, 20 bytes of associated data).
    @Test func matchesTheSpecificationsVector() throws {
        let key = bytes("feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = bytes("cafebabefacedbaddecaf888")
        let plaintext = bytes(
            "d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a721c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39")
        let aad = bytes("feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let sealed = try AES256GCM.seal(plaintext, key: key, nonce: nonce, associatedData: aad)
        #expect(sealed == bytes(
            "522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662"
                + "76fc6ece0f4e1768cddf8853bb2d551b"))
        #expect(try AES256GCM.open(sealed, key: key, nonce: nonce, associatedData: aad) == plaintext)
        // Other associated data is refused.
        #expect(throws: CryptoError.self) { try AES256GCM.open(sealed, key: key, nonce: nonce, associatedData: Data()) }
    }

    @Test func sealsAndOpensAValueEachTimeDifferently() throws {
        let key = try SecretsKey.generate()
        let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
        let first = try key.seal(pem)
        let second = try key.seal(pem)
        #expect(first.hasPrefix("sealed:v1:"))
        #expect(first != second, "a fresh nonce for every value")
        #expect(!first.contains("PRIVATE KEY"))
        #expect(try key.open(first) == pem)
        #expect(try key.open(second) == pem)
        #expect(key.isSealed(first))
        #expect(!key.isSealed(pem))
        #expect(!key.isSealed("whsec_abc"))
        // The empty value too.
        #expect(try key.open(try key.seal("")) == "")
    }

    @Test func refusesAChangedValue() throws {
        let key = try SecretsKey.generate()
        let sealed = try key.seal("whsec_0123456789abcdef")
        var box = try #require(Data(base64Encoded: String(sealed.dropFirst("sealed:v1:".count))))
        for position in [0, 12, box.count - 1] {
            var changed = box
            changed[position] ^= 0x01
            let error = #expect(throws: CryptoError.self) { try key.open("sealed:v1:" + changed.base64EncodedString()) }
            #expect(error?.code == .unsealingFailed)
        }
        box.removeLast()
        #expect(throws: CryptoError.self) { try key.open("sealed:v1:" + box.base64EncodedString()) }
        // Not in the format at all.
        #expect(throws: CryptoError.self) { try key.open("whsec_0123456789abcdef") }
        #expect(throws: CryptoError.self) { try key.open("sealed:v1:not base64!") }
        #expect(throws: CryptoError.self) { try key.open("sealed:v2:" + sealed.dropFirst("sealed:v1:".count)) }
    }

    @Test func refusesAnotherKey() throws {
        let sealed = try SecretsKey.generate().seal("whsec_0123456789abcdef")
        let error = #expect(throws: CryptoError.self) { try SecretsKey.generate().open(sealed) }
        #expect(error?.code == .unsealingFailed)
        #expect(error.map { "\($0)" }?.contains("whsec_") == false)
    }

    @Test func readsAKeyFromBase64AndNeverShowsIt() throws {
        let key = try SecretsKey.generate()
        #expect(Data(base64Encoded: key.base64)?.count == 32)
        let again = try SecretsKey(base64: " \(key.base64)\n")
        #expect(try again.open(try key.seal("x")) == "x")
        #expect(!"\(key)".contains(key.base64))
        for bad in ["", "not base64", Data(repeating: 1, count: 16).base64EncodedString(), Data(repeating: 1, count: 33).base64EncodedString()] {
            let error = #expect(throws: CryptoError.self) { try SecretsKey(base64: bad) }
            #expect(error?.code == .invalidKey)
        }
    }
}
