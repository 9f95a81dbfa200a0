import IsletSync

/// A count of things under way that a stop waits out on a condition, without
/// polling: the requests being answered, the resumes of suspended connections
/// (libmicrohttpd must not be stopped with one under way).
final class InFlightCount: Sendable {
    private let count = ConditionLock(0)

    /// How many are under way now.
    var current: Int { count.withLock { $0 } }

    /// One more is under way.
    func enter() { count.withLock { $0 += 1 } }

    /// One fewer is under way; a waiter looks again.
    func leave() { count.withLockBroadcasting { $0 -= 1 } }

    /// Waits until none is under way, or until `limit` has passed when one is given.
    /// Answers whether none is.
    @discardableResult
    func waitForNone(within limit: Duration? = nil) -> Bool {
        count.wait(until: { $0 == 0 }, timeout: limit) { $0 == 0 }
    }
}
