import IsletSync
public import Foundation
public import IsletCore

/// Stops hammering a host that keeps failing: after `failureThreshold` failures in a
/// row it opens for `openDuration`, then lets one probe through; the probe's success
/// closes it, its failure opens it again.
public final class CircuitBreaker: Sendable {
    /// The breaker's state.
    public enum State: Sendable, Equatable {
        case closed
        case open(until: Date)
        case halfOpen
    }

    private let failureThreshold: Int
    private let openDuration: TimeInterval
    private let clock: any WallClock
    private let state = Lock<(state: State, failures: Int, probing: Bool, openings: Int)>((.closed, 0, false, 0))

    /// Creates a closed breaker.
    public init(failureThreshold: Int = 5, openDuration: TimeInterval = 10, clock: any WallClock = SystemWallClock()) {
        self.failureThreshold = max(1, failureThreshold)
        self.openDuration = openDuration
        self.clock = clock
    }

    /// The current state (an open breaker past its time reads as half-open).
    public var current: State {
        let now = clock.now()
        return state.withLock { s in
            if case .open(let until) = s.state, now >= until { return .halfOpen }
            return s.state
        }
    }

    /// How many times it has opened.
    public var openings: Int { state.withLock { $0.openings } }

    /// Whether a request may go now; when not, how long until it may be asked again.
    public func permit() -> (allowed: Bool, retryAfter: TimeInterval) {
        // The usual case, a closed breaker, needs no clock.
        if state.withLock({ $0.state == .closed }) { return (true, 0) }
        let now = clock.now()
        return state.withLock { s in
            switch s.state {
            case .closed:
                return (true, 0)
            case .open(let until):
                if now < until { return (false, until.timeIntervalSince(now)) }
                s.state = .halfOpen
                s.probing = true
                return (true, 0)
            case .halfOpen:
                if s.probing { return (false, 0.05) }
                s.probing = true
                return (true, 0)
            }
        }
    }

    /// Records a success: closes the breaker.
    public func recordSuccess() {
        state.withLock { s in
            s.state = .closed
            s.failures = 0
            s.probing = false
        }
    }

    /// Records a failure that says the host is in trouble (503, connect failures).
    public func recordFailure() {
        let now = clock.now()
        state.withLock { s in
            s.failures += 1
            let wasProbe = s.state == .halfOpen
            s.probing = false
            if wasProbe || s.failures >= failureThreshold {
                if case .open = s.state {} else { s.openings += 1 }
                s.state = .open(until: now.addingTimeInterval(openDuration))
            }
        }
    }

    /// Records an answer that says nothing about the host's health (a 400, a 410):
    /// ends a probe without changing the failure count.
    public func recordNeutral() {
        state.withLock { s in
            if s.state == .halfOpen {
                s.state = .closed
                s.failures = 0
            }
            s.probing = false
        }
    }
}
