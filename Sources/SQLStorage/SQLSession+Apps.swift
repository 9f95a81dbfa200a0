public import Foundation
public import Storage
import IsletCore

extension SQLSession {
    private static let appColumns: SQL = """
        id, name, bundle_id, apns_team_id, apns_key_id, apns_private_key, server_key_hash, device_key_hash,
        created_at, updated_at, strict_activity_types, device_secrets, budget, rate_limits, fcm_project_id,
        fcm_client_email, fcm_private_key, fcm_private_key_id, fcm_token_uri, local_join, history_retention_days
        """

    /// Adds an app; `conflict` when the id (or a key hash) is taken.
    public func insertApp(_ app: AppRecord) throws {
        try recoveringFromConflict { try run(
            """
            INSERT INTO apps (\(sql: Self.appColumns))
            VALUES (\(app.id), \(app.name), \(app.bundleID), \(app.credentials?.teamID), \(app.credentials?.keyID),
                \(try sealed(app.credentials?.privateKeyPEM)), \(app.serverKeyHash), \(app.deviceKeyHash),
                \(app.createdAt.unixMilliseconds), \(app.updatedAt.unixMilliseconds), \(app.strictActivityTypes),
                \(app.deviceSecrets.rawValue), \(Self.stored(app.budget.json)), \(Self.stored(app.rateLimits.json)),
                \(app.fcm?.projectID), \(app.fcm?.clientEmail), \(try sealed(app.fcm?.privateKeyPEM)), \(app.fcm?.privateKeyID),
                \(app.fcm?.tokenURI), \(app.localJoin.rawValue), \(app.historyRetentionDays))
            """) }
    }

    /// Replaces an app's name, bundle id, credentials, settings and key hashes, and
    /// tells the other nodes.
    public func updateApp(_ app: AppRecord) throws {
        try run(
            """
            UPDATE apps SET name = \(app.name), bundle_id = \(app.bundleID), apns_team_id = \(app.credentials?.teamID),
                apns_key_id = \(app.credentials?.keyID), apns_private_key = \(try sealed(app.credentials?.privateKeyPEM)),
                server_key_hash = \(app.serverKeyHash), device_key_hash = \(app.deviceKeyHash),
                updated_at = \(app.updatedAt.unixMilliseconds), strict_activity_types = \(app.strictActivityTypes),
                device_secrets = \(app.deviceSecrets.rawValue), budget = \(Self.stored(app.budget.json)),
                rate_limits = \(Self.stored(app.rateLimits.json)), local_join = \(app.localJoin.rawValue),
                history_retention_days = \(app.historyRetentionDays), \(sql: try fcmAssignments(app.fcm))
            WHERE id = \(app.id)
            """)
        try notifyNodes(.appChanged(appID: app.id))
    }

    /// Replaces an app's name, bundle id, credentials and settings, leaving its keys,
    /// and tells the other nodes.
    public func updateAppSettings(_ app: AppRecord) throws {
        try run(
            """
            UPDATE apps SET name = \(app.name), bundle_id = \(app.bundleID), apns_team_id = \(app.credentials?.teamID),
                apns_key_id = \(app.credentials?.keyID), apns_private_key = \(try sealed(app.credentials?.privateKeyPEM)),
                updated_at = \(app.updatedAt.unixMilliseconds), strict_activity_types = \(app.strictActivityTypes),
                device_secrets = \(app.deviceSecrets.rawValue), budget = \(Self.stored(app.budget.json)),
                rate_limits = \(Self.stored(app.rateLimits.json)), local_join = \(app.localJoin.rawValue),
                history_retention_days = \(app.historyRetentionDays), \(sql: try fcmAssignments(app.fcm))
            WHERE id = \(app.id)
            """)
        try notifyNodes(.appChanged(appID: app.id))
    }

    /// Replaces an app's two key hashes. Answers whether the app exists. Its
    /// `updated_at` moves forward even within one millisecond, so that a cached
    /// copy of the app is seen to be stale.
    public func replaceKeys(appID: String, serverKeyHash: Data, deviceKeyHash: Data, now: Date) throws -> Bool {
        let millis = now.unixMilliseconds
        let replaced = try run(
            """
            UPDATE apps SET server_key_hash = \(serverKeyHash), device_key_hash = \(deviceKeyHash),
                updated_at = CASE WHEN updated_at + 1 > \(millis) THEN updated_at + 1 ELSE \(millis) END
            WHERE id = \(appID)
            """) > 0
        // The old keys must stop working on every node now, not when caches expire.
        if replaced { try notifyNodes(.appChanged(appID: appID)) }
        return replaced
    }

    /// The app `id`.
    public func app(id: String) throws -> AppRecord? {
        try query("SELECT \(sql: Self.appColumns) FROM apps WHERE id = \(id)").first.map(appRecord)
    }

    /// The app whose server or device key hashes to `hash`, and which key it is.
    public func app(keyHash hash: Data) throws -> (app: AppRecord, kind: AppKeyKind)? {
        let rows = try query(
            "SELECT \(sql: Self.appColumns) FROM apps WHERE server_key_hash = \(hash) OR device_key_hash = \(hash)")
        guard let row = rows.first else { return nil }
        let app = try appRecord(row)
        return (app, app.serverKeyHash == hash ? .server : .device)
    }

    /// Every app, oldest first.
    public func apps() throws -> [AppRecord] {
        try query("SELECT \(sql: Self.appColumns) FROM apps ORDER BY created_at, id").map(appRecord)
    }

    private func appRecord(_ row: SQLRow) throws -> AppRecord {
        var credentials: APNsCredentials?
        if let team = row.optionalString("apns_team_id"), let key = row.optionalString("apns_key_id"),
            let pem = try opened(row.optionalString("apns_private_key"), column: "apns_private_key")
        {
            credentials = APNsCredentials(teamID: team, keyID: key, privateKeyPEM: pem)
        }
        var app = AppRecord(
            id: try row.string("id"), name: try row.string("name"), bundleID: try row.string("bundle_id"),
            credentials: credentials, serverKeyHash: row["server_key_hash"].blob ?? Data(),
            deviceKeyHash: row["device_key_hash"].blob ?? Data(), createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
        app.strictActivityTypes = (row.optionalInt64("strict_activity_types") ?? 0) != 0
        app.deviceSecrets = row.optionalString("device_secrets").flatMap(DeviceSecretPolicy.init(rawValue:)) ?? .off
        app.localJoin = row.optionalString("local_join").flatMap(LocalJoinRule.init(rawValue:)) ?? .anyone
        app.historyRetentionDays = row["history_retention_days"].real
        app.budget = BudgetOverrides(json: try row.json("budget"))
        app.rateLimits = RateLimitOverrides(json: try row.json("rate_limits"))
        if let project = row.optionalString("fcm_project_id"), let email = row.optionalString("fcm_client_email"),
            let tokenURI = row.optionalString("fcm_token_uri"),
            let pem = try opened(row.optionalString("fcm_private_key"), column: "fcm_private_key")
        {
            app.fcm = FCMCredentials(
                projectID: project, clientEmail: email, privateKeyPEM: pem, privateKeyID: row.optionalString("fcm_private_key_id"),
                tokenURI: tokenURI)
        }
        return app
    }

    /// The assignments of the FCM columns (all `NULL` without an account).
    private func fcmAssignments(_ fcm: FCMCredentials?) throws -> SQL {
        """
        fcm_project_id = \(fcm?.projectID), fcm_client_email = \(fcm?.clientEmail), \
        fcm_private_key = \(try sealed(fcm?.privateKeyPEM)), fcm_private_key_id = \(fcm?.privateKeyID), \
        fcm_token_uri = \(fcm?.tokenURI)
        """
    }

    /// A JSON object as stored: `NULL` when it is empty.
    private static func stored(_ object: JSONValue) -> String? {
        if case .object(let members) = object, members.isEmpty { return nil }
        return object.jsonText
    }
}
