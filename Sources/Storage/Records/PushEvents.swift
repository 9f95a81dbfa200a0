public import Foundation
public import IsletCore

// What the push events say about a push: ids, kinds, statuses and reasons, never
// the token.
extension NewEvent {
    /// `push.dropped` for a push that will never be sent.
    public static func pushDropped(_ push: DroppedPush, at date: Date) -> NewEvent {
        NewEvent(
            appID: push.appID, type: .pushDropped, activityID: push.activityID, occurredAt: date,
            data: pushData(
                activityID: push.activityID, deviceID: push.deviceID, event: push.event, tokenKind: push.tokenKind,
                apnsID: push.apnsID, extra: ["reason": .string(push.reason)]))
    }

    /// `push.sent`, `push.failed` or `push.dropped` for a claimed push's outcome
    /// (a push queued again for a retry is no event).
    public static func pushSettled(_ push: ClaimedPush, status: PushStatus, attempts: Int, apnsStatus: Int?, reason: String?, at date: Date) -> NewEvent? {
        let type: EventType
        switch status {
        case .sent: type = .pushSent
        case .failed: type = .pushFailed
        case .dropped: type = .pushDropped
        case .queued: return nil
        }
        // Written straight to text, members in sorted order: a fan-out makes one
        // of these per push.
        var object = JSONObjectWriter()
        if let activityID = push.activityID { object.string("activity_id", activityID) }
        object.string("apns_id", push.apnsID)
        if let apnsStatus { object.integer("apns_status", Int64(apnsStatus)) }
        object.integer("attempts", Int64(push.attempts + attempts))
        // A broadcast's row keeps its channel where a push keeps its device.
        if push.tokenKind == .channel {
            object.string("channel_id", push.deviceID)
        } else {
            object.string("device_id", push.deviceID)
        }
        object.string("environment", push.environment.rawValue)
        object.string("event", push.content.event.rawValue)
        if let reason { object.string("reason", reason) }
        object.string("token_kind", push.tokenKind.rawValue)
        return NewEvent(appID: push.appID, type: type, activityID: push.activityID, occurredAt: date, dataText: object.text)
    }

    private static func pushData(
        activityID: String?, deviceID: String, event: PushEvent, tokenKind: PushTokenKind, apnsID: String,
        extra: [String: JSONValue]
    ) -> JSONValue {
        var members: [String: JSONValue] = [
            tokenKind == .channel ? "channel_id" : "device_id": .string(deviceID), "event": .string(event.rawValue),
            "token_kind": .string(tokenKind.rawValue),
            "apns_id": .string(apnsID),
        ]
        if let activityID { members["activity_id"] = .string(activityID) }
        for (key, value) in extra { members[key] = value }
        return .object(members)
    }
}
