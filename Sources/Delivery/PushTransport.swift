public import Foundation
public import IsletCore
public import Storage

/// A transport's answer to one push: what became of it, and what to record and count.
public struct TransportResult: Sendable {
    /// What became of the push.
    public var disposition: TransportDisposition
    /// The service's last status code, if an attempt got an answer.
    public var status: Int?
    /// Why it failed: the service's reason, or the transport's own error code.
    public var reason: String?
    /// The service's id of the message (APNs's `apns-unique-id`, sandbox only; FCM's
    /// message name).
    public var serviceMessageID: String?
    /// Attempts made; 0 when the push was never handed to the network.
    public var attempts: Int
    /// Seconds from handing the push to the network to its answer.
    public var latency: TimeInterval

    /// Creates a result.
    public init(
        disposition: TransportDisposition, status: Int? = nil, reason: String? = nil, serviceMessageID: String? = nil,
        attempts: Int, latency: TimeInterval = 0
    ) {
        self.disposition = disposition
        self.status = status
        self.reason = reason
        self.serviceMessageID = serviceMessageID
        self.attempts = attempts
        self.latency = latency
    }
}

/// Sends claimed pushes to a push service (APNs, with its broadcast channels; FCM).
/// A transport makes one attempt per push and answers once per push, its
/// service's answer mapped to a `TransportDisposition`; it never retries on its own
/// (the delivery policy decides what follows: retry now, retry later, record, act on
/// the token).
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
