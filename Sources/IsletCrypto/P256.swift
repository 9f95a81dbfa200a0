internal import COpenSSL
public import Foundation

/// ECDSA over the NIST P-256 curve with SHA-256: the ES256 algorithm that APNs
/// provider tokens use. Signatures are the raw 64-byte `r || s` form that JOSE
/// requires; OpenSSL's DER form is converted at the boundary.
public enum P256 {
    /// A P-256 private key, such as the `.p8` file Apple issues for APNs.
    public struct SigningKey: Sendable {
        let key: EVPKey

        /// Reads a PEM private key (PKCS#8, as in an Apple `.p8` file, or SEC1) and
        /// checks that it is on P-256 and that its two halves belong together.
        public init(pemRepresentation pem: String) throws(CryptoError) {
            let key = try EVPKey.privateKey(pem: pem)
            guard let curve = key.curveName else {
                throw CryptoError(.unsupportedKey, "the key is not an elliptic-curve key; APNs needs a P-256 key")
            }
            guard curve == "prime256v1" else {
                throw CryptoError(.unsupportedKey, "the key is on curve \(curve); APNs needs P-256 (prime256v1)")
            }
            guard key.isConsistent else {
                throw CryptoError(.invalidKey, "the key's public half does not belong to its private half; the file is damaged")
            }
            self.key = key
        }

        private init(key: EVPKey) { self.key = key }

        /// A freshly generated key.
        public static func generate() throws(CryptoError) -> SigningKey {
            guard let pointer = islet_evp_ec_gen_p256() else {
                throw CryptoError.openSSL(.signingFailed, "cannot generate a P-256 key")
            }
            return SigningKey(key: EVPKey(taking: pointer))
        }

        /// The key as PKCS#8 PEM, the `.p8` format.
        public var pemRepresentation: String { key.privateKeyPEM() }

        /// The public half.
        public var publicKey: VerifyingKey {
            // Rebuilding from our own PEM cannot fail for a key OpenSSL just wrote.
            VerifyingKey(key: (try? key.publicOnly()) ?? key)
        }

        /// Signs `message` with ES256; answers the raw 64-byte `r || s` signature.
        public func signature(for message: Data) throws(CryptoError) -> Data {
            try ECDSASignature.raw(fromDER: key.signSHA256(message))
        }
    }

    /// A P-256 public key.
    public struct VerifyingKey: Sendable {
        let key: EVPKey

        init(key: EVPKey) { self.key = key }

        /// Reads a PEM public key (SubjectPublicKeyInfo) and checks that it is on P-256.
        public init(pemRepresentation pem: String) throws(CryptoError) {
            let key = try EVPKey.publicKey(pem: pem)
            guard key.curveName == "prime256v1" else {
                throw CryptoError(.unsupportedKey, "the public key is not a P-256 key")
            }
            self.key = key
        }

        /// The key as PEM SubjectPublicKeyInfo.
        public var pemRepresentation: String { key.publicKeyPEM() }

        /// Whether `signature` (raw `r || s`, 64 bytes) is a valid ES256 signature of
        /// `message`. A signature of any other length is not valid.
        public func isValidSignature(_ signature: Data, for message: Data) -> Bool {
            guard let der = try? ECDSASignature.der(fromRaw: signature) else { return false }
            return key.verifySHA256(signature: der, message: message)
        }

        /// Whether `signature`, a DER `ECDSA-Sig-Value` (not the JOSE form), is a
        /// valid ES256 signature of `message`.
        public func isValidDERSignature(_ signature: Data, for message: Data) -> Bool {
            guard signature.count != ECDSASignature.componentLength * 2, signature.first == 0x30 else { return false }
            return key.verifySHA256(signature: signature, message: message)
        }
    }
}

/// Converts ECDSA P-256 signatures between DER (what OpenSSL produces) and raw
/// `r || s` (what JOSE and APNs use).
public enum ECDSASignature {
    /// Bytes of each of r and s on P-256.
    public static let componentLength = 32

    /// The raw 64-byte `r || s` form of a DER `ECDSA-Sig-Value`.
    public static func raw(fromDER der: Data) throws(CryptoError) -> Data {
        let signature: OpaquePointer? = der.withUnsafeBytes { bytes in
            var cursor = bytes.bindMemory(to: UInt8.self).baseAddress
            return d2i_ECDSA_SIG(nil, &cursor, bytes.count)
        }
        guard let signature else { throw CryptoError.openSSL(.invalidSignature, "not a DER ECDSA signature") }
        defer { ECDSA_SIG_free(signature) }
        var raw = Data(count: componentLength * 2)
        let written = raw.withUnsafeMutableBytes { out -> Bool in
            let base = out.bindMemory(to: UInt8.self).baseAddress!
            let n = Int32(componentLength)
            return BN_bn2binpad(ECDSA_SIG_get0_r(signature), base, n) == n
                && BN_bn2binpad(ECDSA_SIG_get0_s(signature), base + componentLength, n) == n
        }
        guard written else { throw CryptoError(.invalidSignature, "signature component longer than 32 bytes") }
        return raw
    }

    /// The DER `ECDSA-Sig-Value` form of a raw 64-byte `r || s` signature.
    public static func der(fromRaw raw: Data) throws(CryptoError) -> Data {
        guard raw.count == componentLength * 2 else {
            throw CryptoError(.invalidSignature, "a raw ES256 signature is 64 bytes, not \(raw.count)")
        }
        guard let signature = ECDSA_SIG_new() else { throw CryptoError.openSSL(.invalidSignature, "out of memory") }
        defer { ECDSA_SIG_free(signature) }
        let attached = raw.withUnsafeBytes { bytes -> Bool in
            let base = bytes.bindMemory(to: UInt8.self).baseAddress!
            let n = Int32(componentLength)
            guard let r = BN_bin2bn(base, n, nil) else { return false }
            guard let s = BN_bin2bn(base + componentLength, n, nil) else {
                BN_free(r)
                return false
            }
            // On success ECDSA_SIG_set0 takes ownership of r and s.
            guard ECDSA_SIG_set0(signature, r, s) == 1 else {
                BN_free(r)
                BN_free(s)
                return false
            }
            return true
        }
        guard attached else { throw CryptoError.openSSL(.invalidSignature, "cannot build signature") }
        let length = i2d_ECDSA_SIG(signature, nil)
        guard length > 0 else { throw CryptoError.openSSL(.invalidSignature, "cannot encode signature") }
        var der = Data(count: Int(length))
        let encoded = der.withUnsafeMutableBytes { out -> Int32 in
            var cursor = out.bindMemory(to: UInt8.self).baseAddress
            return i2d_ECDSA_SIG(signature, &cursor)
        }
        guard encoded == length else { throw CryptoError.openSSL(.invalidSignature, "cannot encode signature") }
        return der
    }
}
