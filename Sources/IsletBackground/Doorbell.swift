import IsletSync

/// Wakes a sleeping loop early: new work was queued, answers arrived, a stop was
/// asked for. A ring is kept until a sleep takes it, so that a ring while the loop
/// was busy ends its next sleep at once; many rings before one sleep are one.
///
/// A doorbell belongs to one loop: one sleep at a time hangs on it. A second sleep
/// hung beside the first would lose its wake-up to the first's (the ring is kept for
/// one sleep only), so it stops the process instead of sleeping through it.
public final class Doorbell: Sendable {
    private struct State {
        var rung = false
        var alarm: Alarm?
    }

    private let state = Lock(State())

    /// A doorbell not rung.
    public init() {}

    /// Rings: the sleep in progress ends, or else the next one ends at once.
    public func ring() {
        let alarm = state.withLock { state -> Alarm? in
            state.rung = true
            return state.alarm
        }
        alarm?.fire()
    }

    /// Whether it rang since the last sleep took a ring (takes nothing).
    public var isRung: Bool { state.withLock { $0.rung } }

    /// Hangs `alarm` on the bell for one sleep; answers false, taking the ring, when
    /// it had rung already (the sleep ends at once). Only one sleep at a time.
    func hang(_ alarm: Alarm) -> Bool {
        state.withLock { state -> Bool in
            precondition(state.alarm == nil, "Two sleeps at once on one Doorbell: it wakes one sleeper; give each loop its own")
            if state.rung {
                state.rung = false
                return false
            }
            state.alarm = alarm
            return true
        }
    }

    /// Takes the alarm off after the sleep, and the ring that may have ended it: the
    /// work that follows the sleep sees what the ringer wrote before ringing.
    func unhang() {
        state.withLock { state in
            state.alarm = nil
            state.rung = false
        }
    }
}
