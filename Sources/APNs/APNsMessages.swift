public import Foundation
public import IsletCore

/// One push to send: the device token, the headers APNs reads and the payload bytes.
public struct APNsRequest: Sendable {
    /// The device, push-to-start or update token (hex).
    public var deviceToken: String
    /// `apns-topic`: the bundle id, with `.push-type.liveactivity` for Live Activities.
    public var topic: String
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration` in Unix seconds: until when APNs keeps trying; 0 tries once;
    /// `nil` leaves the header out.
    public var expiration: Int64?
    /// `apns-id`: a lowercase UUID, kept across every retry of this push.
    public var apnsID: String
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The JSON payload.
    public var payload: Data
    /// For a broadcast (iOS 18), the channel it goes to: Apple's id, as the
    /// `apns-channel-id` header carries it. The request then goes to
    /// `/4/broadcasts/apps/<bundle id>` (the topic without its push-type suffix),
    /// and `deviceToken` is not used.
    public var channelID: String?

    /// The bundle id a broadcast's path names: the topic without its push-type
    /// suffix.
    public var bundleID: String {
        guard let suffix = pushType.topicSuffix, topic.hasSuffix(suffix) else { return topic }
        return String(topic.dropLast(suffix.count))
    }

    /// Creates a request; without `apnsID` a fresh lowercase UUID is minted.
    public init(
        deviceToken: String, topic: String, pushType: APNsPushType, priority: APNsPriority = .immediate,
        expiration: Int64? = nil, apnsID: String? = nil, collapseID: String? = nil, payload: Data
    ) {
        self.deviceToken = deviceToken
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.apnsID = apnsID ?? APNsRequest.mintID()
        self.collapseID = collapseID
        self.payload = payload
    }

    /// A broadcast of a Live Activity `payload` on `channelID` for `bundleID`, at
    /// `priority`; `expiration` 0 (the only one a channel that stores no message
    /// takes) unless given.
    public static func broadcast(
        channelID: String, bundleID: String, priority: APNsPriority = .immediate, expiration: Int64 = 0,
        apnsID: String? = nil, payload: Data
    ) -> APNsRequest {
        var request = APNsRequest(
            deviceToken: "", topic: bundleID + (APNsPushType.liveactivity.topicSuffix ?? ""), pushType: .liveactivity,
            priority: priority, expiration: expiration, apnsID: apnsID, payload: payload)
        request.channelID = channelID
        return request
    }
}

extension APNsRequest {
    /// A request for a push the builders made, to `deviceToken`. Throws when the
    /// push may not go to a token of `tokenKind` (a Live Activity payload to a device
    /// token, an alert to a Live Activity token).
    public init(_ push: BuiltPush, deviceToken: String, tokenKind: PushTokenKind, apnsID: String? = nil) throws(PayloadError) {
        guard push.accepts(tokenKind) else {
            throw PayloadError(
                .notAllowed, field: "token",
                message: "\(push.pushType.aPush) for a \(push.tokenKind.rawValue) token cannot go to a \(tokenKind.rawValue) token")
        }
        self.init(
            deviceToken: deviceToken, topic: push.topic, pushType: push.pushType, priority: push.priority,
            expiration: push.expiration, apnsID: apnsID, collapseID: push.collapseID, payload: push.payload)
    }

    static func mintID() -> String {
        APNsMessageID.mint()
    }
}

/// APNs's answer to one attempt.
public struct APNsResponse: Sendable, Equatable {
    /// The HTTP status.
    public var status: Int
    /// `apns-id`, as APNs echoed it.
    public var apnsID: String?
    /// `apns-unique-id` (sandbox only), for Apple's delivery log.
    public var uniqueID: String?
    /// The `reason` of a failure.
    public var reason: APNsReason?
    /// For 410: when APNs learned the token was no longer valid.
    public var timestamp: Date?

    /// Creates a response.
    public init(status: Int, apnsID: String? = nil, uniqueID: String? = nil, reason: APNsReason? = nil, timestamp: Date? = nil) {
        self.status = status
        self.apnsID = apnsID
        self.uniqueID = uniqueID
        self.reason = reason
        self.timestamp = timestamp
    }
}

/// What became of a push's one attempt.
public struct APNsResult: Sendable {
    /// What became of it, in a transport's terms (`APNsFailurePolicy`).
    public var disposition: TransportDisposition
    /// APNs's answer, if the attempt got one.
    public var response: APNsResponse?
    /// The transport or credential failure of the attempt, if it had no answer.
    public var error: APNsError?
    /// Attempts made: 1, or 0 when the push never reached the network.
    public var attempts: Int
    /// The `apns-id` the push carried (every attempt of a push carries the same).
    public var apnsID: String

    /// Creates a result.
    public init(
        disposition: TransportDisposition, response: APNsResponse? = nil, error: APNsError? = nil, attempts: Int,
        apnsID: String
    ) {
        self.disposition = disposition
        self.response = response
        self.error = error
        self.attempts = attempts
        self.apnsID = apnsID
    }
}

/// A failure of the APNs client itself (not an APNs answer).
public struct APNsError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What failed; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case invalidConfiguration, transport, credentialsRejected, circuitOpen, deadlineExceeded, shutDown }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A host URL or CA that cannot work.
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// The connection failed (see `message`).
        public static let transport = Code(.transport)
        /// APNs refused this signing key earlier; the client no longer sends with it.
        public static let credentialsRejected = Code(.credentialsRejected)
        /// The host failed repeatedly; the client is pausing before it probes again.
        public static let circuitOpen = Code(.circuitOpen)
        /// The retry deadline passed.
        public static let deadlineExceeded = Code(.deadlineExceeded)
        /// The client is shutting down.
        public static let shutDown = Code(.shutDown)

        public var description: String { base.rawValue }
    }

    /// What failed.
    public let code: Code
    /// Details, free of tokens and keys.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "apns \(code): \(message)" }
}
