public import Foundation
public import IsletCore

/// A schedule item as stored: a send held for its time, or one entry (or the end)
/// of an activity's timeline.
public struct ScheduleRecord: Sendable, Hashable {
    /// The order of creation (a tie-break among items of one time).
    public var sequence: Int64
    /// The public id (`sch_…`).
    public var scheduleID: String
    /// The app.
    public var appID: String
    /// What it does.
    public var kind: ScheduleKind
    /// The activity it starts, updates or ends (none for a notification).
    public var activityID: String?
    /// When it fires.
    public var sendAt: Date
    /// Where it is.
    public var status: ScheduleStatus
    /// Why it was dropped or cancelled.
    public var reason: String?
    /// A sentence more on the reason, when there is one.
    public var detail: String?
    /// How many devices it went to, once fired.
    public var targets: Int?
    /// The command, as the service stored it.
    public var command: JSONValue
    /// When it was accepted.
    public var createdAt: Date
    /// When it fired, was dropped or was cancelled.
    public var firedAt: Date?
    /// The timeline it belongs to (its generation), for timeline entries and ends.
    public var timelineGeneration: Int64?
    /// Its index in the timeline's entries.
    public var entryIndex: Int?

    /// Creates a record.
    public init(
        sequence: Int64, scheduleID: String, appID: String, kind: ScheduleKind, activityID: String?, sendAt: Date,
        status: ScheduleStatus, reason: String?, detail: String?, targets: Int?, command: JSONValue, createdAt: Date,
        firedAt: Date?, timelineGeneration: Int64?, entryIndex: Int?
    ) {
        self.sequence = sequence
        self.scheduleID = scheduleID
        self.appID = appID
        self.kind = kind
        self.activityID = activityID
        self.sendAt = sendAt
        self.status = status
        self.reason = reason
        self.detail = detail
        self.targets = targets
        self.command = command
        self.createdAt = createdAt
        self.firedAt = firedAt
        self.timelineGeneration = timelineGeneration
        self.entryIndex = entryIndex
    }
}

/// A schedule item to add.
public struct NewSchedule: Sendable, Hashable {
    /// The public id.
    public var scheduleID: String
    /// What it does.
    public var kind: ScheduleKind
    /// The activity, if any.
    public var activityID: String?
    /// When it fires.
    public var sendAt: Date
    /// The command to run then.
    public var command: JSONValue
    /// The timeline generation it belongs to, if any.
    public var timelineGeneration: Int64?
    /// Its index among the timeline's entries.
    public var entryIndex: Int?

    /// Creates an item.
    public init(
        scheduleID: String, kind: ScheduleKind, activityID: String?, sendAt: Date, command: JSONValue,
        timelineGeneration: Int64? = nil, entryIndex: Int? = nil
    ) {
        self.scheduleID = scheduleID
        self.kind = kind
        self.activityID = activityID
        self.sendAt = sendAt
        self.command = command
        self.timelineGeneration = timelineGeneration
        self.entryIndex = entryIndex
    }
}

/// Which schedule items a listing shows: soonest first, after a cursor.
public struct ScheduleFilter: Sendable, Hashable {
    /// Only this activity's.
    public var activityID: String?
    /// Only of this status.
    public var status: ScheduleStatus?
    /// Only of this kind.
    public var kind: ScheduleKind?
    /// Only after this item in the order (its time and sequence).
    public var after: ScheduleCursor?
    /// At most this many.
    public var limit: Int

    /// A filter; by default the first 50 of every item.
    public init(
        activityID: String? = nil, status: ScheduleStatus? = nil, kind: ScheduleKind? = nil, after: ScheduleCursor? = nil,
        limit: Int = 50
    ) {
        self.activityID = activityID
        self.status = status
        self.kind = kind
        self.after = after
        self.limit = limit
    }
}

/// A place in the schedule order: an item's time and sequence.
public struct ScheduleCursor: Sendable, Hashable {
    /// The item's `send_at`, in Unix milliseconds.
    public var sendAt: Int64
    /// Its sequence.
    public var sequence: Int64

    /// A cursor after the item at `sendAt` with `sequence`.
    public init(sendAt: Int64, sequence: Int64) {
        self.sendAt = sendAt
        self.sequence = sequence
    }
}
