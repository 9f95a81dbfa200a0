public import Foundation

#if canImport(Security)
import Security
#endif

/// Where the device's secret is kept between launches: the Keychain on Apple
/// platforms (`KeychainSecretStore`), a file elsewhere (`FileSecretStore`).
public protocol SecretStore: Sendable {
    func secret(for account: String) throws -> String?
    func setSecret(_ secret: String?, for account: String) throws
}

/// Keeps secrets in one file per account under a directory, readable by the
/// process's user only. For Linux and tests: on iOS, use the Keychain.
public struct FileSecretStore: SecretStore {
    public let directory: URL

    public init(directory: URL) { self.directory = directory }

    func file(_ account: String) -> URL {
        let safe = account.unicodeScalars.map { scalar -> String in
            CharacterSet.alphanumerics.contains(scalar) || scalar == "." || scalar == "-" ? String(scalar) : "_"
        }.joined()
        return directory.appendingPathComponent("secret-\(safe)")
    }

    public func secret(for account: String) throws -> String? {
        guard let data = FileManager.default.contents(atPath: file(account).path) else { return nil }
        return String(decoding: data, as: UTF8.self)
    }

    public func setSecret(_ secret: String?, for account: String) throws {
        let url = file(account)
        guard let secret else {
            try? FileManager.default.removeItem(at: url)
            return
        }
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        try Data(secret.utf8).write(to: url, options: .atomic)
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.path)
    }
}

#if canImport(Security)
/// Keeps secrets in the Keychain (a generic password per account, readable after
/// the first unlock, so that a launch in the background by push-to-start reads it;
/// not synchronised, not carried to another device).
public struct KeychainSecretStore: SecretStore {
    public let service: String

    public init(service: String = "dev.islet.device-secret") { self.service = service }

    func query(_ account: String) -> [String: Any] {
        [kSecClass as String: kSecClassGenericPassword, kSecAttrService as String: service, kSecAttrAccount as String: account]
    }

    public func secret(for account: String) throws -> String? {
        var q = query(account)
        q[kSecReturnData as String] = true
        q[kSecMatchLimit as String] = kSecMatchLimitOne
        var item: CFTypeRef?
        let status = SecItemCopyMatching(q as CFDictionary, &item)
        if status == errSecItemNotFound { return nil }
        guard status == errSecSuccess, let data = item as? Data else { throw KeychainError(status: status) }
        return String(decoding: data, as: UTF8.self)
    }

    public func setSecret(_ secret: String?, for account: String) throws {
        let deleted = SecItemDelete(query(account) as CFDictionary)
        guard deleted == errSecSuccess || deleted == errSecItemNotFound else { throw KeychainError(status: deleted) }
        guard let secret else { return }
        var q = query(account)
        q[kSecValueData as String] = Data(secret.utf8)
        q[kSecAttrAccessible as String] = kSecAttrAccessibleAfterFirstUnlockThisDeviceOnly
        let status = SecItemAdd(q as CFDictionary, nil)
        guard status == errSecSuccess else { throw KeychainError(status: status) }
    }
}

public struct KeychainError: Error, Sendable {
    public let status: OSStatus
}
#endif
