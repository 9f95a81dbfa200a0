public import Foundation

/// The system's time as IsletKit reads it: the one place the package reads the clock
/// or sleeps on it. `Islet.start` takes a `now` of its own (a test passes one it
/// moves) whose default is `now` here; a tap heard before any `Islet` runs is
/// stamped by it; a retry's wait sleeps here.
public enum IsletSystemClock {
    /// The wall clock's time now.
    public static let now: @Sendable () -> Date = { Date() }

    /// Sleeps `seconds` (at most a day), or until the task is cancelled.
    static func sleep(seconds: Double) async {
        try? await Task.sleep(for: .nanoseconds(Int64(min(seconds, 86_400) * 1e9)))
    }
}
