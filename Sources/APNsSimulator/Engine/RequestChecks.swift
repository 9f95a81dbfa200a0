import Foundation
import IsletCore

/// The checks APNs makes on a request before it looks at the device token's state,
/// as pure functions of the request. Each throws the refusal APNs would answer.
enum RequestChecks {
    /// `POST /3/device/<token>`: the method (405 MethodNotAllowed), the path (404
    /// BadPath), the token's presence (400 MissingDeviceToken) and shape (400
    /// BadDeviceToken). Answers the token in lowercase, as the simulated devices
    /// know it.
    static func route(_ request: SimulatorRequest) throws(Refusal) -> String {
        guard request.method == "POST" else {
            throw Refusal(.methodNotAllowed, "APNs takes only POST, not \(request.method)")
        }
        if let token = wellFormedToken(inPath: request.path) { return token }
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
        return token.lowercased()
    }

    /// The token of a device path that passes every check, in lowercase, read from
    /// the path's bytes; `nil` for any other path, which ``route(_:)`` then examines
    /// rule by rule to find the refusal. The bytes of `/3/device/` followed by hex
    /// digits are ASCII, where bytes and characters agree.
    private static func wellFormedToken(inPath path: String) -> String? {
        var path = path
        return path.withUTF8 { bytes -> String? in
            let prefix = APNsPath.devicePrefix.utf8
            let length = bytes.count - prefix.count
            guard length >= PushToken.minimumLength, length <= PushToken.maximumLength, length % 2 == 0,
                bytes.starts(with: prefix)
            else { return nil }
            let token = UnsafeBufferPointer(rebasing: bytes[prefix.count...])
            var isLowercase = true
            for byte in token {
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "f"): continue
                case UInt8(ascii: "A")...UInt8(ascii: "F"): isLowercase = false
                default: return nil
                }
            }
            if isLowercase { return String(decoding: token, as: UTF8.self) }
            return String(unsafeUninitializedCapacity: length) { out in
                // Setting 0x20 lowers A–F and leaves digits and a–f as they are.
                for index in 0..<length { out[index] = token[index] | 0x20 }
                return length
            }
        }
    }

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
        let pushType: APNsPushType
        if let raw = fields.pushType {
            guard let known = APNsPushType(rawValue: raw) else {
                throw Refusal(.invalidPushType, "apns-push-type \"\(raw)\" is not a push type APNs knows")
            }
            pushType = known
        } else {
            pushType = .alert
        }
        guard pushType.fits(topic: topic) else {
            if let suffix = pushType.topicSuffix {
                throw Refusal(.invalidPushType, "a \(pushType.rawValue) push needs a topic ending in \(suffix), not \"\(topic)\"")
            }
            throw Refusal(.invalidPushType, "a \(pushType.rawValue) push cannot go to the topic \"\(topic)\"")
        }
        var priority: APNsPriority?
        if let raw = fields.priority {
            guard let parsed = APNsPriority(headerValue: raw) else {
                throw Refusal(.badPriority, "apns-priority must be 1, 5 or 10, not \"\(raw)\"")
            }
            priority = parsed
        }
        if let id = fields.id, !APNsMessageID.isUUID(id) {
            throw Refusal(.badMessageId, "apns-id \"\(id)\" is not a UUID (8-4-4-4-12 hex digits)")
        }
        if let collapseID = fields.collapseID, collapseID.utf8.count > APNsLimits.maximumCollapseIDBytes {
            throw Refusal(.badCollapseId, "apns-collapse-id is \(collapseID.utf8.count) bytes; at most \(APNsLimits.maximumCollapseIDBytes) are allowed")
        }
        if let expiration = fields.expiration {
            guard !expiration.isEmpty, expiration.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
                Int64(expiration) != nil
            else {
                throw Refusal(.badExpirationDate, "apns-expiration must be Unix seconds (or 0), not \"\(expiration)\"")
            }
        }
        return PushHeaders(topic: topic, pushType: pushType, priority: priority)
    }

    /// The body: not empty (PayloadEmpty), within the push type's size (413
    /// PayloadTooLarge), a JSON object with an `aps` object. Answers the parsed body
    /// and its `aps` members.
    ///
    /// APNs documents no reason of its own for a body that is not JSON or has no
    /// `aps` dictionary; the simulator answers 400 PayloadEmpty, the nearest
    /// documented reason, so that a client treats it as a fault of the payload and
    /// never of the token.
    static func payload(
        _ body: Data, pushType: APNsPushType
    ) throws(Refusal) -> (document: JSONValue, aps: [String: JSONValue]) {
        guard !body.isEmpty else { throw Refusal(.payloadEmpty, "the body is empty") }
        guard body.count <= pushType.maximumPayloadBytes else {
            throw Refusal(.payloadTooLarge, "the body is \(body.count) bytes; a \(pushType.rawValue) push may carry \(pushType.maximumPayloadBytes)")
        }
        guard let document = try? JSONValue(parsing: body) else {
            throw Refusal(.payloadEmpty, "the body is not JSON")
        }
        guard let object = document.objectValue else {
            throw Refusal(.payloadEmpty, "the body is JSON but not an object")
        }
        guard let aps = object["aps"]?.objectValue else {
            throw Refusal(.payloadEmpty, object["aps"] == nil ? "the payload has no aps dictionary" : "aps is not a dictionary")
        }
        return (document, aps)
    }

    /// Whether `topic` is one printable ASCII word that neither starts nor ends with
    /// a dot. Checked on bytes: once every byte is printable ASCII, bytes and
    /// characters agree.
    private static func isUsableTopic(_ topic: String) -> Bool {
        let bytes = topic.utf8
        guard let first = bytes.first, let last = bytes.last else { return false }
        guard first != UInt8(ascii: "."), last != UInt8(ascii: ".") else { return false }
        return bytes.allSatisfy { $0 > 0x20 && $0 < 0x7F }
    }
}

/// The `apns-*` headers that passed their checks.
struct PushHeaders {
    var topic: String
    var pushType: APNsPushType
    var priority: APNsPriority?
}
