public import Foundation
public import IsletCore

/// The key that seals credentials at rest (a key-encryption key): 32 random bytes,
/// written as base64 wherever a person handles it (`ISLET_SECRETS_KEY`, a key file,
/// `islet secrets generate`).
///
/// A sealed value is `sealed:v1:` followed by the base64 of a random 12-byte nonce,
/// the AES-256-GCM ciphertext and its 16-byte tag; the prefix is authenticated with
/// it. Plain values (PEM keys, `whsec_` secrets) never start so, which tells the two
/// apart. Its description never shows the key.
public struct SecretsKey: SecretSealer, Sendable, CustomStringConvertible {
    /// The prefix of every value sealed in this format.
    public static let sealedPrefix = "sealed:v1:"

    private let bytes: Data

    /// A key of exactly ``AES256GCM/keyByteCount`` bytes.
    public init(bytes: Data) throws(CryptoError) {
        guard bytes.count == AES256GCM.keyByteCount else {
            throw CryptoError(.invalidKey, "a secrets key is \(AES256GCM.keyByteCount) bytes, not \(bytes.count)")
        }
        self.bytes = bytes
    }

    /// A key from its base64 text (surrounding white space ignored).
    public init(base64 text: String) throws(CryptoError) {
        guard let bytes = Data(base64Encoded: text.trimmingCharacters(in: .whitespacesAndNewlines)) else {
            throw CryptoError(.invalidKey, "a secrets key is base64 text (make one with `islet secrets generate`)")
        }
        guard bytes.count == AES256GCM.keyByteCount else {
            throw CryptoError(
                .invalidKey,
                "a secrets key is \(AES256GCM.keyByteCount) bytes in base64, not \(bytes.count) (make one with `islet secrets generate`)")
        }
        self.bytes = bytes
    }

    /// A fresh key from the system's secure random source.
    public static func generate() throws(CryptoError) -> SecretsKey {
        try SecretsKey(bytes: try SecureRandom.bytes(AES256GCM.keyByteCount))
    }

    /// The key as base64, as `islet secrets generate` prints it.
    public var base64: String { bytes.base64EncodedString() }

    /// Never the key itself.
    public var description: String { "SecretsKey(…)" }

    /// `plain` sealed under this key with a fresh random nonce: two seals of one
    /// value differ.
    public func seal(_ plain: String) throws(CryptoError) -> String {
        let nonce = try SecureRandom.bytes(AES256GCM.nonceByteCount)
        let sealed = try AES256GCM.seal(
            Data(plain.utf8), key: bytes, nonce: nonce, associatedData: Data(Self.sealedPrefix.utf8))
        return Self.sealedPrefix + (nonce + sealed).base64EncodedString()
    }

    /// The plain value of `sealed`; `unsealingFailed` when it is not in this format,
    /// was sealed under another key, or was changed.
    public func open(_ sealed: String) throws(CryptoError) -> String {
        guard sealed.hasPrefix(Self.sealedPrefix),
            let box = Data(base64Encoded: String(sealed.dropFirst(Self.sealedPrefix.count))),
            box.count >= AES256GCM.nonceByteCount + AES256GCM.tagByteCount
        else {
            throw CryptoError(.unsealingFailed, "the value is not sealed in the \(Self.sealedPrefix) format")
        }
        let plain = try AES256GCM.open(
            Data(box.dropFirst(AES256GCM.nonceByteCount)), key: bytes, nonce: Data(box.prefix(AES256GCM.nonceByteCount)),
            associatedData: Data(Self.sealedPrefix.utf8))
        guard let text = String(data: plain, encoding: .utf8) else {
            throw CryptoError(.unsealingFailed, "the sealed value is not text")
        }
        return text
    }

    /// Whether `stored` is a sealed value (of any version, under any key).
    public func isSealed(_ stored: String) -> Bool {
        stored.hasPrefix("sealed:")
    }
}
