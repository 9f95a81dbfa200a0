public import Foundation
import IsletCrypto
import Storage

/// The app keys: random, prefixed with their kind so that a misplaced key is
/// recognised, and stored only as SHA-256 hashes.
public enum AppKeys {
    static let serverPrefix = "islet_sk_"
    static let devicePrefix = "islet_dk_"

    /// A new key of `kind`.
    static func generate(_ kind: AppKeyKind) throws -> String {
        let prefix = kind == .server ? serverPrefix : devicePrefix
        return prefix + Base64URL.encode(try SecureRandom.bytes(32))
    }

    /// The kind a key's prefix says, if it has one.
    static func kind(of key: String) -> AppKeyKind? {
        if key.hasPrefix(serverPrefix) { return .server }
        if key.hasPrefix(devicePrefix) { return .device }
        return nil
    }

    /// A new app id.
    static func appID() throws -> String {
        "app_" + (try SecureRandom.bytes(10)).map { String(format: "%02x", $0) }.joined()
    }

    /// What the store keeps of a key (or of the admin token).
    public static func hash(_ key: String) -> Data { Digest.sha256(Data(key.utf8)) }
}
