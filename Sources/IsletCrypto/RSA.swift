internal import COpenSSL
public import Foundation

/// RSASSA-PKCS1-v1_5 with SHA-256: the RS256 algorithm of the OAuth 2.0 assertions
/// a Google service account signs (FCM's HTTP v1 API takes their access tokens).
public enum RSA {
    /// The smallest modulus accepted: Google issues 2048-bit keys.
    public static let minimumBits = 2048

    /// An RSA private key, such as the `private_key` of a service account's JSON.
    public struct SigningKey: Sendable {
        let key: EVPKey

        /// Reads a PEM private key (PKCS#8, as in a service account's JSON, or
        /// PKCS#1) and checks that it is an RSA key of at least 2048 bits whose
        /// halves belong together.
        public init(pemRepresentation pem: String) throws(CryptoError) {
            let key = try EVPKey.privateKey(pem: pem)
            guard key.isRSA else {
                throw CryptoError(.unsupportedKey, "the key is not an RSA key; a service account's key is RSA")
            }
            guard key.bits >= RSA.minimumBits else {
                throw CryptoError(.unsupportedKey, "the key has \(key.bits) bits; at least \(RSA.minimumBits) are needed")
            }
            guard key.isConsistent else {
                throw CryptoError(.invalidKey, "the key's public half does not belong to its private half; the file is damaged")
            }
            self.key = key
        }

        private init(key: EVPKey) { self.key = key }

        /// A freshly generated key of `bits` bits.
        public static func generate(bits: Int = 2048) throws(CryptoError) -> SigningKey {
            guard let pointer = islet_evp_rsa_gen(UInt32(bits)) else {
                throw CryptoError.openSSL(.signingFailed, "cannot generate an RSA key")
            }
            return SigningKey(key: EVPKey(taking: pointer))
        }

        /// The key as PKCS#8 PEM (`-----BEGIN PRIVATE KEY-----`).
        public var pemRepresentation: String { key.privateKeyPEM() }

        /// The public half.
        public var publicKey: VerifyingKey {
            // Rebuilding from our own PEM cannot fail for a key OpenSSL just wrote.
            VerifyingKey(key: (try? key.publicOnly()) ?? key)
        }

        /// Signs `message` with RS256.
        public func signature(for message: Data) throws(CryptoError) -> Data {
            try key.signSHA256(message)
        }
    }

    /// An RSA public key.
    public struct VerifyingKey: Sendable {
        let key: EVPKey

        init(key: EVPKey) { self.key = key }

        /// Reads a PEM public key (SubjectPublicKeyInfo) and checks that it is RSA.
        public init(pemRepresentation pem: String) throws(CryptoError) {
            let key = try EVPKey.publicKey(pem: pem)
            guard key.isRSA else { throw CryptoError(.unsupportedKey, "the key is not an RSA key") }
            self.key = key
        }

        /// The key as PEM SubjectPublicKeyInfo (`-----BEGIN PUBLIC KEY-----`).
        public var pemRepresentation: String { key.publicKeyPEM() }

        /// Whether `signature` is an RS256 signature of `message` by this key's
        /// private half.
        public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
            key.verifySHA256(signature: signature, message: message)
        }
    }
}
