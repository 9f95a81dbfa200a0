internal import COpenSSL
public import Foundation

/// Randomness from OpenSSL's CSPRNG.
public enum SecureRandom {
    /// `count` cryptographically secure random bytes.
    public static func bytes(_ count: Int) throws(CryptoError) -> Data {
        var out = [UInt8](repeating: 0, count: count)
        guard count == 0 || RAND_bytes(&out, Int32(count)) == 1 else {
            throw CryptoError.openSSL(.randomUnavailable, "the random source failed")
        }
        return Data(out)
    }
}
