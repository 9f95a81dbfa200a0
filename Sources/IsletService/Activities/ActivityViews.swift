public import Foundation
public import IsletCore
public import Storage

/// An activity as of `now`: its stored record with the lifecycle applied (an
/// activity past every window reads as ended, by expiry, before the sweep stores
/// it) and its deadlines.
public struct ActivityView: Sendable {
    /// The stored record.
    public let record: ActivityRecord
    /// Its status as of now.
    public let status: ActivityStatus
    /// When it ended (or expires, once past every window).
    public let endedAt: Date?
    /// Why it ended.
    public let endCause: EndCause?
    /// When its update window closes.
    public let updateDeadline: Date
    /// When its whole lifecycle window closes.
    public let endDeadline: Date

    init(_ record: ActivityRecord, lifecycle: ActivityLifecycle, now: Date) {
        self.record = record
        status = lifecycle.effectiveStatus(record.status, startedAt: record.startedAt, now: now)
        let expiry = lifecycle.expiry(startedAt: record.startedAt)
        endedAt = record.endedAt ?? (status == .ended ? expiry : nil)
        endCause = record.endCause ?? (status == .ended ? .expired : nil)
        updateDeadline = lifecycle.updateDeadline(startedAt: record.startedAt)
        endDeadline = expiry
    }
}

/// An activity with every device's copy, as of now.
public struct ActivityDetail: Sendable {
    /// The activity.
    public let activity: ActivityView
    /// Each device's copy, by device id (ended by expiry when the activity is past
    /// every window).
    public let devices: [CopyRecord]
    /// The app's budget.
    public let budget: SendBudget
    /// Each copy's priority-10 updates of the last hour, by device id.
    public let usage: [String: BudgetUsage]
    /// Its broadcast channels (with channel delivery), which the app subscribes a
    /// copy it starts itself to.
    public var channels: [ChannelRecord] = []
    /// Its newest sends to its copies, newest first, with what they came to.
    public var sends: [SendSummary] = []

    /// The priority-10 updates a copy gets in an hour, and what is left of them now.
    public func priority10(deviceID: String) -> (perHour: Int, remaining: Int) {
        let copy = usage[deviceID] ?? BudgetUsage(used: 0, frequentUpdates: nil)
        return (
            budget.priority10Limit(frequentUpdates: copy.frequentUpdates),
            budget.priority10Remaining(used: copy.used, frequentUpdates: copy.frequentUpdates)
        )
    }
}

/// One page of activities.
public struct ActivityPage: Sendable {
    /// The activities, newest first.
    public let items: [ActivityView]
    /// The cursor of the next page, when this one is full.
    public let nextCursor: Int64?
}

/// Which activities to list.
public struct ActivityQuery: Sendable {
    /// Only this status (as of now).
    public var status: ActivityStatus?
    /// Only this type.
    public var activityType: String?
    /// The `nextCursor` of the previous page.
    public var cursor: Int64?
    /// At most this many (1 to 200).
    public var limit: Int

    /// Creates a query.
    public init(status: ActivityStatus? = nil, activityType: String? = nil, cursor: Int64? = nil, limit: Int = 50) {
        self.status = status
        self.activityType = activityType
        self.cursor = cursor
        self.limit = limit
    }
}
