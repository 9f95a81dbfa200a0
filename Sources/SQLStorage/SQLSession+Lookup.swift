public import Storage

// A lookup reads each index once: exact ids, and token prefixes as a range over the
// token index ([prefix, the prefix with its last digit raised)), which hex digits
// sort alike in every collation.
extension SQLSession {
    public func lookup(appID: String, text: String, limit: Int) throws -> LookupResult {
        var found = LookupResult()
        let limit = max(limit, 0)
        guard !text.isEmpty, limit > 0 else { return found }
        found.activities = try query(
            """
            SELECT activity_id, activity_type, status FROM activities
            WHERE app_id = \(appID) AND activity_id = \(text) LIMIT \(limit)
            """
        ).map {
            LookupActivity(
                activityID: try $0.string("activity_id"), activityType: try $0.string("activity_type"),
                status: try $0.string("status"))
        }
        func devices(_ condition: SQL, matched: String) throws -> [LookupDevice] {
            try query(
                "SELECT device_id, platform, user_id FROM devices WHERE app_id = \(appID) AND \(sql: condition) ORDER BY device_id LIMIT \(limit)"
            ).map {
                LookupDevice(
                    deviceID: try $0.string("device_id"), platform: try $0.string("platform"),
                    userID: $0.optionalString("user_id"), matched: matched)
            }
        }
        var seen = Set<String>()
        func add(_ more: [LookupDevice]) {
            for device in more where found.devices.count < limit && seen.insert(device.deviceID).inserted {
                found.devices.append(device)
            }
        }
        add(try devices("device_id = \(text)", matched: "device_id"))
        add(try devices("user_id = \(text)", matched: "user_id"))
        if let upper = Self.hexSuccessor(text) {
            add(try devices("apns_token >= \(text) AND apns_token < \(upper)", matched: "apns_token"))
            add(try devices("fcm_token >= \(text) AND fcm_token < \(upper)", matched: "fcm_token"))
            add(try devices(
                """
                device_id IN (SELECT device_id FROM start_tokens WHERE app_id = \(appID)
                    AND token >= \(text) AND token < \(upper))
                """, matched: "push_to_start_token"))
            found.copies = try query(
                """
                SELECT activity_id, device_id FROM activity_instances
                WHERE app_id = \(appID) AND update_token >= \(text) AND update_token < \(upper)
                ORDER BY activity_id, device_id LIMIT \(limit)
                """
            ).map { LookupCopy(activityID: try $0.string("activity_id"), deviceID: try $0.string("device_id")) }
        }
        // The column is what the push is found by (`matched`).
        for column in ["apns_id", "service_message_id"] {
            for row in try query(
                """
                SELECT activity_id, device_id, apns_id, event, status, send_id FROM pushes
                WHERE app_id = \(appID) AND \(raw: column) = \(text) ORDER BY id LIMIT \(limit)
                """)
            where found.pushes.count < limit {
                found.pushes.append(LookupPush(
                    activityID: row.optionalString("activity_id"), deviceID: try row.string("device_id"),
                    apnsID: try row.string("apns_id"), event: try row.string("event"), status: try row.string("status"),
                    sendID: try row.int64("send_id"), matched: column))
            }
        }
        return found
    }

    /// The least string above every string that begins with `prefix`, when `prefix`
    /// is 1 to 512 lowercase hex digits: its last digit raised (`9` to `a`, `f` to
    /// `g`); nil otherwise.
    static func hexSuccessor(_ prefix: String) -> String? {
        guard (1...512).contains(prefix.utf8.count),
            prefix.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) })
        else { return nil }
        var bytes = Array(prefix.utf8)
        let last = bytes[bytes.count - 1]
        bytes[bytes.count - 1] = last == 57 ? 97 : last + 1
        return String(decoding: bytes, as: UTF8.self)
    }
}
