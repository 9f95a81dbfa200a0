import IsletSync
public import Foundation

/// A clock that moves only when told to: for tests of lifecycle windows, schedules and
/// token ages that must not sleep. What sleeps on it (a loop's `Sleeper`) watches it
/// and wakes when a move reaches its deadline.
public final class ManualWallClock: WallClock {
    private let current: Lock<Date>
    private let watchers = Lock(Watchers())

    private struct Watchers {
        var next = 0
        var active: [Int: @Sendable (Date) -> Void] = [:]
    }

    /// Creates a clock standing at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Lock(start)
    }

    /// The time the clock stands at.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by interval: TimeInterval) {
        let now = current.withLock { current -> Date in
            current = current.addingTimeInterval(interval)
            return current
        }
        tell(now)
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
        tell(date)
    }

    /// Calls `watcher` with the new time after every move, until `unwatch`; answers
    /// the watch's number (numbers only grow: a later watch has a higher one).
    public func watch(_ watcher: @escaping @Sendable (Date) -> Void) -> Int {
        watchers.withLock { watchers in
            watchers.next += 1
            watchers.active[watchers.next] = watcher
            return watchers.next
        }
    }

    /// Ends the watch numbered `number`.
    public func unwatch(_ number: Int) {
        _ = watchers.withLock { $0.active.removeValue(forKey: number) }
    }

    /// How many watches numbered above `number` are active: what a test waits for to
    /// know that a loop went back to sleep after a move.
    public func watches(after number: Int) -> Int {
        watchers.withLock { $0.active.keys.count { $0 > number } }
    }

    /// The number of the newest watch (0 before the first).
    public var lastWatch: Int { watchers.withLock { $0.next } }

    private func tell(_ now: Date) {
        for watcher in watchers.withLock({ Array($0.active.values) }) { watcher(now) }
    }
}
