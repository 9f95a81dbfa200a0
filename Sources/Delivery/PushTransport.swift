public import Foundation
public import Storage

/// What became of one push at a transport, in terms every transport shares: the
/// delivery worker decides from this alone.
public enum TransportDisposition: Sendable, Equatable {
    /// The push service accepted the push.
    case delivered
    /// A passing fault (the service was busy or failed, the connection was lost, the
    /// app's credentials could not be read): send it again after a backoff.
    case retry
    /// The token is pushed too fast, or the service asks to slow down: send it again,
    /// later.
    case retryLater
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

/// A transport's answer to one push: what became of it, and what to record and count.
public struct TransportResult: Sendable {
    /// What became of the push.
    public var disposition: TransportDisposition
    /// The service's last status code, if an attempt got an answer.
    public var status: Int?
    /// Why it failed: the service's reason, or the transport's own error code.
    public var reason: String?
    /// The service's id for the delivery (APNs's `apns-unique-id`, sandbox only).
    public var uniqueID: String?
    /// Attempts made; 0 when the push was never handed to the network.
    public var attempts: Int
    /// Seconds from handing the push to the network to its answer.
    public var latency: TimeInterval

    /// Creates a result.
    public init(
        disposition: TransportDisposition, status: Int? = nil, reason: String? = nil, uniqueID: String? = nil,
        attempts: Int, latency: TimeInterval = 0
    ) {
        self.disposition = disposition
        self.status = status
        self.reason = reason
        self.uniqueID = uniqueID
        self.attempts = attempts
        self.latency = latency
    }
}

/// Sends claimed pushes to a push service (APNs today; FCM or broadcast channels
/// later). A transport makes its own quick retries within a push and answers once per
/// push; the worker decides what follows (record, retry later, give up, act on a dead
/// token).
public protocol PushTransport: Sendable {
    /// Sends `push` and calls `completion` exactly once with its result, on any
    /// thread (keep the completion short).
    func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void)

    /// Sends pushes claimed together, calling `completion` exactly once per push, on
    /// any thread. A transport may share work across the batch (read each app's
    /// credentials once); by default each push is sent on its own.
    func send(_ pushes: [ClaimedPush], completion: @escaping @Sendable (ClaimedPush, TransportResult) -> Void)
}

extension PushTransport {
    /// Sends each push on its own.
    public func send(_ pushes: [ClaimedPush], completion: @escaping @Sendable (ClaimedPush, TransportResult) -> Void) {
        for push in pushes {
            send(push) { completion(push, $0) }
        }
    }
}
