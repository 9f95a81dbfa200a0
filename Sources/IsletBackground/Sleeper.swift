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

/// Sleeps on the system's time.
public struct SystemSleeper: Sleeper {
    /// The system's sleeper.
    public init() {}

    /// The system's time.
    public func now() -> Date { Date() }

    public func sleep(until deadline: Date, doorbell: Doorbell?) async {
        let seconds = deadline.timeIntervalSince(now())
        guard let doorbell else {
            if seconds > 0 { try? await Task.sleep(for: .seconds(seconds)) }
            return
        }
        let alarm = Alarm()
        guard doorbell.hang(alarm) else { return }
        defer { doorbell.unhang() }
        guard seconds > 0 else { return }
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds))
            alarm.fire()
        }
        await alarm.wait()
        timer.cancel()
    }

    public func block(until deadline: Date, doorbell: Doorbell?) {
        let alarm = Alarm()
        guard doorbell?.hang(alarm) ?? true else { return }
        defer { doorbell?.unhang() }
        // Again until the deadline: a condition's wait may end a little early.
        while !alarm.fired {
            let seconds = deadline.timeIntervalSince(now())
            guard seconds > 0 else { return }
            alarm.block(timeout: .seconds(seconds))
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
