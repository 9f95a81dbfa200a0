public import Foundation
import IsletCore

/// What to do about one push once APNs (or the connection) has answered: the only
/// place where APNs's statuses and reasons are interpreted.
public enum APNsDisposition: Sendable, Equatable {
    /// APNs accepted the push.
    case delivered
    /// A passing fault (500, 503, Shutdown, a lost connection, a refused stream):
    /// send it again after a backoff.
    case retry
    /// 429 TooManyRequests (this token is pushed too fast) or
    /// TooManyProviderTokenUpdates: send it again, later.
    case retryLater
    /// The token is no longer valid: 410 Unregistered or ExpiredToken (with the time
    /// APNs learned it), or 400 BadDeviceToken (which may also mean the token belongs
    /// to the other environment).
    case tokenDead(since: Date?)
    /// The token does not belong to this topic or push type: DeviceTokenNotForTopic,
    /// TopicDisallowed, BadTopic.
    case wrongTopic
    /// 403 ExpiredProviderToken: mint a new provider token and try once more.
    case refreshProviderToken
    /// The signing key or team is refused (the other 403 reasons): stop sending with
    /// this key.
    case credentialsRejected
    /// The push itself is wrong (413 PayloadTooLarge, PayloadEmpty and the other
    /// 400s); sending it again cannot help.
    case rejected

    /// Whether the push is settled for good (no later attempt can change it).
    public var isFinal: Bool {
        switch self {
        case .retry, .retryLater, .refreshProviderToken: false
        default: true
        }
    }
}

/// Classifies APNs answers and transport failures.
public enum APNsFailurePolicy {
    /// The disposition of an answer.
    public static func classify(_ response: APNsResponse) -> APNsDisposition {
        if response.status == 200 { return .delivered }
        switch response.reason {
        case .unregistered?, .expiredToken?:
            return .tokenDead(since: response.timestamp)
        case .badDeviceToken?:
            return .tokenDead(since: nil)
        case .deviceTokenNotForTopic?, .topicDisallowed?, .badTopic?:
            return .wrongTopic
        case .expiredProviderToken?:
            return .refreshProviderToken
        case .tooManyRequests?, .tooManyProviderTokenUpdates?:
            return .retryLater
        case .internalServerError?, .serviceUnavailable?, .shutdown?, .idleTimeout?:
            return .retry
        default:
            break
        }
        switch response.status {
        case 410: return .tokenDead(since: response.timestamp)
        case 403: return .credentialsRejected
        case 429: return .retryLater
        case 500...599: return .retry
        default: return .rejected
        }
    }
}
