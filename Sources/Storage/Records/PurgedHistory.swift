public import Foundation

/// What a purge of history deleted, by table.
public struct PurgedHistory: Sendable, Hashable {
    /// Activities.
    public var activities = 0
    /// Devices' copies of them (`activity_instances`).
    public var copies = 0
    /// The values their audiences let in (`activity_audience`).
    public var audience = 0
    /// Their taps.
    public var taps = 0
    /// Their settled schedule items and their timelines.
    public var schedules = 0
    /// Sends.
    public var sends = 0
    /// Pushes.
    public var pushes = 0
    /// Receipts of the sends.
    public var receipts = 0

    /// Nothing deleted.
    public init() {}

    /// Rows deleted, in all.
    public var total: Int { activities + copies + audience + taps + schedules + sends + pushes + receipts }

    /// The two purges' rows together.
    public static func + (left: PurgedHistory, right: PurgedHistory) -> PurgedHistory {
        var sum = left
        sum.activities += right.activities
        sum.copies += right.copies
        sum.audience += right.audience
        sum.taps += right.taps
        sum.schedules += right.schedules
        sum.sends += right.sends
        sum.receipts += right.receipts
        sum.pushes += right.pushes
        return sum
    }
}

/// How much history an app holds, and since when.
public struct HistorySummary: Sendable, Hashable {
    /// Activities, running or ended.
    public var activities: Int
    /// Sends.
    public var sends: Int
    /// Pushes.
    public var pushes: Int
    /// When the oldest activity started or the oldest send was made; `nil` when
    /// there is neither.
    public var oldestAt: Date?

    /// Creates a summary.
    public init(activities: Int, sends: Int, pushes: Int, oldestAt: Date?) {
        self.activities = activities
        self.sends = sends
        self.pushes = pushes
        self.oldestAt = oldestAt
    }
}
