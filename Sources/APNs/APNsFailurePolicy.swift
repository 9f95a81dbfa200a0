import Foundation
public import IsletCore

/// The one map from APNs's answers to the transport-neutral `TransportDisposition`:
/// the only place where APNs's statuses and reasons are interpreted. What follows
/// from a disposition (a retry now or later, a record, an act on the token) is the
/// delivery policy's to decide.
public enum APNsFailurePolicy {
    /// The disposition of `response`. `providerTokenReplaced` says whether the client
    /// replaced the provider token APNs called expired (`ExpiredProviderToken`): then
    /// the push may go again at once with the new one; otherwise (the token was too
    /// young to replace, which only a wrong clock or a wrong key explains) the
    /// credentials are refused.
    public static func classify(_ response: APNsResponse, providerTokenReplaced: Bool = false) -> TransportDisposition {
        if response.status == 200 { return .delivered }
        switch response.reason {
        case .unregistered?, .expiredToken?:
            return .tokenDead(since: response.timestamp)
        case .channelNotRegistered?:
            // A broadcast to a channel APNs no longer has (deleted, or never made in
            // this environment): like a dead token, it never reaches anyone again.
            return .tokenDead(since: nil)
        case .badDeviceToken?:
            // A sandbox token sent to production, or the reverse, or a dead one.
            return .tokenUnknownInEnvironment
        case .deviceTokenNotForTopic?, .topicDisallowed?, .badTopic?:
            return .wrongTopic
        case .expiredProviderToken?:
            return providerTokenReplaced ? .retryNow : .credentialsRejected
        case .tooManyRequests?, .tooManyProviderTokenUpdates?:
            return .retryLater(after: nil)
        case .internalServerError?, .serviceUnavailable?, .shutdown?, .idleTimeout?:
            return .retry
        default:
            break
        }
        switch response.status {
        case 410: return .tokenDead(since: response.timestamp)
        case 403: return .credentialsRejected
        case 429: return .retryLater(after: nil)
        case 500...599: return .retry
        default: return .rejected
        }
    }

    /// Why `response` refuses the signing key for good, when it does: a refusal
    /// (`credentialsRejected`) that no new provider token mends, named by APNs's
    /// reason (or `HTTP <status>`). An `ExpiredProviderToken` the client could not
    /// mend at once is not one: a younger token may be refused by a wrong clock, and
    /// the next one, minted later, may pass.
    public static func standingRefusal(_ response: APNsResponse) -> String? {
        guard classify(response) == .credentialsRejected, response.reason != .expiredProviderToken else { return nil }
        return response.reason?.rawValue ?? "HTTP \(response.status)"
    }
}
