internal import COpenSSL
public import Foundation

/// SHA-256, constant-time comparison and secure random bytes: the primitives behind
/// stored API-key hashes and generated secrets.
public enum Digest {
    /// The SHA-256 digest of `data` (32 bytes).
    public static func sha256(_ data: some DataProtocol) -> Data {
        let bytes = Array(data)
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // EVP_Digest with SHA-256 cannot fail on valid pointers.
        _ = EVP_Digest(bytes, bytes.count, &out, &length, EVP_sha256(), nil)
        return Data(out.prefix(Int(length)))
    }

    /// The HMAC-SHA256 of `data` under `key` (32 bytes): webhook signatures.
    public static func hmacSHA256(key: some DataProtocol, _ data: some DataProtocol) -> Data {
        let keyBytes = Array(key)
        let bytes = Array(data)
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        // One-shot HMAC with SHA-256 cannot fail on valid pointers.
        _ = HMAC(EVP_sha256(), keyBytes, Int32(keyBytes.count), bytes, bytes.count, &out, &length)
        return Data(out.prefix(Int(length)))
    }

    /// Whether `a` and `b` are equal, in time that depends only on their lengths.
    public static func constantTimeEquals(_ a: some DataProtocol, _ b: some DataProtocol) -> Bool {
        let left = Array(a)
        let right = Array(b)
        guard left.count == right.count else { return false }
        guard !left.isEmpty else { return true }
        return CRYPTO_memcmp(left, right, left.count) == 0
    }
}
