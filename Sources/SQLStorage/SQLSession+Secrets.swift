import Foundation
public import IsletCore
import Storage

extension SQLSession {
    /// Every column that holds a credential, and the column that names its row:
    /// what the session's sealer seals. A credential column added later joins here.
    static let credentialColumns: [(table: String, id: String, column: String)] = [
        ("apps", "id", "apns_private_key"),
        ("apps", "id", "fcm_private_key"),
        ("webhooks", "webhook_id", "secret"),
        ("webhooks", "webhook_id", "previous_secret"),
    ]

    /// The `islet_metadata` row holding a value sealed under the database's key,
    /// which tells a wrong key at start.
    static let secretsCheckKey = "secrets_check"
    /// What the check value opens to.
    static let secretsCheckText = "islet secrets key check v1"

    /// A credential as it is stored: sealed, when the session has a sealer, under
    /// the key that is still the database's. A key replaced meanwhile (by
    /// `islet secrets rotate` while this node ran) is `secretsKeyMismatch`, and
    /// nothing is sealed under it: the check value is read in the caller's
    /// transaction (on PostgreSQL locked shared, so that a rotation under way is
    /// waited for and its key seen).
    func sealed(_ plain: String?) throws -> String? {
        guard let plain, let secrets else { return plain }
        let lock: SQL = dialect == .postgresql ? " FOR SHARE" : ""
        let check = try query("SELECT value FROM islet_metadata WHERE key = \(Self.secretsCheckKey)\(sql: lock)")
            .first?.optionalString("value")
        guard let check, (try? secrets.open(check)) == Self.secretsCheckText else {
            throw StoreError(
                .secretsKeyMismatch,
                "the database's secrets key is no longer this node's (islet secrets rotate replaced it): nothing is sealed under the old one; restart the node with the new key")
        }
        return try sealedUnchecked(plain)
    }

    /// `plain` sealed under the session's key, without checking that it is still
    /// the database's (at start, where it was just checked).
    private func sealedUnchecked(_ plain: String) throws -> String {
        guard let secrets else { return plain }
        do {
            return try secrets.seal(plain)
        } catch {
            throw StoreError(.unavailable, "cannot seal a credential: \(error)")
        }
    }

    /// A credential as the services see it: `stored` opened when it is sealed. A
    /// plain one passes as it is (written before sealing began; the next start seals
    /// it).
    func opened(_ stored: String, column: String) throws -> String {
        guard let secrets, secrets.isSealed(stored) else { return stored }
        do {
            return try secrets.open(stored)
        } catch {
            throw StoreError(.corrupt, "column \(column) holds a sealed value that the secrets key does not open")
        }
    }

    /// A credential that may be missing, as the services see it.
    func opened(_ stored: String?, column: String) throws -> String? {
        try stored.map { try opened($0, column: column) }
    }

    private static func mismatch() -> StoreError {
        StoreError(
            .secretsKeyMismatch,
            "the secrets key does not open the sealed values this database holds: they were sealed under another key")
    }

    /// Readies the credential columns for the session's secrets key, in the caller's
    /// transaction (the stores run it right after their migrations): the check value
    /// (sealed under the key by the first start) must open with it, else
    /// `secretsKeyMismatch`; then every credential still stored plain is sealed.
    /// Answers how many were sealed. Without a sealer it does nothing.
    @discardableResult
    public func prepareSecrets() throws -> Int {
        guard let secrets else { return 0 }
        let key = Self.secretsCheckKey
        // Two nodes starting at once insert one check value; the second reads the first's.
        let inserted = try run(
            """
            INSERT INTO islet_metadata (key, value) VALUES (\(key), \(try sealedUnchecked(Self.secretsCheckText)))
            ON CONFLICT (key) DO NOTHING
            """) > 0
        guard let check = try query("SELECT value FROM islet_metadata WHERE key = \(key)").first?.optionalString("value"),
            (try? secrets.open(check)) == Self.secretsCheckText
        else { throw Self.mismatch() }
        var sealedNow = 0
        for (table, id, column) in Self.credentialColumns {
            let rows = try query(
                "SELECT \(raw: id) AS id, \(raw: column) AS value FROM \(raw: table) WHERE \(raw: column) IS NOT NULL")
            for row in rows {
                let value = try row.string("value")
                if secrets.isSealed(value) {
                    // Sealed values without a check value (it was removed): they must
                    // open too before the new check vouches for the key.
                    if inserted, (try? secrets.open(value)) == nil { throw Self.mismatch() }
                    continue
                }
                sealedNow += try run(
                    """
                    UPDATE \(raw: table) SET \(raw: column) = \(try sealedUnchecked(value))
                    WHERE \(raw: id) = \(try row.string("id")) AND \(raw: column) = \(value)
                    """)
            }
        }
        return sealedNow
    }

    /// Seals every credential again under `newSecrets`, and the check value, in the
    /// caller's transaction: once it commits only the new key opens the database.
    /// Each value is opened with the session's key first (a plain one is sealed as
    /// it is); one that does not open fails the whole change. Answers how many
    /// credentials were sealed again.
    public func resealSecrets(under newSecrets: any SecretSealer) throws -> Int {
        guard let secrets else { throw StoreError(.unavailable, "the store has no secrets key to open the sealed values with") }
        func reseal(_ plain: String) throws -> String {
            do {
                return try newSecrets.seal(plain)
            } catch {
                throw StoreError(.unavailable, "cannot seal a credential: \(error)")
            }
        }
        let lock: SQL = dialect == .postgresql ? " FOR UPDATE" : ""
        // The check value first, locked: a node sealing meanwhile waits for this
        // change and then finds the new key's check (and refuses), or this change
        // waits for it and then reads what it wrote.
        _ = try query("SELECT value FROM islet_metadata WHERE key = \(Self.secretsCheckKey)\(sql: lock)")
        var count = 0
        for (table, id, column) in Self.credentialColumns {
            let rows = try query(
                "SELECT \(raw: id) AS id, \(raw: column) AS value FROM \(raw: table) WHERE \(raw: column) IS NOT NULL\(sql: lock)")
            for row in rows {
                let value = try row.string("value")
                let rowID = try row.string("id")
                var plain = value
                if secrets.isSealed(value) {
                    guard let opened = try? secrets.open(value) else {
                        throw StoreError(
                            .secretsKeyMismatch, "\(table).\(column) of \(rowID) does not open with the current secrets key")
                    }
                    plain = opened
                }
                let changed = try run(
                    """
                    UPDATE \(raw: table) SET \(raw: column) = \(try reseal(plain))
                    WHERE \(raw: id) = \(rowID) AND \(raw: column) = \(value)
                    """)
                guard changed == 1 else {
                    throw StoreError(.conflict, "\(table).\(column) of \(rowID) changed while its key was being replaced")
                }
                count += 1
            }
        }
        // Answers kept for a retry that hold a secret (a device registration's).
        for row in try query("SELECT app_id, key, body FROM idempotency_keys\(sql: lock)") {
            guard let text = row["body"].blob.flatMap({ String(data: $0, encoding: .utf8) }), secrets.isSealed(text) else {
                continue
            }
            let (appID, key) = (try row.string("app_id"), try row.string("key"))
            guard let plain = try? secrets.open(text) else {
                throw StoreError(.secretsKeyMismatch, "the answer of idempotency key \(key) does not open with the current secrets key")
            }
            try run(
                """
                UPDATE idempotency_keys SET body = \(Data(try reseal(plain).utf8)) WHERE app_id = \(appID) AND key = \(key)
                """)
        }
        try run(
            """
            INSERT INTO islet_metadata (key, value) VALUES (\(Self.secretsCheckKey), \(try reseal(Self.secretsCheckText)))
            ON CONFLICT (key) DO UPDATE SET value = excluded.value
            """)
        return count
    }
}
