public import Foundation
import IsletCore
public import Storage

/// A timeline to put on a running activity.
public struct PutTimeline: Sendable {
    /// The app, as authenticated.
    public var app: AppRecord
    /// The activity.
    public var activityID: String
    /// The entries, end and renewal.
    public var plan: TimelinePlan

    /// Creates the command.
    public init(app: AppRecord, activityID: String, plan: TimelinePlan) {
        self.app = app
        self.activityID = activityID
        self.plan = plan
    }
}

/// An activity's timeline as it stands: each entry with its status.
public struct TimelineView: Sendable {
    /// One entry.
    public struct Entry: Sendable {
        /// Its index in the timeline as put.
        public let index: Int
        /// Its schedule item.
        public let schedule: ScheduleRecord

        /// `pending`, `sent`, `skipped` (dropped: a newer entry was due too, or the
        /// activity had ended) or `cancelled`.
        public var status: String {
            switch schedule.status {
            case .scheduled: "pending"
            case .sent: "sent"
            case .dropped: "skipped"
            case .cancelled: "cancelled"
            }
        }
    }

    /// The activity.
    public let activityID: String
    /// The entries of the timeline's current version, in order.
    public let entries: [Entry]
    /// When the activity ends.
    public let endAt: Date?
    /// Whether it renews past the 8 hours.
    public let renew: Bool

    init(activityID: String, timeline: TimelineRecord?, items: [ScheduleRecord]) {
        self.activityID = activityID
        entries = items.compactMap { item in item.entryIndex.map { Entry(index: $0, schedule: item) } }
        endAt = timeline?.endAt
        renew = timeline?.renew ?? false
    }
}

/// Server-computed timelines: entries pushed as updates when their time comes
/// (only the newest of several overdue ones), an end, and renewal past the 8 hours.
public struct TimelineService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = ActivityStore & ActivityTypeStore & ScheduleStore

    private let environment: ServiceEnvironment

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// Replaces the activity's entries not yet sent (and its end) with `command`'s.
    public func put(_ command: PutTimeline) async throws(ServiceError) -> TimelineView {
        let app = command.app
        try SendRules.requireActivityCredentials(app)
        let environment = self.environment
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        defer { environment.timersChanged() }
        return try await environment.write { (session: any Stores) -> TimelineView in
            let activity = try SendRules.lockedActivity(session, appID: app.id, activityID: command.activityID)
            switch lifecycle.check(.update, status: activity.status, startedAt: activity.startedAt, now: now) {
            case .allowed:
                break
            case .ended, .expired:
                throw ServiceError(.conflict, "Activity \(activity.activityID) has ended; an ended activity has no timeline.")
            case .pastUpdateWindow(let since):
                throw ServiceError(
                    .conflict,
                    "Activity \(activity.activityID) is past its update window (it closed at \(RFC3339.string(since))); devices ignore updates now.")
            }
            let plan = command.plan
            try TimelineRules.check(
                plan, app: app, activityType: activity.activityType, startedAt: activity.startedAt, notBefore: nil,
                session: session, lifecycle: lifecycle, now: now, prefix: "")
            let previous = try session.timeline(appID: app.id, activityID: activity.activityID)
            let startAlert = previous?.startAlert ?? activity.startAlert
            if plan.renew && startAlert == nil {
                throw ServiceError.invalid(
                    "The field renew is invalid: activity \(activity.activityID) was started on the device, so Islet has no start alert to start its successor with.",
                    field: "renew", "needs an activity Islet started (its successor is started with the start's alert)")
            }
            let (record, items) = try TimelineRules.store(
                plan, appID: app.id, activityID: activity.activityID, startedAt: activity.startedAt, startAlert: startAlert,
                session: session, lifecycle: lifecycle, renewLead: environment.renewLead, now: now)
            return TimelineView(activityID: activity.activityID, timeline: record, items: items)
        }
    }

    /// The activity's timeline, or `notFound` when there is neither the activity nor
    /// a timeline for it.
    public func show(appID: String, activityID: String) async throws(ServiceError) -> TimelineView {
        try await environment.read { (session: any Stores) -> TimelineView in
            let timeline = try session.timeline(appID: appID, activityID: activityID)
            guard let timeline else {
                _ = try SendRules.activity(session, appID: appID, activityID: activityID)
                return TimelineView(activityID: activityID, timeline: nil, items: [])
            }
            let items = try session.timelineItems(appID: appID, activityID: activityID, generation: timeline.generation)
            return TimelineView(activityID: activityID, timeline: timeline, items: items)
        }
    }

    /// Cancels the entries (and end) not yet sent.
    public func clear(appID: String, activityID: String) async throws(ServiceError) {
        let now = environment.clock.now()
        try await environment.write { (session: any Stores) in
            guard var timeline = try session.timeline(appID: appID, activityID: activityID) else {
                _ = try SendRules.activity(session, appID: appID, activityID: activityID)
                return
            }
            try session.settlePendingTimeline(
                appID: appID, activityID: activityID, status: .cancelled, reason: ScheduleReason.cancelled, now: now)
            timeline.renewAt = nil
            try session.putTimeline(timeline)
        }
    }
}
