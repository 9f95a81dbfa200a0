public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    /// The device `deviceID` of `appID`.
    public func device(appID: String, deviceID: String) throws -> DeviceRecord? {
        guard let row = try query(
            "SELECT \(sql: Self.deviceColumns) FROM devices WHERE app_id = \(appID) AND device_id = \(deviceID)").first
        else { return nil }
        var device = try Self.deviceRecord(row)
        device.tags = try query(
            "SELECT tag FROM device_tags WHERE app_id = \(appID) AND device_id = \(deviceID) ORDER BY tag"
        ).map { try $0.string("tag") }
        return device
    }

    /// The app's devices after `afterDeviceID`, by id (their tags are not read).
    public func devices(appID: String, afterDeviceID: String?, limit: Int) throws -> [DeviceRecord] {
        try query(
            """
            SELECT \(sql: Self.deviceColumns) FROM devices
            WHERE app_id = \(appID) AND device_id > \(afterDeviceID ?? "")
            ORDER BY device_id LIMIT \(max(limit, 0))
            """
        ).map(Self.deviceRecord)
    }

    /// The columns ``deviceRecord(_:)`` reads.
    static let deviceColumns: SQL = """
        device_id, platform, environment, apns_token, unreachable_at, user_id, created_at, updated_at,
            secret_hash, frequent_updates, os_version, fcm_token
        """

    /// A device's row, without its tags.
    static func deviceRecord(_ row: SQLRow) throws -> DeviceRecord {
        var device = DeviceRecord(
            deviceID: try row.string("device_id"), platform: try row.string("platform"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            apnsToken: row.optionalString("apns_token"), unreachableAt: row.optionalDate("unreachable_at"),
            userID: row.optionalString("user_id"), tags: [], createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
        device.hasSecret = row["secret_hash"].blob != nil
        device.frequentUpdates = row.optionalBool("frequent_updates")
        device.osVersion = row.optionalString("os_version")
        device.fcmToken = row.optionalString("fcm_token")
        return device
    }

    /// The push rows `filter` keeps: the sends of the app in the time range (by
    /// `sends_by_time`), their rows by `pushes_by_send`, newest row first.
    public func pushRows(appID: String, filter: PushRowFilter, beforeID: Int64?, limit: Int) throws -> [DeviceHistory.Push] {
        var conditions: SQL = "s.app_id = \(appID) AND s.created_at >= \(filter.from.unixMilliseconds)"
        conditions = "\(sql: conditions) AND s.created_at < \(filter.to.unixMilliseconds) AND p.id < \(beforeID ?? Int64.max)"
        if let activityID = filter.activityID { conditions = "\(sql: conditions) AND s.activity_id = \(activityID)" }
        if let reason = filter.reason { conditions = "\(sql: conditions) AND coalesce(p.reason, 'unknown') = \(reason)" }
        if filter.failedOnly { conditions = "\(sql: conditions) AND p.status IN ('failed', 'dropped')" }
        return try query(
            """
            SELECT p.activity_id, \(sql: Self.historyColumns(prefix: "p.")) FROM pushes p JOIN sends s ON s.id = p.send_id
            WHERE \(sql: conditions) ORDER BY p.id DESC LIMIT \(max(limit, 0))
            """
        ).map { row in DeviceHistory.Push(activityID: row.optionalString("activity_id"), item: try Self.historyItem(row)) }
    }

    /// The device's page: by the indexes on its copies and its pushes (migration 28).
    public func deviceHistory(appID: String, deviceID: String, limit: Int) throws -> DeviceHistory? {
        guard let device = try device(appID: appID, deviceID: deviceID) else { return nil }
        let tokens = try query(
            """
            SELECT activity_type, token, environment, registered_at FROM start_tokens
            WHERE app_id = \(appID) AND device_id = \(deviceID) ORDER BY activity_type
            """
        ).map { row in
            DeviceHistory.StartToken(
                activityType: try row.string("activity_type"), token: try row.string("token"),
                environment: try row.enumValue("environment", as: APNsEnvironment.self),
                registeredAt: try row.date("registered_at"))
        }
        let copies = try query(
            """
            SELECT activity_id, (SELECT a.activity_type FROM activities a WHERE a.app_id = activity_instances.app_id
                    AND a.activity_id = activity_instances.activity_id) AS activity_type, \(sql: Self.copyColumns)
            FROM activity_instances WHERE app_id = \(appID) AND device_id = \(deviceID)
            ORDER BY created_at DESC, activity_id LIMIT \(max(limit, 0))
            """
        ).map { row in
            DeviceHistory.Copy(
                activityID: try row.string("activity_id"), activityType: row.optionalString("activity_type") ?? "",
                record: try Self.copyRecord(row))
        }
        let pushes = try query(
            """
            SELECT activity_id, \(sql: Self.historyColumns) FROM pushes
            WHERE app_id = \(appID) AND device_id = \(deviceID) AND token_kind != 'channel'
            ORDER BY id DESC LIMIT \(max(limit, 0))
            """
        ).map { row in DeviceHistory.Push(activityID: row.optionalString("activity_id"), item: try Self.historyItem(row)) }
        return DeviceHistory(device: device, startTokens: tokens, copies: copies, pushes: pushes)
    }

    /// Adds a device with its first registration and the hash of its secret, unless
    /// it exists: an insert that does nothing then. Answers whether it was added.
    public func insertDevice(
        appID: String, deviceID: String, _ registration: DeviceRegistration, secretHash: Data?, now: Date
    ) throws -> Bool {
        let millis = now.unixMilliseconds
        let token = registration.apnsToken
        let created = try run(
            """
            INSERT INTO devices (app_id, device_id, platform, environment, apns_token, apns_token_registered_at,
                user_id, created_at, updated_at, secret_hash, frequent_updates, os_version, fcm_token, fcm_token_registered_at)
            VALUES (\(appID), \(deviceID), \(registration.platform), \(registration.environment.rawValue), \(token),
                \(token == nil ? nil : millis), \(registration.userID ?? nil), \(millis), \(millis), \(secretHash),
                \(registration.frequentUpdates ?? nil), \(registration.osVersion ?? nil), \(registration.fcmToken),
                \(registration.fcmToken == nil ? nil : millis))
            ON CONFLICT (app_id, device_id) DO NOTHING
            """) > 0
        if created, let tags = registration.tags { try replaceTags(appID: appID, deviceID: deviceID, tags) }
        return created
    }

    /// Changes a registered device by `registration`, never its secret: an update of
    /// only what the registration gives. A registration without a token keeps the
    /// stored one; one with a token records when it was registered and makes the
    /// device reachable again.
    public func updateDevice(appID: String, deviceID: String, _ registration: DeviceRegistration, now: Date) throws {
        let millis = now.unixMilliseconds
        var changes: SQL = """
            platform = \(registration.platform), environment = \(registration.environment.rawValue), \
            updated_at = \(millis)
            """
        if let userID = registration.userID {
            changes.append(", user_id = \(userID)")
        }
        if let frequent = registration.frequentUpdates {
            changes.append(", frequent_updates = \(frequent)")
        }
        if let osVersion = registration.osVersion {
            changes.append(", os_version = \(osVersion)")
        }
        if let token = registration.apnsToken {
            changes.append(", apns_token = \(token), apns_token_registered_at = \(millis), unreachable_at = NULL")
        }
        if let token = registration.fcmToken {
            changes.append(", fcm_token = \(token), fcm_token_registered_at = \(millis), unreachable_at = NULL")
        }
        try run("UPDATE devices SET \(sql: changes) WHERE app_id = \(appID) AND device_id = \(deviceID)")
        if let tags = registration.tags { try replaceTags(appID: appID, deviceID: deviceID, tags) }
    }

    private func replaceTags(appID: String, deviceID: String, _ tags: [String]) throws {
        try run("DELETE FROM device_tags WHERE app_id = \(appID) AND device_id = \(deviceID)")
        try runEach(Set(tags)) { tag in
            "INSERT INTO device_tags (app_id, tag, device_id) VALUES (\(appID), \(tag), \(deviceID))"
        }
    }

    /// What a device route checks its caller against, read at once (one round trip
    /// on PostgreSQL): the app's `device_secrets` setting, and the device's
    /// environment and secret hash, its row locked until the transaction ends
    /// (`exclusive` for a change of the device or its secret, else shared).
    public func deviceAccess(appID: String, deviceID: String, exclusive: Bool) throws -> DeviceAccess {
        let results = try executor.queryAll([
            Self.devicePolicySQL(appID: appID), deviceAccessSQL(appID: appID, deviceID: deviceID, exclusive: exclusive),
        ])
        return Self.deviceAccess(policy: results[0], device: results[1])
    }

    /// Replaces the hash of a device's secret, presented by then at `presentedAt`.
    /// Answers whether the device exists.
    public func replaceDeviceSecret(appID: String, deviceID: String, secretHash: Data, presentedAt: Date?) throws -> Bool {
        try run(
            """
            UPDATE devices SET secret_hash = \(secretHash), secret_presented_at = \(presentedAt?.unixMilliseconds)
            WHERE app_id = \(appID) AND device_id = \(deviceID)
            """) > 0
    }

    /// Records that a request carried the device's secret, at `at`, unless one did
    /// before.
    public func recordDeviceSecretPresented(appID: String, deviceID: String, at: Date) throws {
        try run(
            """
            UPDATE devices SET secret_presented_at = \(at.unixMilliseconds)
            WHERE app_id = \(appID) AND device_id = \(deviceID) AND secret_presented_at IS NULL
            """)
    }

    static func devicePolicySQL(appID: String) -> SQL {
        "SELECT device_secrets, local_join FROM apps WHERE id = \(appID)"
    }

    func deviceAccessSQL(appID: String, deviceID: String, exclusive: Bool) -> SQL {
        let lock: SQL = dialect == .postgresql ? (exclusive ? " FOR UPDATE" : " FOR SHARE") : ""
        return """
            SELECT environment, secret_hash, platform, secret_presented_at, user_id FROM devices
            WHERE app_id = \(appID) AND device_id = \(deviceID)\
            \(sql: lock)
            """
    }

    static func deviceAccess(policy: [SQLRow], device: [SQLRow]) -> DeviceAccess {
        var access = DeviceAccess(
            policy: policy.first?.optionalString("device_secrets").flatMap(DeviceSecretPolicy.init(rawValue:)) ?? .off,
            environment: device.first?.optionalString("environment").flatMap(APNsEnvironment.init(rawValue:)),
            secretHash: device.first?["secret_hash"].blob)
        access.platform = device.first?.optionalString("platform")
        access.secretPresented = device.first?.optionalInt64("secret_presented_at") != nil
        access.userID = device.first?.optionalString("user_id")
        access.localJoin = policy.first?.optionalString("local_join").flatMap(LocalJoinRule.init(rawValue:)) ?? .anyone
        return access
    }

    /// The kinds other than `except` under which `token` is registered anywhere in
    /// the app, so that a token of one kind is never stored as another. One query.
    public func registeredKinds(appID: String, token: String, except: PushTokenKind?) throws -> Set<PushTokenKind> {
        Self.kinds(try query(Self.registeredKindsSQL(appID: appID, token: token, except: except)))
    }

    static func registeredKindsSQL(appID: String, token: String, except: PushTokenKind?) -> SQL {
        var parts: [SQL] = []
        if except != .device {
            parts.append("SELECT 'device' AS kind FROM devices WHERE app_id = \(appID) AND apns_token = \(token)")
        }
        if except != .pushToStart {
            parts.append("SELECT 'push_to_start' FROM start_tokens WHERE app_id = \(appID) AND token = \(token)")
        }
        if except != .liveActivityUpdate {
            parts.append(
                "SELECT 'live_activity_update' FROM activity_instances WHERE app_id = \(appID) AND update_token = \(token)")
        }
        return SQL.joined(parts.map { "SELECT * FROM (\(sql: $0) LIMIT 1) AS found" }, separator: " UNION ALL ")
    }

    static func kinds(_ rows: [SQLRow]) -> Set<PushTokenKind> {
        Set(rows.compactMap { $0[0].text.flatMap(PushTokenKind.init(rawValue:)) })
    }

    /// What a device's update token for an activity is checked against, read at
    /// once (one round trip on PostgreSQL): the app's setting, the device (locked,
    /// shared) with its secret, the kinds the token is registered under other than
    /// an update token, and the activity, locked.
    public func updateTokenChecks(appID: String, deviceID: String, activityID: String, token: String) throws -> UpdateTokenChecks {
        let results = try executor.queryAll([
            Self.devicePolicySQL(appID: appID),
            deviceAccessSQL(appID: appID, deviceID: deviceID, exclusive: false),
            Self.registeredKindsSQL(appID: appID, token: token, except: .liveActivityUpdate),
            lockedActivitySQL(appID: appID, activityID: activityID),
        ])
        return UpdateTokenChecks(
            device: Self.deviceAccess(policy: results[0], device: results[1]),
            otherKinds: Self.kinds(results[2]), activity: try results[3].first.map(Self.activityRecord))
    }

    /// The environment of a registered device, or `nil` when there is no such device.
    public func deviceEnvironment(appID: String, deviceID: String) throws -> APNsEnvironment? {
        try query(Self.deviceEnvironmentSQL(appID: appID, deviceID: deviceID))
            .first?.optionalString("environment").flatMap(APNsEnvironment.init(rawValue:))
    }

    static func deviceEnvironmentSQL(appID: String, deviceID: String) -> SQL {
        "SELECT environment FROM devices WHERE app_id = \(appID) AND device_id = \(deviceID)"
    }

    /// Stores the push-to-start token of one device and activity type. Answers
    /// whether none was stored before: an insert that does nothing when one is,
    /// then (for one that is) an update that replaces it.
    public func upsertStartToken(
        appID: String, deviceID: String, activityType: String, token: String, environment: APNsEnvironment, now: Date
    ) throws -> Bool {
        let millis = now.unixMilliseconds
        let created = try run(
            """
            INSERT INTO start_tokens (app_id, device_id, activity_type, token, environment, registered_at)
            VALUES (\(appID), \(deviceID), \(activityType), \(token), \(environment.rawValue), \(millis))
            ON CONFLICT (app_id, device_id, activity_type) DO NOTHING
            """) > 0
        if !created {
            try run(
                """
                UPDATE start_tokens SET token = \(token), environment = \(environment.rawValue), registered_at = \(millis)
                WHERE app_id = \(appID) AND device_id = \(deviceID) AND activity_type = \(activityType)
                """)
        }
        return created
    }

    /// Removes a device's push-to-start token for a type. Answers whether one was
    /// stored.
    public func deleteStartToken(appID: String, deviceID: String, activityType: String) throws -> Bool {
        try run(
            """
            DELETE FROM start_tokens
            WHERE app_id = \(appID) AND device_id = \(deviceID) AND activity_type = \(activityType)
            """) > 0
    }

    // MARK: - Audiences

    /// The statement selecting the device ids of `audience`.
    private static func audienceSQL(appID: String, _ audience: Audience) -> SQL {
        switch audience {
        case .userIDs(let ids):
            "SELECT device_id FROM devices WHERE app_id = \(appID) AND user_id \(in: ids)"
        case .deviceIDs(let ids):
            "SELECT device_id FROM devices WHERE app_id = \(appID) AND device_id \(in: ids)"
        case .tags(let tags):
            "SELECT device_id FROM device_tags WHERE app_id = \(appID) AND tag \(in: tags)"
        }
    }

    /// How many registered devices `audience` names.
    public func audienceSize(appID: String, audience: Audience) throws -> Int {
        let rows = try query(
            "SELECT count(DISTINCT device_id) AS n FROM (\(sql: Self.audienceSQL(appID: appID, audience))) AS audience")
        return Int(try rows.first?.int64("n") ?? 0)
    }

    /// The push-to-start tokens for `activityType` of every device in `audience`,
    /// each saying whether its device can take a broadcast channel.
    public func startTargets(appID: String, audience: Audience, activityType: String) throws -> [PushTarget] {
        try query(
            """
            SELECT s.device_id, s.token, s.environment, d.os_version FROM start_tokens s
            JOIN devices d ON d.app_id = s.app_id AND d.device_id = s.device_id
            WHERE s.app_id = \(appID) AND s.activity_type = \(activityType)
                AND s.device_id IN (\(sql: Self.audienceSQL(appID: appID, audience)))
            ORDER BY s.device_id
            """
        ).map { row in
            var target = try Self.target(row)
            target.takesChannels = BroadcastChoice.takesChannels(osVersion: row.optionalString("os_version"))
            return target
        }
    }

    /// The device tokens of every reachable device in `audience`.
    public func alertTargets(appID: String, audience: Audience) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, apns_token AS token, environment FROM devices
            WHERE app_id = \(appID) AND apns_token IS NOT NULL AND unreachable_at IS NULL
                AND device_id IN (\(sql: Self.audienceSQL(appID: appID, audience)))
            ORDER BY device_id
            """
        ).map(Self.target)
    }

    /// The FCM tokens of every reachable Android device in `audience`.
    public func androidStartTargets(appID: String, audience: Audience) throws -> [PushTarget] {
        try query(
            """
            SELECT device_id, fcm_token AS token, environment FROM devices
            WHERE app_id = \(appID) AND platform = 'android' AND fcm_token IS NOT NULL AND unreachable_at IS NULL
                AND device_id IN (\(sql: Self.audienceSQL(appID: appID, audience)))
            ORDER BY device_id
            """
        ).map(Self.target)
    }

    static func target(_ row: SQLRow) throws -> PushTarget {
        PushTarget(
            deviceID: try row.string("device_id"), token: try row.string("token"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self))
    }
}
