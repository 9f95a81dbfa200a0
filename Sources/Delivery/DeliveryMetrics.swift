import IsletSync
import Foundation

/// Counters the worker keeps for `/metrics`: pushes by result, reason and transport,
/// and a histogram of how long the push service took to settle each push.
public final class DeliveryMetrics: Sendable {
    /// The upper bounds (seconds) of the latency histogram's buckets.
    public static let latencyBuckets: [Double] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30]

    /// A snapshot of the counters.
    public struct Snapshot: Sendable {
        /// Pushes settled, by (result, reason); the reason is empty for none.
        public var pushes: [ResultKey: Int]
        /// Cumulative counts per bucket of `latencyBuckets`, then +Inf.
        public var latencyCounts: [Int]
        /// Sum of all latencies, in seconds.
        public var latencySum: Double
        /// Latencies observed.
        public var latencyCount: Int
    }

    /// A result and reason pair.
    public struct ResultKey: Hashable, Sendable, Comparable {
        /// `sent`, `failed`, `retried`, `switched`, `dropped`.
        public var result: String
        /// The service's reason (APNs's, or FCM's error code), or empty.
        public var reason: String
        /// The transport: `apns` or `fcm`.
        public var transport: String = "apns"

        public static func < (lhs: ResultKey, rhs: ResultKey) -> Bool {
            (lhs.result, lhs.reason, lhs.transport) < (rhs.result, rhs.reason, rhs.transport)
        }
    }

    private struct State {
        var pushes: [ResultKey: Int] = [:]
        var buckets = [Int](repeating: 0, count: DeliveryMetrics.latencyBuckets.count + 1)
        var sum = 0.0
        var count = 0
    }

    private let state = Lock(State())

    /// Creates empty counters.
    public init() {}

    /// Counts one push settled with `result` and `reason` by `transport`.
    func record(result: String, reason: String?, latency: Double?, transport: String) {
        state.withLock { state in
            state.pushes[ResultKey(result: result, reason: reason ?? "", transport: transport), default: 0] += 1
            if let latency {
                let index = DeliveryMetrics.latencyBuckets.firstIndex { latency <= $0 } ?? DeliveryMetrics.latencyBuckets.count
                state.buckets[index] += 1
                state.sum += latency
                state.count += 1
            }
        }
    }

    /// The counters now.
    public func snapshot() -> Snapshot {
        state.withLock { state in
            var cumulative: [Int] = []
            var running = 0
            for count in state.buckets {
                running += count
                cumulative.append(running)
            }
            return Snapshot(pushes: state.pushes, latencyCounts: cumulative, latencySum: state.sum, latencyCount: state.count)
        }
    }
}
