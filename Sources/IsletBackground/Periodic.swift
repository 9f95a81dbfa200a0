public import Foundation

/// When a periodic job of a loop is due, on the loop's clock: at the first look,
/// then once `interval` has passed since it last ran. A value: the loop asks, the
/// test reads it on made-up time.
public struct Periodic: Sendable, Equatable {
    /// Time between two runs.
    public let interval: TimeInterval
    /// When it is next due (`nil` before the first look: due at once).
    public private(set) var next: Date?

    /// A job due at the first look, then every `interval`.
    public init(every interval: TimeInterval) {
        self.interval = interval
    }

    /// Whether the job is due at `now`; when it is, it counts as run and is next due
    /// `interval` later.
    public mutating func take(at now: Date) -> Bool {
        if let next, now < next { return false }
        next = now.addingTimeInterval(interval)
        return true
    }
}
