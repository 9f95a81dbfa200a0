import Foundation
import IsletCore

/// One push as the history keeps it: the request as it arrived, packed, and what
/// became of it. The ``PushRecord`` served for inspection (the parsed payload, the
/// header dictionary, the shortened provider token, the ids as text) is built from
/// it only when asked for, so that a push costs little more than keeping its parts,
/// and a push leaving the history little more than one `free`.
struct PushEntry: Sendable {
    /// Where the answer's `apns-id` came from.
    enum AnswerID: Sendable, Hashable {
        /// The request's own `apns-id`, echoed.
        case echoed
        /// One the simulator minted.
        case minted(MintedMessageID)
    }

    /// The record's number: 1 for the first request after start or reset.
    var sequence: Int
    /// When the request arrived, by the simulator's clock.
    var receivedAt: Date
    /// The connection that carried it.
    var connection: ConnectionID
    /// The request as received, provider token included.
    var request: PackedRequest
    /// What the simulator knew the token to be, right after this push.
    var tokenKind: PushTokenKind?
    /// The answer's status.
    var status: Int
    /// The refusal, when the status is not 200.
    var refusal: Refusal?
    /// The answer's `apns-id`.
    var apnsID: AnswerID
    /// The answer's `apns-unique-id`.
    var apnsUniqueID: MintedMessageID?
    /// Whether the answer is an injected fault.
    var injectedFault: Bool
    /// What the simulated device did with the push.
    var deviceOutcome: DeviceOutcome
    /// Why the device did what it did.
    var deviceNote: String?
    /// The Live Activity the push started or reached.
    var activityID: String?
    /// What APNs accepts in the request but a stricter server might refuse.
    var warnings: [String] = []
    /// For a broadcast, what each subscribed activity did with it.
    var deliveries: [BroadcastDelivery]?

    /// The full record, its payload parsed from the body.
    func record() -> PushRecord {
        record(of: request.unpacked())
    }

    /// The full record, given the request this entry packed.
    func record(of request: SimulatorRequest) -> PushRecord {
        let payload = request.body.isEmpty ? nil : try? JSONValue(parsing: request.body, repeatedKeys: .lastWins)
        let fields = HeaderFields(request.fields)
        let apnsID: String
        switch self.apnsID {
        case .echoed:
            // Set only for a request whose first `apns-id` is a UUID.
            apnsID = fields.id ?? ""
        case .minted(let id): apnsID = id.text
        }
        return PushRecord(
            sequence: sequence,
            receivedAt: receivedAt,
            connection: connection,
            method: request.method,
            path: request.path,
            token: Self.pathToken(request.path),
            tokenKind: tokenKind,
            pushType: fields.pushType,
            event: payload?["aps"]?["event"]?.stringValue,
            headers: Self.recordedHeaders(request.headers),
            payload: payload,
            payloadBytes: request.body.count,
            answer: PushRecord.Answer(
                status: status,
                reason: refusal?.reason,
                apnsID: apnsID,
                apnsUniqueID: apnsUniqueID?.text,
                timestamp: refusal?.timestampMilliseconds,
                note: refusal?.note),
            injectedFault: injectedFault,
            deviceOutcome: deviceOutcome,
            deviceNote: deviceNote,
            activityID: activityID,
            warnings: warnings,
            deliveries: deliveries)
    }

    /// The device token as sent: what follows `/3/device/`, whether or not it passed
    /// its checks; `nil` when the path holds none.
    static func pathToken(_ path: String) -> String? {
        guard path.hasPrefix(APNsPath.devicePrefix), path.count > APNsPath.devicePrefix.count else { return nil }
        return String(path.dropFirst(APNsPath.devicePrefix.count))
    }

    /// The request headers for the record: repeated names joined, the provider token
    /// shortened.
    static func recordedHeaders(_ headers: [(name: String, value: String)]) -> [String: String] {
        var out = [String: String](minimumCapacity: headers.count)
        for (name, value) in headers {
            let shown = name == APNsHeaderName.authorization ? redactAuthorization(value) : value
            Self.join(shown, to: &out[name])
        }
        return out
    }

    private static func join(_ value: String, to slot: inout String?) {
        slot = slot.map { $0 + ", " + value } ?? value
    }

    /// `bearer eyJhbG…(183)`: the scheme, then the token shortened as
    /// ``Redaction`` does, counting bytes (a JWT is ASCII).
    static func redactAuthorization(_ value: String) -> String {
        let utf8 = value.utf8
        guard let space = utf8.firstIndex(of: UInt8(ascii: " ")) else { return "…(" + String(utf8.count) + ")" }
        let token = utf8[utf8.index(after: space)...]
        let visible = Redaction.visiblePrefix
        var shown = String(value[..<space])
        shown += " "
        if token.count >= visible * 2 { shown += String(decoding: token.prefix(visible), as: UTF8.self) }
        shown += "…(" + String(token.count) + ")"
        return shown
    }
}
