public import Foundation
public import IsletCore
import Storage

/// A send held for its time: what a command with a future `send_at` answers.
public struct ScheduledSend: Sendable, Hashable {
    /// The schedule item.
    public let scheduleID: String
    /// When it fires.
    public let sendAt: Date

    /// Creates the answer.
    public init(scheduleID: String, sendAt: Date) {
        self.scheduleID = scheduleID
        self.sendAt = sendAt
    }
}

/// What a send with an optional `send_at` did: sent now (the send's own result), or
/// scheduled. Stored behind an `Idempotency-Key` as either.
public enum Scheduling<Immediate: ReplayableResult>: ReplayableResult {
    /// Sent at once (no `send_at`, or one that had just passed).
    case immediate(Immediate)
    /// Held until its `send_at`.
    case scheduled(ScheduledSend)

    public var accepted: Bool {
        switch self {
        case .immediate(let result): result.accepted
        case .scheduled: true
        }
    }

    public var limited: (downgraded: Int, deferred: Int) { immediate?.limited ?? (0, 0) }

    public var json: JSONValue {
        switch self {
        case .immediate(let result):
            return result.json
        case .scheduled(let send):
            return .object([
                "schedule_id": .string(send.scheduleID), "send_at": .string(RFC3339.string(send.sendAt)),
                "status": .string(ScheduleStatus.scheduled.rawValue),
            ])
        }
    }

    public init(json: JSONValue) throws {
        if let scheduleID = json["schedule_id"]?.stringValue {
            guard let text = json["send_at"]?.stringValue, let sendAt = SchemaCheck.parseDate(text) else {
                throw StoreError(.corrupt, "a stored schedule answer lacks send_at")
            }
            self = .scheduled(ScheduledSend(scheduleID: scheduleID, sendAt: sendAt))
        } else {
            self = .immediate(try Immediate(json: json))
        }
    }

    /// The immediate result, if the send was not scheduled.
    public var immediate: Immediate? {
        if case .immediate(let result) = self { return result }
        return nil
    }

    /// The schedule, if the send was scheduled.
    public var scheduled: ScheduledSend? {
        if case .scheduled(let send) = self { return send }
        return nil
    }
}

/// One entry of a timeline: an update, pushed when `at` comes.
public struct TimelineEntry: Sendable, Hashable {
    /// When it is pushed.
    public var at: Date
    /// Its content state.
    public var contentState: JSONValue?
    /// An alert shown with it.
    public var alert: PushAlert?
    /// `aps.stale-date`.
    public var staleDate: Date?
    /// `aps.relevance-score`.
    public var relevanceScore: Double?
    /// `apns-priority`.
    public var priority: Int?

    /// Creates an entry.
    public init(
        at: Date, contentState: JSONValue?, alert: PushAlert? = nil, staleDate: Date? = nil, relevanceScore: Double? = nil,
        priority: Int? = nil
    ) {
        self.at = at
        self.contentState = contentState
        self.alert = alert
        self.staleDate = staleDate
        self.relevanceScore = relevanceScore
        self.priority = priority
    }
}

/// A timeline: entries in strictly increasing time, an optional end, and whether it
/// may run past the activity's 8 hours by renewal.
public struct TimelinePlan: Sendable, Hashable {
    /// The entries, at most 1,440.
    public var entries: [TimelineEntry]
    /// When the activity ends (with the last entry's state).
    public var endAt: Date?
    /// Whether the activity is renewed to run past its update window.
    public var renew: Bool

    /// Creates a plan.
    public init(entries: [TimelineEntry], endAt: Date? = nil, renew: Bool = false) {
        self.entries = entries
        self.endAt = endAt
        self.renew = renew
    }

    /// The most entries a timeline holds: a day at one a minute.
    public static let maximumEntries = 1_440
}

/// Schedule ids: `sch_`, the creation time (12 hex digits of Unix milliseconds) and
/// 12 random hex digits. Ids made close in time sort close together, so a timeline's
/// 1,440 new ids land on a few pages of the unique index instead of 1,440 random ones.
enum ScheduleID {
    static func mint(at now: Date) -> String {
        var generator = SystemRandomNumberGenerator()
        let milliseconds = UInt64(max(0, now.unixMilliseconds)) & 0xFFFF_FFFF_FFFF
        let random = (generator.next() as UInt64) & 0xFFFF_FFFF_FFFF
        return "sch_" + hex(milliseconds, digits: 12) + hex(random, digits: 12)
    }

    private static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }
}
