public import Foundation

/// What an FCM data message for an activity on Android says: the input to
/// ``build(now:lastTimestamp:)``, which checks it and writes the message's `data`
/// (every value a string, as FCM requires) and its Android options.
///
/// Android has no Live Activity token: the app posts and updates its own ongoing
/// notification (a Live Update on Android 16) from these messages. The event, the
/// activity's id and type, the content state as JSON text, the attributes on a start,
/// the timestamp, and the stale and dismissal dates when given.
public struct AndroidDataPush: Sendable, Hashable {
    /// The most bytes FCM takes in a message's `data` (keys and values).
    public static let dataLimit = 4096

    /// Start, update or end.
    public var event: LiveActivityEvent
    /// The activity's id.
    public var activityID: String
    /// Its type (the name of the app's attributes type).
    public var activityType: String
    /// The full content state; optional on an end.
    public var contentState: JSONValue?
    /// The activity's attributes; start only.
    public var attributes: JSONValue?
    /// When the content is out of date.
    public var staleDate: Date?
    /// When an ended activity leaves the screen; end only.
    public var dismissalDate: Date?
    /// Whether the send carries an alert (an alerted update goes at high priority).
    public var alerted: Bool
    /// The send's id, for a type with receipts: carried as `islet_send_id`, for the
    /// device to name in its receipt.
    public var receiptSendID: String?

    /// Creates a push.
    public init(
        event: LiveActivityEvent, activityID: String, activityType: String, contentState: JSONValue? = nil,
        attributes: JSONValue? = nil, staleDate: Date? = nil, dismissalDate: Date? = nil, alerted: Bool = false
    ) {
        self.event = event
        self.activityID = activityID
        self.activityType = activityType
        self.contentState = contentState
        self.attributes = attributes
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.alerted = alerted
    }

    /// The message's `data`, its priority and collapse key, as built.
    public struct Built: Sendable, Hashable {
        /// The data, every value a string.
        public var data: [String: String]
        /// `high` for starts, ends and alerted updates, `normal` otherwise.
        public var priority: String
        /// One per activity: a device that was offline gets only the newest.
        public var collapseKey: String
        /// The timestamp used (Unix seconds).
        public var timestamp: Int64
        /// The data's size as FCM counts it: the bytes of its keys and values.
        public var size: Int

        /// The message's `android` options with `ttl` seconds to live.
        public func androidJSON(ttl: Int64) -> JSONValue {
            ["priority": .string(priority), "ttl": .string("\(ttl)s"), "collapse_key": .string(collapseKey)]
        }
    }

    /// Checks the push and writes its data. The timestamp is the larger of `now` in
    /// whole seconds and `lastTimestamp + 1`, so that a device applying messages in
    /// order never drops this one as older.
    public func build(now: Date, lastTimestamp: Int64?) throws(PayloadError) -> Built {
        var data: [String: String] = [
            "islet_event": event.rawValue, "islet_activity_id": activityID, "islet_activity_type": activityType,
        ]
        if let contentState {
            try PayloadRules.checkNonEmptyObject(contentState, field: "content_state", what: "the content state")
            try PayloadRules.checkFinite(contentState, path: "content_state")
            data["content_state"] = contentState.jsonText
        } else if event != .end {
            throw PayloadError(.missing, field: "content_state", message: "\(event == .start ? "a start" : "an update") must carry the full content state")
        }
        if let attributes {
            guard event == .start else {
                throw PayloadError(.notAllowed, field: "attributes", message: "only a start carries attributes")
            }
            try PayloadRules.checkNonEmptyObject(attributes, field: "attributes", what: "the attributes")
            data["attributes"] = attributes.jsonText
        }
        if let staleDate {
            guard staleDate >= now else {
                throw PayloadError(.inThePast, field: "stale_date", message: "lies before now")
            }
            data["stale_date"] = String(Int64(staleDate.timeIntervalSince1970.rounded(.down)))
        }
        if let dismissalDate {
            guard event == .end else {
                throw PayloadError(.notAllowed, field: "dismissal_date", message: "only an end carries a dismissal date")
            }
            data["dismissal_date"] = String(Int64(dismissalDate.timeIntervalSince1970.rounded(.down)))
        }
        if let receiptSendID { data["islet_send_id"] = receiptSendID }
        let seconds = Int64(now.timeIntervalSince1970.rounded(.down))
        let timestamp = max(seconds, (lastTimestamp ?? 0) + 1)
        data["timestamp"] = String(timestamp)
        let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= PayloadLimit.fcmDataMessage.bytes else {
            let largest = data.max { $0.value.utf8.count < $1.value.utf8.count }!
            throw PayloadError(
                .tooLarge, field: largest.key,
                message: PayloadLimit.fcmDataMessage.refusal(size: size)
                    + "; \(largest.key) alone is \(PayloadLimit.grouped(largest.value.utf8.count)) bytes")
        }
        let urgent = event != .update || alerted
        return Built(
            data: data, priority: urgent ? "high" : "normal", collapseKey: "islet-\(activityID)", timestamp: timestamp,
            size: size)
    }
}
