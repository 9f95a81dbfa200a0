internal import COpenSSL
public import Foundation

/// AES-256 in Galois/Counter Mode (NIST SP 800-38D) over libcrypto's EVP interface:
/// encryption that also authenticates, so that a changed ciphertext or a wrong key is
/// refused rather than opened into garbage. See
/// https://docs.openssl.org/3.0/man3/EVP_EncryptInit/#aead-interface for the calls.
public enum AES256GCM {
    /// The key's length in bytes.
    public static let keyByteCount = 32
    /// The nonce's length in bytes (96 bits, GCM's own size).
    public static let nonceByteCount = 12
    /// The authentication tag's length in bytes.
    public static let tagByteCount = 16

    /// Encrypts `plaintext` under `key` with `nonce`, and answers the ciphertext
    /// followed by the tag, which also covers `associatedData`. A nonce must never be
    /// used twice with one key: draw it at random for every value.
    public static func seal(_ plaintext: Data, key: Data, nonce: Data, associatedData: Data = Data()) throws(CryptoError) -> Data {
        try checkSizes(key: key, nonce: nonce, code: .sealingFailed)
        guard plaintext.count < Int(Int32.max) - tagByteCount else {
            throw CryptoError(.sealingFailed, "the value is too long to seal")
        }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError.openSSL(.sealingFailed, "cannot allocate a cipher context")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        let keyBytes = [UInt8](key)
        let nonceBytes = [UInt8](nonce)
        let input = [UInt8](plaintext)
        let aad = [UInt8](associatedData)
        var output = [UInt8](repeating: 0, count: input.count + tagByteCount)
        let ok = output.withUnsafeMutableBufferPointer { out -> Bool in
            var length: Int32 = 0
            guard EVP_EncryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
                EVP_EncryptInit_ex(context, nil, nil, keyBytes, nonceBytes) == 1,
                EVP_EncryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1,
                EVP_EncryptUpdate(context, out.baseAddress, &length, input, Int32(input.count)) == 1
            else { return false }
            var written = Int(length)
            // GCM is a stream mode: the final call writes nothing, and computes the tag.
            guard EVP_EncryptFinal_ex(context, out.baseAddress! + written, &length) == 1 else { return false }
            written += Int(length)
            guard written == input.count else { return false }
            return EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_GET_TAG, Int32(tagByteCount), out.baseAddress! + written) == 1
        }
        guard ok else { throw CryptoError.openSSL(.sealingFailed, "OpenSSL refused to encrypt the value") }
        return Data(output)
    }

    /// Decrypts what ``seal(_:key:nonce:associatedData:)`` answered (the ciphertext
    /// followed by the tag) and answers the plaintext; throws `unsealingFailed` when
    /// the tag does not match: a wrong key, a wrong nonce or associated data, or a
    /// changed ciphertext.
    public static func open(_ sealed: Data, key: Data, nonce: Data, associatedData: Data = Data()) throws(CryptoError) -> Data {
        try checkSizes(key: key, nonce: nonce, code: .unsealingFailed)
        guard sealed.count >= tagByteCount, sealed.count < Int(Int32.max) else {
            throw CryptoError(.unsealingFailed, "the sealed value is too short to hold its tag")
        }
        guard let context = EVP_CIPHER_CTX_new() else {
            throw CryptoError.openSSL(.unsealingFailed, "cannot allocate a cipher context")
        }
        defer { EVP_CIPHER_CTX_free(context) }
        let keyBytes = [UInt8](key)
        let nonceBytes = [UInt8](nonce)
        let ciphertext = [UInt8](sealed.prefix(sealed.count - tagByteCount))
        var tag = [UInt8](sealed.suffix(tagByteCount))
        let aad = [UInt8](associatedData)
        // One byte more than the plaintext, so that the final call has somewhere to point.
        var output = [UInt8](repeating: 0, count: ciphertext.count + 1)
        let opened = output.withUnsafeMutableBufferPointer { out -> Bool in
            var length: Int32 = 0
            guard EVP_DecryptInit_ex(context, EVP_aes_256_gcm(), nil, nil, nil) == 1,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_IVLEN, Int32(nonceByteCount), nil) == 1,
                EVP_DecryptInit_ex(context, nil, nil, keyBytes, nonceBytes) == 1,
                EVP_DecryptUpdate(context, nil, &length, aad, Int32(aad.count)) == 1,
                EVP_DecryptUpdate(context, out.baseAddress, &length, ciphertext, Int32(ciphertext.count)) == 1
            else { return false }
            let written = Int(length)
            guard written == ciphertext.count,
                EVP_CIPHER_CTX_ctrl(context, EVP_CTRL_AEAD_SET_TAG, Int32(tagByteCount), &tag) == 1
            else { return false }
            // The tag is checked here: anything but 1 means the value is not authentic.
            return EVP_DecryptFinal_ex(context, out.baseAddress! + written, &length) == 1 && length == 0
        }
        guard opened else {
            // Keep OpenSSL's queue clean; a failed tag check is the expected reason.
            _ = drainOpenSSLErrors()
            throw CryptoError(.unsealingFailed, "the sealed value does not open with this key (a wrong key, or a changed value)")
        }
        return Data(output.prefix(ciphertext.count))
    }

    private static func checkSizes(key: Data, nonce: Data, code: CryptoError.Code) throws(CryptoError) {
        guard key.count == keyByteCount else { throw CryptoError(code, "an AES-256 key is \(keyByteCount) bytes, not \(key.count)") }
        guard nonce.count == nonceByteCount else {
            throw CryptoError(code, "a GCM nonce here is \(nonceByteCount) bytes, not \(nonce.count)")
        }
    }
}
