public import Foundation
import IsletCrypto

/// Standard Webhooks signing: `webhook-signature` is `v1,` and the base64 HMAC-SHA256
/// of `{webhook-id}.{webhook-timestamp}.{body}` under the secret's bytes (the
/// base64 after `whsec_`), one such value per secret, separated by spaces.
public enum WebhookSignature {
    /// The prefix of every secret.
    public static let secretPrefix = "whsec_"

    /// A new secret: `whsec_` and 32 random bytes in base64.
    public static func newSecret() throws(ServiceError) -> String {
        do {
            return secretPrefix + (try SecureRandom.bytes(32)).base64EncodedString()
        } catch {
            throw ServiceError(.failed, "No random bytes for a webhook secret: \(error)")
        }
    }

    /// The key of `secret` (nil when it is not one Islet made).
    static func key(_ secret: String) -> Data? {
        guard secret.hasPrefix(secretPrefix) else { return nil }
        return Data(base64Encoded: String(secret.dropFirst(secretPrefix.count)))
    }

    /// The `webhook-signature` header of a delivery, signed with each of `secrets`.
    public static func header(id: String, timestamp: Int64, body: Data, secrets: [String]) -> String {
        var signed = Data("\(id).\(timestamp).".utf8)
        signed.append(body)
        return secrets.compactMap(key).map { "v1," + Digest.hmacSHA256(key: $0, signed).base64EncodedString() }
            .joined(separator: " ")
    }
}
