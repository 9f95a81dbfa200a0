public import Foundation
public import IsletCore

/// What a device registration changes. `nil` leaves the stored value alone, so that
/// a registration without a token never erases one.
public struct DeviceRegistration: Sendable {
    /// `ios`.
    public var platform: String
    /// The environment of the device's tokens.
    public var environment: APNsEnvironment
    /// A new device token, or `nil` to keep the stored one.
    public var apnsToken: String?
    /// `.some(nil)` clears the user id; `nil` keeps it.
    public var userID: String??
    /// The new tags, or `nil` to keep them.
    public var tags: [String]?

    /// Creates a registration.
    public init(platform: String, environment: APNsEnvironment, apnsToken: String?, userID: String??, tags: [String]?) {
        self.platform = platform
        self.environment = environment
        self.apnsToken = apnsToken
        self.userID = userID
        self.tags = tags
    }
}

extension SQLiteSession {
    /// The device `deviceID` of `appID`.
    public func device(appID: String, deviceID: String) throws -> DeviceRecord? {
        guard let row = try query(
            """
            SELECT device_id, platform, environment, apns_token, unreachable_at, user_id, created_at, updated_at
            FROM devices WHERE app_id = ? AND device_id = ?
            """, [appID, deviceID]).first
        else { return nil }
        let tags = try query(
            "SELECT tag FROM device_tags WHERE app_id = ? AND device_id = ? ORDER BY tag", [appID, deviceID]
        ).map { try $0.string("tag") }
        return DeviceRecord(
            deviceID: try row.string("device_id"), platform: try row.string("platform"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            apnsToken: row.optionalString("apns_token"), unreachableAt: row.optionalDate("unreachable_at"),
            userID: row.optionalString("user_id"), tags: tags, createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
    }

    /// Creates or updates a device. Answers whether it was created.
    public func upsertDevice(appID: String, deviceID: String, _ registration: DeviceRegistration, now: Date) throws -> Bool {
        let existing = try device(appID: appID, deviceID: deviceID)
        let millis = now.unixMilliseconds
        if let existing {
            let userID: String? = registration.userID ?? existing.userID
            try run(
                """
                UPDATE devices SET platform = ?, environment = ?, user_id = ?, updated_at = ?,
                    apns_token = coalesce(?, apns_token),
                    apns_token_registered_at = CASE WHEN ? THEN ? ELSE apns_token_registered_at END,
                    unreachable_at = CASE WHEN ? THEN NULL ELSE unreachable_at END
                WHERE app_id = ? AND device_id = ?
                """,
                [registration.platform, registration.environment.rawValue, userID, millis,
                 registration.apnsToken, registration.apnsToken != nil, millis, registration.apnsToken != nil,
                 appID, deviceID])
        } else {
            try run(
                """
                INSERT INTO devices (app_id, device_id, platform, environment, apns_token, apns_token_registered_at,
                    user_id, created_at, updated_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [appID, deviceID, registration.platform, registration.environment.rawValue, registration.apnsToken,
                 registration.apnsToken == nil ? nil : millis, registration.userID ?? nil, millis, millis])
        }
        if let tags = registration.tags {
            try run("DELETE FROM device_tags WHERE app_id = ? AND device_id = ?", [appID, deviceID])
            for tag in Set(tags) {
                try run("INSERT INTO device_tags (app_id, tag, device_id) VALUES (?, ?, ?)", [appID, tag, deviceID])
            }
        }
        return existing == nil
    }

    /// The kinds other than `except` under which `token` is registered anywhere in
    /// the app, so that a token of one kind is never stored as another. One query.
    public func registeredKinds(appID: String, token: String, except: PushTokenKind?) throws -> Set<PushTokenKind> {
        var parts: [String] = []
        if except != .device {
            parts.append("SELECT 'device' AS kind FROM devices WHERE app_id = ?1 AND apns_token = ?2")
        }
        if except != .pushToStart {
            parts.append("SELECT 'push_to_start' FROM start_tokens WHERE app_id = ?1 AND token = ?2")
        }
        if except != .liveActivityUpdate {
            parts.append("SELECT 'live_activity_update' FROM activity_instances WHERE app_id = ?1 AND update_token = ?2")
        }
        let rows = try query(parts.map { "SELECT * FROM (\($0) LIMIT 1)" }.joined(separator: " UNION ALL "), [appID, token])
        return Set(rows.compactMap { $0[0].text.flatMap(PushTokenKind.init(rawValue:)) })
    }

    /// The environment of a registered device, or `nil` when there is no such device.
    public func deviceEnvironment(appID: String, deviceID: String) throws -> APNsEnvironment? {
        try query("SELECT environment FROM devices WHERE app_id = ? AND device_id = ?", [appID, deviceID])
            .first?.optionalString("environment").flatMap(APNsEnvironment.init(rawValue:))
    }

    /// Stores the push-to-start token of one device and activity type. Answers
    /// whether none was stored before.
    public func upsertStartToken(
        appID: String, deviceID: String, activityType: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool {
        let existing = try query(
            "SELECT token FROM start_tokens WHERE app_id = ? AND device_id = ? AND activity_type = ?",
            [appID, deviceID, activityType]).first
        try run(
            """
            INSERT INTO start_tokens (app_id, device_id, activity_type, token, environment, registered_at)
            VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (app_id, device_id, activity_type) DO UPDATE SET
                token = excluded.token, environment = excluded.environment, registered_at = excluded.registered_at
            """,
            [appID, deviceID, activityType, token, environment.rawValue, now.unixMilliseconds])
        return existing == nil
    }

    /// Removes a device's push-to-start token for a type. Answers whether one was
    /// stored.
    public func deleteStartToken(appID: String, deviceID: String, activityType: String) throws -> Bool {
        try run(
            "DELETE FROM start_tokens WHERE app_id = ? AND device_id = ? AND activity_type = ?",
            [appID, deviceID, activityType]) > 0
    }

    // MARK: - Audiences

    /// The SQL selecting the device ids of `audience` (one parameter: the JSON list).
    private static func audienceSQL(_ audience: Audience) -> String {
        switch audience {
        case .userIDs:
            "SELECT device_id FROM devices WHERE app_id = ?1 AND user_id IN (SELECT value FROM json_each(?2))"
        case .deviceIDs:
            "SELECT device_id FROM devices WHERE app_id = ?1 AND device_id IN (SELECT value FROM json_each(?2))"
        case .tags:
            "SELECT device_id FROM device_tags WHERE app_id = ?1 AND tag IN (SELECT value FROM json_each(?2))"
        }
    }

    /// How many registered devices `audience` names.
    public func audienceSize(appID: String, audience: Audience) throws -> Int {
        let rows = try query(
            "SELECT count(DISTINCT device_id) AS n FROM (\(Self.audienceSQL(audience)))",
            [appID, Self.jsonArray(audience.values)])
        return Int(try rows.first?.int64("n") ?? 0)
    }

    /// The push-to-start tokens for `activityType` of every device in `audience`.
    public func startTargets(appID: String, audience: Audience, activityType: String) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, token, environment FROM start_tokens
            WHERE app_id = ?1 AND activity_type = ?3 AND device_id IN (\(Self.audienceSQL(audience)))
            ORDER BY device_id
            """, [appID, Self.jsonArray(audience.values), activityType]
        ).map(Self.target)
    }

    /// The device tokens of every reachable device in `audience`.
    public func alertTargets(appID: String, audience: Audience) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, apns_token AS token, environment FROM devices
            WHERE app_id = ?1 AND apns_token IS NOT NULL AND unreachable_at IS NULL
                AND device_id IN (\(Self.audienceSQL(audience)))
            ORDER BY device_id
            """, [appID, Self.jsonArray(audience.values)]
        ).map(Self.target)
    }

    static func target(_ row: SQLiteRow) throws -> PushTarget {
        PushTarget(
            deviceID: try row.string("device_id"), token: try row.string("token"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self))
    }
}
