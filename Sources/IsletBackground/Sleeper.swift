public import Foundation
public import IsletCore

/// How a loop waits for its next turn: until a time on its clock, woken early by a
/// `Doorbell`, ended by the task's cancellation. `SystemSleeper` sleeps on the
/// system's time; a `ManualWallClock` is a sleeper too, whose sleeps end when a test
/// moves it past their deadline, so that a loop's test never waits for real time.
public protocol Sleeper: WallClock {
    /// Returns once this clock reaches `deadline`, `doorbell` rings (taking the ring),
    /// or the task is cancelled.
    func sleep(until deadline: Date, doorbell: Doorbell?) async
    /// The same for a thread of its own, which no task cancels: a stop rings the
    /// doorbell.
    func block(until deadline: Date, doorbell: Doorbell?)
}

extension Sleeper {
    /// Sleeps `seconds` on this clock (see `sleep(until:doorbell:)`).
    public func sleep(for seconds: TimeInterval, doorbell: Doorbell? = nil) async {
        await sleep(until: now().addingTimeInterval(seconds), doorbell: doorbell)
    }

    /// Blocks `seconds` on this clock (see `block(until:doorbell:)`).
    public func block(for seconds: TimeInterval, doorbell: Doorbell? = nil) {
        block(until: now().addingTimeInterval(seconds), doorbell: doorbell)
    }
}

/// Sleeps on the system's time. A deadline is a wall-clock time, read once against
/// `wallClock` and turned into an instant of the monotonic clock, on which the sleep
/// then waits: a system clock stepped back (or forward) during a sleep neither
/// stalls nor shortens it.
public struct SystemSleeper: Sleeper {
    private let wallClock: any WallClock

    /// The system's sleeper.
    public init() {
        wallClock = SystemWallClock()
    }

    /// A sleeper that reads its deadlines against `wallClock` (the system's by
    /// default; a test gives one it steps) and waits on the monotonic clock.
    public init(wallClock: any WallClock) {
        self.wallClock = wallClock
    }

    /// The wall clock's time.
    public func now() -> Date { wallClock.now() }

    /// The instant of the monotonic clock standing at `monotonicNow` that lies as far
    /// ahead as `deadline` lies after `wallNow` (`monotonicNow` itself when the
    /// deadline has passed). A pure function: a sleep computes it once, so that no
    /// later read of the wall clock moves its end.
    public static func monotonicDeadline(
        for deadline: Date, wallNow: Date, monotonicNow: ContinuousClock.Instant
    ) -> ContinuousClock.Instant {
        let seconds = max(0, deadline.timeIntervalSince(wallNow))
        // A deadline centuries away (`.distantFuture`) is capped: a Duration holds it,
        // an instant past the clock's range would not.
        return monotonicNow + .seconds(min(seconds, 100 * 365 * 86_400))
    }

    private func monotonic(_ deadline: Date) -> ContinuousClock.Instant {
        Self.monotonicDeadline(for: deadline, wallNow: now(), monotonicNow: .now)
    }

    public func sleep(until deadline: Date, doorbell: Doorbell?) async {
        let end = monotonic(deadline)
        guard let doorbell else {
            if end > .now { try? await Task.sleep(until: end, clock: .continuous) }
            return
        }
        let alarm = Alarm()
        guard doorbell.hang(alarm) else { return }
        defer { doorbell.unhang() }
        guard end > .now else { return }
        let timer = Task {
            try? await Task.sleep(until: end, clock: .continuous)
            alarm.fire()
        }
        await alarm.wait()
        timer.cancel()
    }

    public func block(until deadline: Date, doorbell: Doorbell?) {
        let end = monotonic(deadline)
        let alarm = Alarm()
        guard doorbell?.hang(alarm) ?? true else { return }
        defer { doorbell?.unhang() }
        // Again until the monotonic deadline: a condition's wait may end a little early.
        while !alarm.fired {
            let left = end - ContinuousClock.now
            guard left > .zero else { return }
            alarm.block(timeout: left)
        }
    }
}

extension ManualWallClock: Sleeper {
    /// Returns once a move of the clock reaches `deadline` (at once when it stands
    /// there already), `doorbell` rings, or the task is cancelled.
    public func sleep(until deadline: Date, doorbell: Doorbell?) async {
        let alarm = Alarm()
        guard doorbell?.hang(alarm) ?? true else { return }
        defer { doorbell?.unhang() }
        let watch = self.watch { now in if now >= deadline { alarm.fire() } }
        defer { unwatch(watch) }
        guard now() < deadline else { return }
        await alarm.wait()
    }

    /// Blocks until a move of the clock reaches `deadline`, or `doorbell` rings.
    public func block(until deadline: Date, doorbell: Doorbell?) {
        let alarm = Alarm()
        guard doorbell?.hang(alarm) ?? true else { return }
        defer { doorbell?.unhang() }
        let watch = self.watch { now in if now >= deadline { alarm.fire() } }
        defer { unwatch(watch) }
        guard now() < deadline else { return }
        alarm.block(timeout: nil)
    }

    /// Waits, up to `limit` of real time, until `count` sleeps began on this clock
    /// after the watch numbered `mark` (`lastWatch` read before a move) and are still
    /// sleeping: the loop finished the turn the move started. Answers whether they did.
    public func waitForSleepers(_ count: Int = 1, after mark: Int, within limit: Duration = .seconds(30)) async -> Bool {
        let clock = ContinuousClock()
        let end = clock.now + limit
        while watches(after: mark) < count {
            guard clock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}
