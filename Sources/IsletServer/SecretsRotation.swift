import Foundation
public import IsletCore
import IsletCrypto
import PostgreSQLStorage
import SQLiteStorage
import Storage

/// What `islet secrets rotate` did.
public struct SecretsRotation: Sendable {
    /// Credentials sealed again under the new key.
    public let resealed: Int
    /// The key file the new key was written over: the data folder's `secrets.key`,
    /// when the SQLite database used it. `nil` when the key was given, and every node
    /// must now be started with the new one.
    public let replacedKeyFile: String?
}

/// `islet secrets rotate --new-key-file FILE`: seals every credential of the
/// database `configuration` names again under the key in `newKeyFile`, in one
/// transaction, each opened first with the current key (both found as
/// `islet serve` finds them). Run it with the nodes stopped: a node still running
/// holds the old key, which no longer opens the database.
public func rotateSecretsKey(_ configuration: Configuration, newKeyFile: String) throws(ConfigurationError) -> SecretsRotation {
    let current = try SecretsKeySource.load(configuration, generate: false)
    let newKey = try SecretsKeySource.read(newKeyFile, setting: "--new-key-file")
    let database = Redaction.hidingPasswords(in: configuration.resolvedDatabasePath)
    if configuration.postgresURL == nil, !FileManager.default.fileExists(atPath: configuration.resolvedDatabasePath) {
        throw ConfigurationError(.unusable, setting: Configuration.label(of: \.databasePath), message: "\(database): no database there")
    }
    let resealed: Int
    do {
        if let url = configuration.postgresURL {
            let store = try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet secrets rotate", secrets: current.key)
            defer { store.close() }
            resealed = try store.resealSecrets(under: newKey)
        } else {
            let store = try SQLiteStore(path: configuration.resolvedDatabasePath, secrets: current.key)
            defer { store.close() }
            resealed = try store.resealSecrets(under: newKey)
        }
    } catch let error as StoreError where error.code == .secretsKeyMismatch {
        throw current.mismatch(database: configuration.resolvedDatabasePath)
    } catch {
        let reason = Redaction.hidingPasswords(in: (error as? StoreError)?.message ?? "\(error)")
        throw ConfigurationError(.unusable, setting: Configuration.label(of: \.databasePath), message: "\(database): \(reason)")
    }
    // The data folder's own key gives way to the new one, or the next start would
    // bring the old one.
    guard configuration.secretsKey == nil, configuration.secretsKeyFile == nil, let file = current.file else {
        return SecretsRotation(resealed: resealed, replacedKeyFile: nil)
    }
    do {
        try PrivateFile.replace(file, newKey.base64 + "\n")
    } catch {
        throw ConfigurationError(
            .unusable, setting: current.setting,
            message: "the database is sealed under the new key, but \(error): copy \(newKeyFile) over \(file)")
    }
    return SecretsRotation(resealed: resealed, replacedKeyFile: file)
}
