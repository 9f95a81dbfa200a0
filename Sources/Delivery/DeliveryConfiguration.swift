public import Foundation

/// How the delivery worker paces and retries pushes.
public struct DeliveryConfiguration: Sendable {
    /// Pushes sent and not yet answered, at most.
    public var maxInFlight = Self.defaultMaxInFlight
    /// `maxInFlight`'s default (and `--delivery-max-in-flight`'s).
    public static let defaultMaxInFlight = 2_000
    /// Attempts per push that reached the push service (a round each: transports
    /// make one attempt and never retry on their own) before it is given up as
    /// failed. A push the transport did not hand to the network uses none.
    public var maxRounds = 12
    /// Backoff before the second round; doubles each round, with full jitter (at
    /// least half of it when the service asks to slow down).
    public var retryBase: TimeInterval = 1
    /// Longest backoff between rounds.
    public var retryMax: TimeInterval = 600
    /// A push not sent within this long of being queued is given up.
    public var maxAge: TimeInterval = 24 * 3600
    /// This node's id: the holder of the pushes it claims, and its heartbeat row.
    public var nodeID = "local"
    /// How long a claim on a push lasts unless renewed: when its node dies, another
    /// node takes the push over this long after the last renewal at most.
    public var lease = Self.defaultLease
    /// `lease`'s default (and `--push-lease-seconds`'s).
    public static let defaultLease: TimeInterval = 30
    /// How often the heartbeat beats and leases are renewed: a third of the lease,
    /// so that two renewals may fail before a live node's pushes are taken over.
    public var renewInterval: TimeInterval { lease / 3 }
    /// How long a stop waits for the answers of the pushes in flight: the server's
    /// shutdown grace (`--shutdown-grace-seconds`), whose default is the setting's.
    public var shutdownGrace: TimeInterval

    /// The defaults, with the shutdown grace the server's setting gives.
    public init(shutdownGrace: TimeInterval) {
        self.shutdownGrace = shutdownGrace
    }
}
