import Foundation
import IsletCore

/// The checks APNs makes on a request before it looks at the device token's state,
/// as pure functions of the request. Each throws the refusal APNs would answer.
enum RequestChecks {
    /// `POST /3/device/<token>`: the method (405 MethodNotAllowed), the path (404
    /// BadPath), the token's presence (400 MissingDeviceToken) and shape (400
    /// BadDeviceToken). Answers the token in lowercase, as the simulated devices
    /// know it; a token sent with uppercase digits is accepted with a warning.
    static func route(_ request: SimulatorRequest, warnings: inout [String]) throws(Refusal) -> String {
        guard request.method == "POST" else {
            throw Refusal(.methodNotAllowed, "APNs takes only POST, not \(request.method)")
        }
        if let (token, hadUppercase) = wellFormedToken(inPath: request.path) {
            if hadUppercase { warnings.append(uppercaseTokenWarning) }
            return token
        }
        let path = request.path
        if path == "/3/device" || path == APNsPath.devicePrefix {
            throw Refusal(.missingDeviceToken, "the path names no device token")
        }
        guard path.hasPrefix(APNsPath.devicePrefix) else {
            throw Refusal(.badPath, "APNs pushes go to /3/device/<token>, not \(path)")
        }
        let token = String(path.dropFirst(APNsPath.devicePrefix.count))
        do {
            try PushToken.validate(token)
        } catch {
            throw Refusal(.badDeviceToken, error.description)
        }
        let lowered = token.lowercased()
        if lowered != token { warnings.append(uppercaseTokenWarning) }
        return lowered
    }

    static let uppercaseTokenWarning =
        "the device token has uppercase hex digits; devices hand tokens out in lowercase, and the simulator matched it "
        + "without regard to case, as a stricter server might not"

    /// The token of a device path that passes every check, in lowercase, read from
    /// the path's bytes; `nil` for any other path, which ``route(_:)`` then examines
    /// rule by rule to find the refusal. The bytes of `/3/device/` followed by hex
    /// digits are ASCII, where bytes and characters agree.
    private static func wellFormedToken(inPath path: String) -> (token: String, hadUppercase: Bool)? {
        var path = path
        return path.withUTF8 { bytes -> (token: String, hadUppercase: Bool)? in
            let prefix = devicePrefix.utf8Start
            let prefixCount = devicePrefix.utf8CodeUnitCount
            let length = bytes.count - prefixCount
            guard length >= PushToken.minimumLength, length <= PushToken.maximumLength, length % 2 == 0 else { return nil }
            for index in 0..<prefixCount where bytes[index] != prefix[index] { return nil }
            let token = UnsafeBufferPointer(rebasing: bytes[prefixCount...])
            guard let hasUppercase = HexDigits.check(UnsafeRawBufferPointer(token)) else { return nil }
            if !hasUppercase { return (String(decoding: token, as: UTF8.self), false) }
            let lowered = String(unsafeUninitializedCapacity: length) { out in
                // Setting 0x20 lowers A–F and leaves digits and a–f as they are.
                for index in 0..<length { out[index] = token[index] | 0x20 }
                return length
            }
            return (lowered, true)
        }
    }

    /// ``APNsPath/devicePrefix``, as bytes to compare with.
    static let devicePrefix: StaticString = "/3/device/"

    /// A name that appears twice is answered 400 DuplicateHeaders.
    static func checkNoRepeats(_ fields: HeaderFields) throws(Refusal) {
        if let name = fields.repeatedName() {
            throw Refusal(.duplicateHeaders, "the header \(name) appears more than once")
        }
    }

    /// The compact JWT from `authorization: bearer <token>`: 403
    /// MissingProviderToken without the header, 403 InvalidProviderToken when it is
    /// not a bearer token.
    static func bearerToken(_ value: String?) throws(Refusal) -> String {
        guard let value else {
            throw Refusal(.missingProviderToken, "no authorization header: APNs needs `authorization: bearer <provider token>`")
        }
        // Byte-level parsing: this runs on every request, and the token is ASCII.
        let bytes = value.utf8
        var start = bytes.startIndex
        var end = bytes.endIndex
        while start < end, bytes[start] == UInt8(ascii: " ") { start = bytes.index(after: start) }
        while start < end, bytes[bytes.index(before: end)] == UInt8(ascii: " ") { end = bytes.index(before: end) }
        let scheme = "bearer".utf8
        var cursor = start
        for expected in scheme {
            guard cursor < end, bytes[cursor] | 0x20 == expected else {
                if start == end { throw Refusal(.missingProviderToken, "the authorization header carries no provider token") }
                throw Refusal(.invalidProviderToken, "the authorization header is not `bearer <provider token>`")
            }
            cursor = bytes.index(after: cursor)
        }
        guard cursor < end else {
            throw Refusal(.missingProviderToken, "the authorization header carries no provider token")
        }
        guard bytes[cursor] == UInt8(ascii: " ") else {
            throw Refusal(.invalidProviderToken, "the authorization header is not `bearer <provider token>`")
        }
        while cursor < end, bytes[cursor] == UInt8(ascii: " ") { cursor = bytes.index(after: cursor) }
        return String(value[cursor..<end])
    }

    /// The `apns-*` headers, in the order checked: topic present (MissingTopic) and
    /// usable (BadTopic); push type known and fitting the topic (InvalidPushType);
    /// priority 1, 5 or 10 (BadPriority); `apns-id` a UUID (BadMessageId); collapse id
    /// at most 64 bytes (BadCollapseId); expiration a number (BadExpirationDate).
    ///
    /// Accepted with a warning in ``PushHeaders/warnings``: no `apns-push-type`
    /// (APNs requires it only for watchOS; the push is taken to be of the type
    /// whose suffix the topic ends with, otherwise an alert), and an `apns-id` with
    /// uppercase digits (Apple describes the canonical form as lowercase, and
    /// Foundation's `UUID().uuidString` is uppercase). An `apns-id` left out is
    /// accepted without one: APNs then makes one up.
    ///
    /// APNs documents no reason for a push type that does not fit its topic (a
    /// `liveactivity` push to a topic without `.push-type.liveactivity`, or an alert
    /// to a Live Activity topic). The simulator answers InvalidPushType: the topic
    /// itself is a well-formed topic, it is the push type that cannot go there.
    /// BadTopic is kept for a topic that is no topic at all (empty, with spaces, or a
    /// bare suffix).
    static func apnsHeaders(_ fields: HeaderFields) throws(Refusal) -> PushHeaders {
        guard let topic = fields.topic else {
            throw Refusal(.missingTopic, "no apns-topic header: name the app's bundle id")
        }
        guard isUsableTopic(topic) else {
            throw Refusal(.badTopic, "apns-topic \"\(topic)\" is not a bundle id")
        }
        var warnings: [String] = []
        let pushType: APNsPushType
        if let raw = fields.pushType {
            guard let known = APNsPushType(rawValue: raw) else {
                throw Refusal(.invalidPushType, "apns-push-type \"\(raw)\" is not a push type APNs knows")
            }
            pushType = known
        } else {
            pushType = APNsPushType.allCases.first { type in type.topicSuffix.map { topic.hasSuffix($0) && topic.count > $0.count } ?? false } ?? .alert
            warnings.append(
                "no apns-push-type header: APNs requires it for watchOS and Live Activity pushes name it liveactivity; "
                    + "taken to be \(pushType.rawValue) from the topic, a stricter server might refuse the push")
        }
        guard fits(pushType, topic: topic) else {
            if let suffix = pushType.topicSuffix {
                throw Refusal(.invalidPushType, "\(pushType.aPush) needs a topic ending in \(suffix), not \"\(topic)\"")
            }
            throw Refusal(.invalidPushType, "\(pushType.aPush) cannot go to the topic \"\(topic)\"")
        }
        var priority: APNsPriority?
        if let raw = fields.priority {
            // APNsPriority(headerValue:), without its generic call.
            switch raw {
            case "10": priority = .immediate
            case "5": priority = .powerConsidered
            case "1": priority = .lowest
            default: throw Refusal(.badPriority, "apns-priority must be 1, 5 or 10, not \"\(raw)\"")
            }
        }
        if let id = fields.id {
            guard APNsMessageID.isUUID(id) else {
                throw Refusal(.badMessageId, "apns-id \"\(id)\" is not a UUID (8-4-4-4-12 hex digits)")
            }
            if id.utf8.contains(where: { $0 &- UInt8(ascii: "A") < 6 }) {
                warnings.append(
                    "apns-id \"\(id)\" has uppercase hex digits; Apple describes the canonical form as lowercase, "
                        + "the simulator echoes it as sent")
            }
        }
        if let collapseID = fields.collapseID, collapseID.utf8.count > APNsLimits.maximumCollapseIDBytes {
            throw Refusal(.badCollapseId, "apns-collapse-id is \(collapseID.utf8.count) bytes; at most \(APNsLimits.maximumCollapseIDBytes) are allowed")
        }
        if let expiration = fields.expiration {
            guard !expiration.isEmpty, expiration.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }), Int64(expiration) != nil
            else {
                throw Refusal(.badExpirationDate, "apns-expiration must be Unix seconds (or 0), not \"\(expiration)\"")
            }
        }
        return PushHeaders(topic: topic, pushType: pushType, priority: priority, warnings: warnings)
    }

    /// The body: not empty (PayloadEmpty), within the push type's size (413
    /// PayloadTooLarge), a JSON object with an `aps` object. Reads the `aps`
    /// members the simulated device reads into `aps`; `bytes` are the body's bytes.
    ///
    /// APNs documents no reason of its own for a body that is not JSON or has no
    /// `aps` dictionary; the simulator answers 400 PayloadEmpty, the nearest
    /// documented reason, so that a client treats it as a fault of the payload and
    /// never of the token.
    static func payload(
        _ body: Data, bytes: UnsafeRawBufferPointer, pushType: APNsPushType, into aps: inout APSFields
    ) throws(Refusal) {
        guard !body.isEmpty else { throw Refusal(.payloadEmpty, "the body is empty") }
        guard body.count <= pushType.maximumPayloadBytes else {
            throw Refusal(.payloadTooLarge, "the body is \(body.count) bytes; a \(pushType.rawValue) push may carry \(pushType.maximumPayloadBytes)")
        }
        do {
            try PushPayload.read(body, bytes: bytes, liveActivity: pushType == .liveactivity, into: &aps)
        } catch {
            switch error {
            case .notJSON: throw Refusal(.payloadEmpty, "the body is not JSON")
            case .notObject: throw Refusal(.payloadEmpty, "the body is JSON but not an object")
            case .noAPS: throw Refusal(.payloadEmpty, "the payload has no aps dictionary")
            case .apsNotObject: throw Refusal(.payloadEmpty, "aps is not a dictionary")
            }
        }
    }

    /// Whether `topic` is one printable ASCII word that neither starts nor ends with
    /// a dot. Checked on bytes: once every byte is printable ASCII, bytes and
    /// characters agree.
    private static func isUsableTopic(_ topic: String) -> Bool {
        var topic = topic
        return topic.withUTF8 { bytes in
            guard let first = bytes.first, let last = bytes.last else { return false }
            guard first != UInt8(ascii: "."), last != UInt8(ascii: ".") else { return false }
            for byte in bytes where byte &- 0x21 >= 0x7F - 0x21 { return false }
            return true
        }
    }

    /// Whether a push of `pushType` may go to `topic`, as
    /// ``IsletCore/APNsPushType/fits(topic:)`` decides, read on bytes for the usual
    /// cases: `topic` is printable ASCII by now, where bytes and characters agree. A
    /// push type with a suffix needs a topic that ends in it; one without fits any
    /// topic that ends in no push type's suffix, and any other topic is left to
    /// `fits(topic:)`.
    static func fits(_ pushType: APNsPushType, topic: String) -> Bool {
        var text = topic
        return text.withUTF8 { bytes in
            if let suffix = pushType.topicSuffix {
                var suffix = suffix
                return suffix.withUTF8 { suffix in bytes.count > suffix.count && ends(bytes, with: suffix) }
            }
            for suffix in topicSuffixes where suffix.withUnsafeBufferPointer({ ends(bytes, with: $0) }) {
                return pushType.fits(topic: topic)
            }
            return true
        }
    }

    /// Every push type's topic suffix, as bytes.
    private static let topicSuffixes: [[UInt8]] = APNsPushType.allCases.compactMap { $0.topicSuffix.map { Array($0.utf8) } }

    private static func ends(_ bytes: UnsafeBufferPointer<UInt8>, with suffix: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = suffix.count
        guard count > 0 else { return true }
        guard bytes.count >= count, bytes[bytes.count - 1] == suffix[count - 1] else { return false }
        return memcmp(bytes.baseAddress! + (bytes.count - count), suffix.baseAddress!, count) == 0
    }
}

/// The `apns-*` headers that passed their checks.
struct PushHeaders {
    var topic: String
    var pushType: APNsPushType
    var priority: APNsPriority?
    /// What APNs accepts in them but a stricter server might refuse.
    var warnings: [String] = []
}
