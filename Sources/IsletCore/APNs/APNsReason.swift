/// The `reason` APNs puts in the JSON body of every answer that is not 200, with the
/// HTTP status APNs pairs it with.
///
/// Reasons Apple adds later decode as ``unknown(_:)`` rather than failing, so a client
/// built today still reads an answer from tomorrow's APNs.
public enum APNsReason: Hashable, Sendable {
    /// 400: `apns-collapse-id` is longer than 64 bytes.
    case badCollapseId
    /// 400: the device token is malformed, or belongs to the other environment.
    case badDeviceToken
    /// 400: `apns-expiration` is not a number.
    case badExpirationDate
    /// 400: `apns-id` is not a UUID.
    case badMessageId
    /// 400: `apns-priority` is not 1, 5 or 10.
    case badPriority
    /// 400: `apns-topic` is not a usable topic.
    case badTopic
    /// 400: the device token does not belong to the topic (for example an alert sent
    /// to a Live Activity token).
    case deviceTokenNotForTopic
    /// 400: a header appears more than once.
    case duplicateHeaders
    /// 400: the connection was idle too long.
    case idleTimeout
    /// 400: `apns-push-type` is unknown or does not fit the topic.
    case invalidPushType
    /// 400: the `:path` names no device token.
    case missingDeviceToken
    /// 400: `apns-topic` is missing.
    case missingTopic
    /// 400: the body is empty.
    case payloadEmpty
    /// 400: pushes to this topic are not allowed.
    case topicDisallowed
    /// 400: broadcast is not enabled for the app (channels and broadcasts).
    case featureNotEnabled
    /// 400: `apns-channel-id` is missing.
    case missingChannelId
    /// 400: `apns-channel-id` is not base64, or too long.
    case badChannelId
    /// 400: no channel has the `apns-channel-id`.
    case channelNotRegistered
    /// 400: the app has as many channels as it may have in the environment.
    case cannotCreateChannelConfig
    /// 400: `apns-push-type` (or a channel's `push-type`) is missing.
    case missingPushType
    /// 400: the JSON of a channel request names a member it does not take, or a
    /// value it does not allow.
    case badRequestParams
    /// 400: the body of a channel request is not JSON.
    case badRequestPayload
    /// 403: the client certificate is bad.
    case badCertificate
    /// 403: the client certificate is for the other environment.
    case badCertificateEnvironment
    /// 403: the provider token was issued more than an hour ago.
    case expiredProviderToken
    /// 403: the action is not allowed.
    case forbidden
    /// 403: the provider token is unreadable, unsigned by a known key, or names the
    /// wrong team.
    case invalidProviderToken
    /// 403: no provider token was sent.
    case missingProviderToken
    /// 403: the token's key id is not related to the topic's team.
    case unrelatedKeyIdInToken
    /// 403: the token's key is restricted to the other environment.
    case badEnvironmentKeyIdInToken
    /// 404: the `:path` is not an APNs path.
    case badPath
    /// 405: the `:method` is not POST.
    case methodNotAllowed
    /// 410: the device token has expired.
    case expiredToken
    /// 410: the device token is no longer active for the topic.
    case unregistered
    /// 413: the body is larger than the push type allows.
    case payloadTooLarge
    /// 429: the provider token changed too often on one connection.
    case tooManyProviderTokenUpdates
    /// 429: too many pushes to one device token.
    case tooManyRequests
    /// 500: APNs failed internally.
    case internalServerError
    /// 503: APNs is unavailable.
    case serviceUnavailable
    /// 503: APNs is shutting down.
    case shutdown
    /// A reason this version does not know, spelled as APNs sent it.
    case unknown(String)

    /// Every reason this version knows, in the order of Apple's documentation.
    public static let allKnown: [APNsReason] = [
        .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
        .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
        .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId, .badChannelId,
        .channelNotRegistered, .cannotCreateChannelConfig, .missingPushType, .badRequestParams, .badRequestPayload,
        .badCertificate, .badCertificateEnvironment,
        .expiredProviderToken, .forbidden, .invalidProviderToken, .missingProviderToken,
        .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken, .badPath, .methodNotAllowed, .expiredToken,
        .unregistered, .payloadTooLarge, .tooManyProviderTokenUpdates, .tooManyRequests,
        .internalServerError, .serviceUnavailable, .shutdown,
    ]

    private static let byRawValue: [String: APNsReason] = Dictionary(
        uniqueKeysWithValues: allKnown.map { ($0.rawValue, $0) })

    /// The reason spelled `rawValue`; a spelling this version does not know becomes
    /// ``unknown(_:)``. Matching is exact, as APNs spells its reasons.
    public init(rawValue: String) {
        self = APNsReason.byRawValue[rawValue] ?? .unknown(rawValue)
    }

    /// The reason as APNs spells it in the `reason` member.
    public var rawValue: String {
        switch self {
        case .badCollapseId: "BadCollapseId"
        case .badDeviceToken: "BadDeviceToken"
        case .badExpirationDate: "BadExpirationDate"
        case .badMessageId: "BadMessageId"
        case .badPriority: "BadPriority"
        case .badTopic: "BadTopic"
        case .deviceTokenNotForTopic: "DeviceTokenNotForTopic"
        case .duplicateHeaders: "DuplicateHeaders"
        case .idleTimeout: "IdleTimeout"
        case .invalidPushType: "InvalidPushType"
        case .missingDeviceToken: "MissingDeviceToken"
        case .missingTopic: "MissingTopic"
        case .payloadEmpty: "PayloadEmpty"
        case .topicDisallowed: "TopicDisallowed"
        case .featureNotEnabled: "FeatureNotEnabled"
        case .missingChannelId: "MissingChannelId"
        case .badChannelId: "BadChannelId"
        case .channelNotRegistered: "ChannelNotRegistered"
        case .cannotCreateChannelConfig: "CannotCreateChannelConfig"
        case .missingPushType: "MissingPushType"
        case .badRequestParams: "BadRequestParams"
        case .badRequestPayload: "BadRequestPayload"
        case .badCertificate: "BadCertificate"
        case .badCertificateEnvironment: "BadCertificateEnvironment"
        case .expiredProviderToken: "ExpiredProviderToken"
        case .forbidden: "Forbidden"
        case .invalidProviderToken: "InvalidProviderToken"
        case .missingProviderToken: "MissingProviderToken"
        case .unrelatedKeyIdInToken: "UnrelatedKeyIdInToken"
        case .badEnvironmentKeyIdInToken: "BadEnvironmentKeyIdInToken"
        case .badPath: "BadPath"
        case .methodNotAllowed: "MethodNotAllowed"
        case .expiredToken: "ExpiredToken"
        case .unregistered: "Unregistered"
        case .payloadTooLarge: "PayloadTooLarge"
        case .tooManyProviderTokenUpdates: "TooManyProviderTokenUpdates"
        case .tooManyRequests: "TooManyRequests"
        case .internalServerError: "InternalServerError"
        case .serviceUnavailable: "ServiceUnavailable"
        case .shutdown: "Shutdown"
        case .unknown(let raw): raw
        }
    }

    /// The HTTP status APNs answers with this reason; `nil` for an unknown reason,
    /// whose status only the answer itself can tell.
    public var status: Int? {
        switch self {
        case .badCollapseId, .badDeviceToken, .badExpirationDate, .badMessageId, .badPriority, .badTopic,
            .deviceTokenNotForTopic, .duplicateHeaders, .idleTimeout, .invalidPushType, .missingDeviceToken,
            .missingTopic, .payloadEmpty, .topicDisallowed, .featureNotEnabled, .missingChannelId, .badChannelId,
            .channelNotRegistered, .cannotCreateChannelConfig, .missingPushType, .badRequestParams, .badRequestPayload:
            400
        case .badCertificate, .badCertificateEnvironment, .expiredProviderToken, .forbidden,
            .invalidProviderToken, .missingProviderToken, .unrelatedKeyIdInToken, .badEnvironmentKeyIdInToken:
            403
        case .badPath: 404
        case .methodNotAllowed: 405
        case .expiredToken, .unregistered: 410
        case .payloadTooLarge: 413
        case .tooManyProviderTokenUpdates, .tooManyRequests: 429
        case .internalServerError: 500
        case .serviceUnavailable, .shutdown: 503
        case .unknown: nil
        }
    }

    /// Whether this version knows the reason.
    public var isKnown: Bool {
        if case .unknown = self { return false }
        return true
    }
}

extension APNsReason: RawRepresentable {}

extension APNsReason: CustomStringConvertible {
    /// The reason as APNs spells it.
    public var description: String { rawValue }
}

extension APNsReason: Codable {
    /// Reads the reason from a JSON string.
    public init(from decoder: any Decoder) throws {
        self.init(rawValue: try decoder.singleValueContainer().decode(String.self))
    }

    /// Writes the reason as a JSON string, spelled as APNs spells it.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }
}
