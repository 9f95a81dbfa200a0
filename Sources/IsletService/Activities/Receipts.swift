import Foundation
import IsletCore
import Storage

/// Receipts: for a type that asks for them, each start, update and end carries the
/// id of its send in the content state (`"islet": {"send_id": "<id>"}`; an Android
/// data message, `islet_send_id`), and the device names it back when it showed it.
enum Receipts {
    /// The content state's key Islet writes; a content state of the app's own may
    /// not use it.
    static let key = "islet"

    /// The name of send `sendID` as the device sees it.
    static func name(_ sendID: Int64) -> String { String(sendID) }

    /// `state` carrying send `sendID`'s id under `islet` (an object; anything else
    /// is left as it is, for the payload rules to refuse).
    static func stamped(_ state: JSONValue?, sendID: Int64) -> JSONValue? {
        guard case .object(var fields)? = state else { return state }
        fields[key] = .object(["send_id": .string(name(sendID))])
        return .object(fields)
    }

    /// Refuses a content state of the app's own that uses `islet`, for a type with
    /// receipts on: the key is Islet's.
    static func checkOwnState(_ state: JSONValue?, receipts: Bool) throws(ServiceError) {
        guard receipts, state?.objectValue?[key] != nil else { return }
        throw .invalid(
            "The field content_state.\(key) is invalid: the key \(key) is Islet's own (it carries the send's id, for a receipt).",
            field: "content_state.\(key)", "is Islet's own key (it carries the send's id, for a receipt)")
    }
}

extension Receipts {
    /// The largest send id: a payload checked with it stamped is never smaller than
    /// one stamped with the id its send gets, so the size rules are applied before
    /// anything is written.
    static let widest = Int64.max

    /// `push` with its content state stamped with `sendID`, when `receipts`.
    static func stamping(_ push: LiveActivityPush, receipts: Bool, sendID: Int64) -> LiveActivityPush {
        guard receipts else { return push }
        var stamped = push
        stamped.contentState = Self.stamped(push.contentState, sendID: sendID)
        return stamped
    }

    /// `push` carrying `sendID` as `islet_send_id`, when `receipts`.
    static func stamping(_ push: AndroidDataPush, receipts: Bool, sendID: Int64) -> AndroidDataPush {
        guard receipts else { return push }
        var stamped = push
        stamped.receiptSendID = Self.name(sendID)
        return stamped
    }

    /// Inserts a send of `content`; with `restamp`, its payload is built again to
    /// name the send's own id.
    static func insertSend(
        _ content: SendContent, restamp: ((Int64) throws -> Data)?, appID: String, activityID: String,
        session: any PushQueue, now: Date
    ) throws -> Int64 {
        let sendID = try session.insertSend(appID: appID, activityID: activityID, content: content, now: now)
        if let restamp { try session.replaceSendPayload(sendID: sendID, payload: try restamp(sendID)) }
        return sendID
    }
}
