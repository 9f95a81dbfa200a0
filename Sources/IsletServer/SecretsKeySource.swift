import Foundation
import IsletCore
import IsletCrypto

/// The key a node seals credentials with (APNs private keys, webhook secrets), and
/// where it came from: `--secrets-key` (`ISLET_SECRETS_KEY`), the file
/// `--secrets-key-file` names, or, on SQLite only, `<data-dir>/secrets.key`,
/// generated there (0600) by the first start.
struct SecretsKeySource {
    /// The key.
    let key: SecretsKey
    /// The setting an error about the key names.
    let setting: String
    /// The file the key was read from, if any.
    let file: String?
    /// Whether this start generated the key into `file`: a start that fails before
    /// anything was sealed under it removes it again.
    let generated: Bool

    static let keySetting = Configuration.label(of: \.secretsKey)
    static let fileSetting = Configuration.label(of: \.secretsKeyFile)

    /// The key `configuration` gives. Without one, an SQLite node reads the data
    /// folder's key, generating it the first time when `generate` says so; a
    /// PostgreSQL node, whose nodes must share one, is refused in one line saying how
    /// to make one.
    static func load(_ configuration: Configuration, generate: Bool = true) throws(ConfigurationError) -> SecretsKeySource {
        if configuration.secretsKey != nil && configuration.secretsKeyFile != nil {
            throw ConfigurationError(
                .unusable, setting: fileSetting, message: "give the secrets key once: in ISLET_SECRETS_KEY or in a file, not both")
        }
        if let text = configuration.secretsKey {
            return SecretsKeySource(key: try parse(text, setting: keySetting, origin: nil), setting: keySetting, file: nil, generated: false)
        }
        if let path = configuration.secretsKeyFile {
            return SecretsKeySource(key: try read(path, setting: fileSetting), setting: fileSetting, file: path, generated: false)
        }
        guard configuration.postgresURL == nil else {
            throw ConfigurationError(
                .unusable, setting: keySetting,
                message: "a PostgreSQL database needs a secrets key, the same on every node: make one with `islet secrets generate` and give it in ISLET_SECRETS_KEY or in a file named by --secrets-key-file")
        }
        let path = configuration.secretsKeyPath
        if FileManager.default.fileExists(atPath: path) {
            PrivateFile.tighten(path)
            return SecretsKeySource(key: try read(path, setting: fileSetting), setting: fileSetting, file: path, generated: false)
        }
        guard generate else {
            throw ConfigurationError(
                .unusable, setting: keySetting,
                message: "\(path) does not exist and no key is given: give the key the database was sealed with")
        }
        do {
            let key = try SecretsKey.generate()
            try PrivateFile.create(path, key.base64 + "\n")
            return SecretsKeySource(key: key, setting: fileSetting, file: path, generated: true)
        } catch {
            throw ConfigurationError(.unusable, setting: fileSetting, message: "cannot make a secrets key: \(error)")
        }
    }

    /// The key in the file at `path`.
    static func read(_ path: String, setting: String) throws(ConfigurationError) -> SecretsKey {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw ConfigurationError(.unusable, setting: setting, message: "cannot read \(path)")
        }
        return try parse(String(decoding: data, as: UTF8.self), setting: setting, origin: path)
    }

    private static func parse(_ text: String, setting: String, origin: String?) throws(ConfigurationError) -> SecretsKey {
        do {
            return try SecretsKey(base64: text)
        } catch {
            throw ConfigurationError(.unusable, setting: setting, message: (origin.map { "\($0): " } ?? "") + error.reason)
        }
    }

    /// Removes the key this start generated (nothing was sealed under it yet).
    func discardIfGenerated() {
        if generated, let file { unlink(file) }
    }

    /// The error of a start whose key does not open the sealed values of `database`.
    func mismatch(database: String) -> ConfigurationError {
        ConfigurationError(
            .unusable, setting: setting,
            message: "the key does not open the sealed values in \(Redaction.hidingPasswords(in: database)): start with the key they were sealed with (after `islet secrets rotate`, the new one)")
    }
}
