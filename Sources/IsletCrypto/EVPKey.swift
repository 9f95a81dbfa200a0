internal import COpenSSL
import Foundation

/// Owns one `EVP_PKEY` and frees it on deinit.
///
/// `@unchecked Sendable`: the key is never mutated after it is built, and OpenSSL 3
/// allows one `EVP_PKEY` to be used from many threads at once as long as each
/// operation has its own `EVP_MD_CTX`, which every method here creates.
final class EVPKey: @unchecked Sendable {
    let pointer: OpaquePointer

    init(taking pointer: OpaquePointer) {
        self.pointer = pointer
    }

    deinit {
        EVP_PKEY_free(pointer)
    }

    /// Reads a private key from PEM (PKCS#8 or the older SEC1 form). An encrypted
    /// key is refused: there is no passphrase to give it.
    static func privateKey(pem: String) throws(CryptoError) -> EVPKey {
        try withMemoryBIO(pem) { bio throws(CryptoError) in
            let (key, encrypted) = withoutPassphrase { asked in PEM_read_bio_PrivateKey(bio, nil, refusePassphrase, asked) }
            guard let key else {
                if encrypted { throw CryptoError.openSSL(.invalidKey, "the private key is encrypted; give it without a passphrase") }
                throw CryptoError.openSSL(
                    .invalidKey, "the text is not a private key in PEM (an Apple .p8 key starts with -----BEGIN PRIVATE KEY-----)")
            }
            return EVPKey(taking: key)
        }
    }

    /// Reads a public key from a PEM SubjectPublicKeyInfo.
    static func publicKey(pem: String) throws(CryptoError) -> EVPKey {
        try withMemoryBIO(pem) { bio throws(CryptoError) in
            let (key, encrypted) = withoutPassphrase { asked in PEM_read_bio_PUBKEY(bio, nil, refusePassphrase, asked) }
            guard let key else {
                if encrypted { throw CryptoError.openSSL(.invalidKey, "the public key is encrypted; give it without a passphrase") }
                throw CryptoError.openSSL(
                    .invalidKey, "the text is not a public key in PEM (one starts with -----BEGIN PUBLIC KEY-----)")
            }
            return EVPKey(taking: key)
        }
    }

    /// Runs a PEM read that passes ``refusePassphrase`` a flag, and answers its result
    /// and whether the PEM asked for a passphrase.
    private static func withoutPassphrase(_ read: (UnsafeMutableRawPointer) -> OpaquePointer?) -> (OpaquePointer?, encrypted: Bool) {
        var asked = false
        let key = withUnsafeMutablePointer(to: &asked) { read(UnsafeMutableRawPointer($0)) }
        return (key, asked)
    }

    /// The curve name of an EC key (`prime256v1` for P-256), or nil for other keys.
    var curveName: String? {
        guard EVP_PKEY_get_base_id(pointer) == EVP_PKEY_EC else { return nil }
        var buffer = [CChar](repeating: 0, count: 64)
        var length = 0
        guard EVP_PKEY_get_group_name(pointer, &buffer, buffer.count, &length) == 1 else { return nil }
        return String(decoding: buffer.prefix(length).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether it is an RSA key.
    var isRSA: Bool { EVP_PKEY_get_base_id(pointer) == EVP_PKEY_RSA }

    /// The key's size in bits (the modulus, for RSA).
    var bits: Int { Int(EVP_PKEY_get_bits(pointer)) }

    /// Whether the key is whole: its public point on the curve, its private scalar in
    /// range, and the one made from the other. A PEM private key carries both halves,
    /// and nothing in its syntax ties them together; a key whose halves disagree signs
    /// with its scalar while it verifies (and tells APNs it is) with the other point.
    var isConsistent: Bool {
        guard let context = EVP_PKEY_CTX_new_from_pkey(nil, pointer, nil) else { return false }
        defer { EVP_PKEY_CTX_free(context) }
        let verdict = EVP_PKEY_check(context)
        if verdict != 1 { _ = drainOpenSSLErrors() }
        return verdict == 1
    }

    /// The PKCS#8 PEM form of the private key (`-----BEGIN PRIVATE KEY-----`).
    func privateKeyPEM() -> String {
        writePEM { bio in PEM_write_bio_PKCS8PrivateKey(bio, pointer, nil, nil, 0, nil, nil) }
    }

    /// The PEM SubjectPublicKeyInfo of the public half (`-----BEGIN PUBLIC KEY-----`).
    func publicKeyPEM() -> String {
        writePEM { bio in PEM_write_bio_PUBKEY(bio, pointer) }
    }

    /// A new key holding only the public half of this one.
    func publicOnly() throws(CryptoError) -> EVPKey {
        try EVPKey.publicKey(pem: publicKeyPEM())
    }

    /// Signs `message` with SHA-256; answers the signature as OpenSSL encodes it
    /// (DER for ECDSA).
    func signSHA256(_ message: Data) throws(CryptoError) -> Data {
        guard let context = EVP_MD_CTX_new() else { throw CryptoError.openSSL(.signingFailed, "no digest context") }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestSignInit(context, nil, EVP_sha256(), nil, pointer) == 1 else {
            throw CryptoError.openSSL(.signingFailed, "cannot sign with this key")
        }
        let result: Data? = message.withUnsafeBytes { raw in
            let input = raw.bindMemory(to: UInt8.self).baseAddress
            var length = 0
            guard EVP_DigestSign(context, nil, &length, input, raw.count) == 1 else { return nil }
            var signature = Data(count: length)
            let ok = signature.withUnsafeMutableBytes { out in
                EVP_DigestSign(context, out.bindMemory(to: UInt8.self).baseAddress, &length, input, raw.count)
            }
            guard ok == 1 else { return nil }
            return signature.prefix(length)
        }
        guard let result else { throw CryptoError.openSSL(.signingFailed, "signing failed") }
        return result
    }

    /// Whether `signature` (as OpenSSL encodes it) signs `message` with SHA-256.
    func verifySHA256(signature: Data, message: Data) -> Bool {
        guard let context = EVP_MD_CTX_new() else { return false }
        defer { EVP_MD_CTX_free(context) }
        guard EVP_DigestVerifyInit(context, nil, EVP_sha256(), nil, pointer) == 1 else {
            _ = drainOpenSSLErrors()
            return false
        }
        let verdict = signature.withUnsafeBytes { sig in
            message.withUnsafeBytes { msg in
                EVP_DigestVerify(
                    context,
                    sig.bindMemory(to: UInt8.self).baseAddress, sig.count,
                    msg.bindMemory(to: UInt8.self).baseAddress, msg.count)
            }
        }
        if verdict != 1 { _ = drainOpenSSLErrors() }
        return verdict == 1
    }

    private func writePEM(_ write: (OpaquePointer) -> Int32) -> String {
        guard let bio = BIO_new(BIO_s_mem()) else { return "" }
        defer { BIO_free(bio) }
        guard write(bio) == 1 else { return "" }
        var data: UnsafePointer<CChar>?
        let length = islet_bio_mem_data(bio, &data)
        guard let data, length > 0 else { return "" }
        return data.withMemoryRebound(to: UInt8.self, capacity: length) {
            String(decoding: UnsafeBufferPointer(start: $0, count: length), as: UTF8.self)
        }
    }
}

/// The passphrase callback of every PEM read: it gives no passphrase, and notes in
/// the `Bool` its context points to that one was asked for. Without a callback
/// OpenSSL would ask for the passphrase on the process's terminal and wait there,
/// holding up the request that carried the key.
private func refusePassphrase(
    _ buffer: UnsafeMutablePointer<CChar>?, _ size: Int32, _ writing: Int32, _ context: UnsafeMutableRawPointer?
) -> Int32 {
    context?.assumingMemoryBound(to: Bool.self).pointee = true
    return -1
}

/// Runs `body` with a read-only memory BIO over `text`.
func withMemoryBIO<T>(_ text: String, _ body: (OpaquePointer) throws(CryptoError) -> T) throws(CryptoError) -> T {
    var bytes = Array(text.utf8)
    let count = Int32(bytes.count)
    let result: Result<T, CryptoError> = bytes.withUnsafeMutableBytes { raw in
        guard let bio = BIO_new_mem_buf(raw.baseAddress, count) else {
            return .failure(CryptoError.openSSL(.invalidKey, "cannot read key text"))
        }
        defer { BIO_free(bio) }
        do throws(CryptoError) {
            return .success(try body(bio))
        } catch {
            return .failure(error)
        }
    }
    return try result.get()
}
