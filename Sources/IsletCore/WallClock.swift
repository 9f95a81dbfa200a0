public import Foundation

/// A source of wall-clock time. Everything in Islet that depends on "now" (lifecycle
/// windows, schedules, token ages, log timestamps) takes one of these, so tests can
/// move time forward without sleeping.
public protocol WallClock: Sendable {
    /// The current time.
    func now() -> Date
}

/// The machine's real clock.
public struct SystemWallClock: WallClock {
    /// Creates the system clock.
    public init() {}

    /// The current time, as the operating system reports it.
    public func now() -> Date { Date() }
}
