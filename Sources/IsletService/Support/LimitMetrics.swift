public import IsletCore
import IsletSync

/// What the limits did on this node, for `/metrics`: updates sent at priority 5
/// because their copy's budget was spent, pushes deferred, and requests refused by a
/// rate limit, each by app.
public final class LimitMetrics: Sendable {
    private let counts = Lock(Counts())

    private struct Counts {
        var downgrades: [String: Int] = [:]
        var deferrals: [String: Int] = [:]
        var refusals: [RefusalKey: Int] = [:]
    }

    /// A refusal's labels.
    public struct RefusalKey: Sendable, Hashable, Comparable {
        /// The app.
        public let appID: String
        /// The route family.
        public let family: RateFamily

        public static func < (lhs: RefusalKey, rhs: RefusalKey) -> Bool {
            (lhs.appID, lhs.family.rawValue) < (rhs.appID, rhs.family.rawValue)
        }
    }

    /// Counters that start at zero.
    public init() {}

    /// Counts `count` updates of `appID` queued at priority 5 instead of 10.
    func downgraded(appID: String, count: Int) {
        guard count > 0 else { return }
        counts.withLock { $0.downgrades[appID, default: 0] += count }
    }

    /// Counts `count` starts of `appID` held back.
    func deferred(appID: String, count: Int) {
        guard count > 0 else { return }
        counts.withLock { $0.deferrals[appID, default: 0] += count }
    }

    /// Counts a request of `appID` refused by the rate limit of `family`.
    public func refused(appID: String, family: RateFamily) {
        counts.withLock { $0.refusals[RefusalKey(appID: appID, family: family), default: 0] += 1 }
    }

    /// The counts so far.
    public func snapshot() -> (
        downgrades: [(String, Int)], deferrals: [(String, Int)], refusals: [(RefusalKey, Int)]
    ) {
        counts.withLock { counts in
            (
                counts.downgrades.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                counts.deferrals.sorted { $0.key < $1.key }.map { ($0.key, $0.value) },
                counts.refusals.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }
            )
        }
    }
}
