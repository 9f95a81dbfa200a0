public import Foundation
public import IsletCore

/// Everything the simulator knows about one request: what arrived, what APNs
/// answered, and what the simulated device did with it. Served as JSON (snake_case
/// keys, ISO 8601 dates) by the inspection API.
public struct PushRecord: Sendable, Hashable, Codable {
    /// The answer the simulator sent.
    public struct Answer: Sendable, Hashable, Codable {
        /// The HTTP status.
        public var status: Int
        /// The `reason` of a refusal; `nil` for 200.
        public var reason: APNsReason?
        /// The `apns-id` answered: the request's own, or one minted for it.
        public var apnsID: String
        /// The `apns-unique-id` answered (sandbox only).
        public var apnsUniqueID: String?
        /// The `timestamp` of a 410, in milliseconds since 1970.
        public var timestamp: Int64?
        /// Why the request was refused, in plain English; `nil` for 200.
        public var note: String?

        enum CodingKeys: String, CodingKey {
            case status, reason, timestamp, note
            case apnsID = "apns_id"
            case apnsUniqueID = "apns_unique_id"
        }
    }

    /// The record's number: 1 for the first request after start or reset.
    public var sequence: Int
    /// When the request arrived, by the simulator's clock.
    public var receivedAt: Date
    /// The connection that carried it.
    public var connection: ConnectionID
    /// The `:method`.
    public var method: String
    /// The `:path`.
    public var path: String
    /// The device token from the path, as sent; `nil` when the path holds none.
    public var token: String?
    /// What the simulator knows the token to be, after this push.
    public var tokenKind: PushTokenKind?
    /// The `apns-push-type` header as sent.
    public var pushType: String?
    /// `aps.event` of a Live Activity push.
    public var event: String?
    /// The request headers, with the provider token shortened. A repeated header's
    /// values are joined with ", ".
    public var headers: [String: String]
    /// The body, when it is JSON.
    public var payload: JSONValue?
    /// The body's size in bytes.
    public var payloadBytes: Int
    /// What the simulator answered.
    public var answer: Answer
    /// Whether the answer is an injected fault rather than a verdict on the request.
    public var injectedFault: Bool
    /// What the simulated device did with the push.
    public var deviceOutcome: DeviceOutcome
    /// Why the device did what it did, in plain English; always set for a drop.
    public var deviceNote: String?
    /// The Live Activity the push started or reached.
    public var activityID: String?
    /// For a broadcast, what each activity subscribed to the channel did with it.
    public var deliveries: [BroadcastDelivery]?
    /// What the request carries that APNs accepts but a stricter server might
    /// refuse, in plain English (an `iat` written as a string, no `apns-push-type`,
    /// …); empty when there is nothing to say. Never a reason for the answer.
    public var warnings: [String]

    /// One line for a console, as
    /// `#12 200 liveactivity/update 5e0b1c…(160) → dropped: timestamp not newer than the last update`,
    /// with the warnings, if any, at the end. The device token is shortened.
    public var summaryLine: String {
        var line = "#\(sequence) \(answer.status)"
        if let reason = answer.reason { line += " \(reason)" }
        if injectedFault { line += " (injected)" }
        line += " " + (pushType ?? "-")
        if let event { line += "/\(event)" }
        line += " " + (token.map(Self.redacted) ?? "-")
        line += " → \(deviceOutcome.rawValue)"
        if let activityID { line += " [activity \(activityID.prefix(8))]" }
        if let note = deviceNote ?? answer.note { line += ": \(note)" }
        if !warnings.isEmpty { line += " [warning: " + warnings.joined(separator: "; warning: ") + "]" }
        return line
    }

    /// `token` as ``Redaction/redact(_:)`` shortens it, counting bytes when every
    /// byte is printable ASCII and so one character.
    private static func redacted(_ token: String) -> String {
        let utf8 = token.utf8
        let printable = utf8.withContiguousStorageIfAvailable { bytes in bytes.allSatisfy { $0 &- 0x20 < 0x5F } }
        guard printable == true else { return Redaction.redact(token) }
        let visible = Redaction.visiblePrefix
        let shown = utf8.count >= visible * 2 ? String(decoding: utf8.prefix(visible), as: UTF8.self) : ""
        return shown + "…(" + String(utf8.count) + ")"
    }

    enum CodingKeys: String, CodingKey {
        case sequence, connection, method, path, token, event, headers, payload, answer
        case receivedAt = "received_at"
        case tokenKind = "token_kind"
        case pushType = "push_type"
        case payloadBytes = "payload_bytes"
        case injectedFault = "injected_fault"
        case deviceOutcome = "device_outcome"
        case deviceNote = "device_note"
        case activityID = "activity_id"
        case warnings, deliveries
    }

    init(
        sequence: Int, receivedAt: Date, connection: ConnectionID, method: String, path: String,
        token: String?, tokenKind: PushTokenKind?, pushType: String?, event: String?,
        headers: [String: String], payload: JSONValue?, payloadBytes: Int, answer: Answer,
        injectedFault: Bool, deviceOutcome: DeviceOutcome, deviceNote: String?, activityID: String?,
        warnings: [String] = [], deliveries: [BroadcastDelivery]? = nil
    ) {
        self.deliveries = deliveries
        self.sequence = sequence
        self.receivedAt = receivedAt
        self.connection = connection
        self.method = method
        self.path = path
        self.token = token
        self.tokenKind = tokenKind
        self.pushType = pushType
        self.event = event
        self.headers = headers
        self.payload = payload
        self.payloadBytes = payloadBytes
        self.answer = answer
        self.injectedFault = injectedFault
        self.deviceOutcome = deviceOutcome
        self.deviceNote = deviceNote
        self.activityID = activityID
        self.warnings = warnings
    }

    /// Reads a record from its JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        sequence = try c.decode(Int.self, forKey: .sequence)
        receivedAt = try c.decodeDate(forKey: .receivedAt)
        connection = try c.decode(ConnectionID.self, forKey: .connection)
        method = try c.decode(String.self, forKey: .method)
        path = try c.decode(String.self, forKey: .path)
        token = try c.decodeIfPresent(String.self, forKey: .token)
        tokenKind = try c.decodeIfPresent(PushTokenKind.self, forKey: .tokenKind)
        pushType = try c.decodeIfPresent(String.self, forKey: .pushType)
        event = try c.decodeIfPresent(String.self, forKey: .event)
        headers = try c.decode([String: String].self, forKey: .headers)
        payload = try c.decodeIfPresent(JSONValue.self, forKey: .payload)
        payloadBytes = try c.decode(Int.self, forKey: .payloadBytes)
        answer = try c.decode(Answer.self, forKey: .answer)
        injectedFault = try c.decode(Bool.self, forKey: .injectedFault)
        deviceOutcome = try c.decode(DeviceOutcome.self, forKey: .deviceOutcome)
        deviceNote = try c.decodeIfPresent(String.self, forKey: .deviceNote)
        activityID = try c.decodeIfPresent(String.self, forKey: .activityID)
        warnings = try c.decodeIfPresent([String].self, forKey: .warnings) ?? []
        deliveries = try c.decodeIfPresent([BroadcastDelivery].self, forKey: .deliveries)
    }

    /// Writes the record as JSON; absent values are left out, and `warnings` is
    /// always there (an empty list when there is nothing to say).
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(sequence, forKey: .sequence)
        try c.encodeDate(receivedAt, forKey: .receivedAt)
        try c.encode(connection, forKey: .connection)
        try c.encode(method, forKey: .method)
        try c.encode(path, forKey: .path)
        try c.encodeIfPresent(token, forKey: .token)
        try c.encodeIfPresent(tokenKind, forKey: .tokenKind)
        try c.encodeIfPresent(pushType, forKey: .pushType)
        try c.encodeIfPresent(event, forKey: .event)
        try c.encode(headers, forKey: .headers)
        try c.encodeIfPresent(payload, forKey: .payload)
        try c.encode(payloadBytes, forKey: .payloadBytes)
        try c.encode(answer, forKey: .answer)
        try c.encode(injectedFault, forKey: .injectedFault)
        try c.encode(deviceOutcome, forKey: .deviceOutcome)
        try c.encodeIfPresent(deviceNote, forKey: .deviceNote)
        try c.encodeIfPresent(activityID, forKey: .activityID)
        try c.encode(warnings, forKey: .warnings)
        try c.encodeIfPresent(deliveries, forKey: .deliveries)
    }
}

/// What one subscribed activity did with a broadcast.
public struct BroadcastDelivery: Sendable, Hashable, Codable {
    /// The simulated activity.
    public var activityID: String
    /// What it did.
    public var outcome: DeviceOutcome
    /// Why, when it did not apply it.
    public var note: String?

    enum CodingKeys: String, CodingKey {
        case outcome, note
        case activityID = "activity_id"
    }

    /// Creates a delivery.
    public init(activityID: String, outcome: DeviceOutcome, note: String?) {
        self.activityID = activityID
        self.outcome = outcome
        self.note = note
    }
}
