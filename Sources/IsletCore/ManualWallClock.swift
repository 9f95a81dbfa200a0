import IsletSync
public import Foundation

/// A clock that moves only when told to: for tests of lifecycle windows, schedules and
/// token ages that must not sleep.
public final class ManualWallClock: WallClock {
    private let current: Lock<Date>

    /// Creates a clock standing at `start`.
    public init(start: Date = Date(timeIntervalSince1970: 1_800_000_000)) {
        current = Lock(start)
    }

    /// The time the clock stands at.
    public func now() -> Date { current.withLock { $0 } }

    /// Moves the clock forward (or back, with a negative interval).
    public func advance(by interval: TimeInterval) {
        current.withLock { $0 = $0.addingTimeInterval(interval) }
    }

    /// Sets the clock to `date`.
    public func set(_ date: Date) {
        current.withLock { $0 = date }
    }
}
