public import Foundation

/// What became of one push at a push service, in the terms every transport shares
/// (APNs, its broadcast channels, FCM). Each transport maps its service's answers
/// to this in one place in its own module (`APNsFailurePolicy`, `FCMFailurePolicy`);
/// the delivery policy decides what follows from this alone.
public enum TransportDisposition: Sendable, Equatable {
    /// The push service accepted the push.
    case delivered
    /// A passing fault (the service failed or was unavailable, the connection was
    /// lost before an answer, the app's credentials could not be read): send it
    /// again after a backoff that grows with each round.
    case retry
    /// The transport has mended what failed (it replaced an expired or refused
    /// credential: APNs's provider token, FCM's access token): send it again at once.
    case retryNow
    /// The push was not tried, or the service asks to slow down (the token is pushed
    /// too fast, the host is paused by the transport's circuit breaker): send it
    /// again, and not within `after` seconds when the service or transport says.
    case retryLater(after: TimeInterval?)
    /// The token is no longer valid (since `since`, when the service says).
    case tokenDead(since: Date?)
    /// The service does not know the token in the environment it was sent to (APNs's
    /// BadDeviceToken): it may belong to the other environment, or be dead.
    case tokenUnknownInEnvironment
    /// The token does not belong to this topic or push type.
    case wrongTopic
    /// The service refuses the app's credentials (or the app has none that work).
    case credentialsRejected
    /// The push itself is wrong; sending it again cannot help.
    case rejected
}

/// Why a push got no answer from its service, in the terms every transport shares,
/// and the one map from each to its disposition: a transport that sends nothing,
/// or hears nothing back, names the cause and never picks the disposition itself.
public enum NoAnswer: Sendable, Equatable, CaseIterable {
    /// The app's credentials could not be read now (the store failed): a passing
    /// fault.
    case credentialsUnreadable
    /// The app has no credentials for the service that work: none, a key that does
    /// not parse or sign, or credentials the service refused before.
    case credentialsUnusable
    /// The transport is stopping: the push goes again later, on the next start.
    case shuttingDown
    /// The host is paused (a circuit breaker open after repeated failures).
    case hostPaused
    /// No answer came: the connection failed or closed first, or the answer's
    /// deadline passed.
    case connectionFailed
    /// The push's stored content cannot be made into the service's message.
    case contentUnusable

    /// What follows: a passing fault is tried again with backoff, a paused host or
    /// a stop later (`after` seconds at least, when the pause says), an unusable
    /// credential or content never.
    public func disposition(after: TimeInterval? = nil) -> TransportDisposition {
        switch self {
        case .credentialsUnreadable, .connectionFailed: .retry
        case .credentialsUnusable: .credentialsRejected
        case .shuttingDown, .hostPaused: .retryLater(after: after)
        case .contentUnusable: .rejected
        }
    }
}
