public import Foundation
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
/// `islet serve` finds them). It refuses while a node runs on the database (a node
/// still running holds the old key, which no longer opens the database): on SQLite
/// one holding the database's lock (``DatabaseLock``, taken here exclusively for the
/// rotation), on PostgreSQL one whose heartbeat is recent, within `now` less the
/// push lease.
public func rotateSecretsKey(
    _ configuration: Configuration, newKeyFile: String, now: Date
) throws(ConfigurationError) -> SecretsRotation {
    let current = try SecretsKeySource.load(configuration, generate: false)
    let newKey = try SecretsKeySource.read(newKeyFile, setting: "--new-key-file")
    let database = Redaction.hidingPasswords(in: configuration.resolvedDatabasePath)
    if configuration.postgresURL == nil, !FileManager.default.fileExists(atPath: configuration.resolvedDatabasePath) {
        throw ConfigurationError(.unusable, setting: Configuration.label(of: \.databasePath), message: "\(database): no database there")
    }
    let setting = Configuration.label(of: \.databasePath)
    var lock: DatabaseLock?
    if configuration.postgresURL == nil {
        do {
            lock = try DatabaseLock.take(database: configuration.resolvedDatabasePath, exclusive: true)
        } catch {
            throw ConfigurationError(
                .unusable, setting: setting,
                message: error.held
                    ? "\(database): a node is running on this database (it holds \(DatabaseLock.path(database: database))); stop it before rotating the secrets key, or the running node would go on with the old one"
                    : error.message)
        }
    }
    defer { lock?.release() }
    let resealed: Int
    do {
        if let url = configuration.postgresURL {
            let store = try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet secrets rotate", secrets: current.key)
            defer { store.close() }
            let lease = configuration.pushLeaseSeconds
            let running = try store.readNow { try $0.nodes(seenSince: now.addingTimeInterval(-lease)) }
                .filter { $0.stoppedAt == nil }
            if !running.isEmpty {
                throw ConfigurationError(
                    .unusable, setting: setting,
                    message: "\(database): node(s) \(running.map(\.nodeID).joined(separator: ", ")) ran on this database within the last \(Int(lease)) s (their heartbeat) and did not stop cleanly; stop every node before rotating the secrets key, or a running node would go on with the old one (a node that died counts until its lease of \(Int(lease)) s runs out)")
            }
            resealed = try store.resealSecrets(under: newKey)
        } else {
            let store = try SQLiteStore(path: configuration.resolvedDatabasePath, secrets: current.key)
            defer { store.close() }
            resealed = try store.resealSecrets(under: newKey)
        }
    } catch let error as StoreError where error.code == .secretsKeyMismatch {
        throw current.mismatch(database: configuration.resolvedDatabasePath)
    } catch let error as ConfigurationError {
        throw error
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
