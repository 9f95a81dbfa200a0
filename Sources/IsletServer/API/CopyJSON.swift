import IsletCore
import Storage

/// One device's copy of an activity, as the activity and device routes show it.
enum CopyJSON {
    static func json(_ instance: CopyRecord) -> [String: JSONValue] {
        [
            "device_id": .string(instance.deviceID), "status": .string(instance.status.rawValue),
            "has_update_token": .bool(instance.updateToken != nil),
            // Redacted: enough to tell tokens apart, never enough to send with.
            "update_token_prefix": APIJSON.optional(instance.updateToken.map { String($0.prefix(8)) + "…" }), 
            // FCM has one environment: an android copy shows none.
            "environment": instance.platform == "android" ? .null : .string(instance.environment.rawValue),
            "token_registered_at": APIJSON.date(instance.tokenRegisteredAt), "created_at": APIJSON.date(instance.createdAt),
            "ended_at": APIJSON.date(instance.endedAt), "end_cause": APIJSON.optional(instance.endCause?.rawValue),
            "on_channel": .bool(instance.subscribed), "platform": .string(instance.platform),
            "joined": .bool(instance.joined),
            // The newest send the device said it showed (receipts).
            "last_received_send_id": APIJSON.optional(instance.lastReceivedSendID.map(String.init)),
            "last_received_at": APIJSON.date(instance.lastReceivedAt),
        ]
    }
}
