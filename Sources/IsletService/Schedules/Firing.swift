import Foundation
import IsletCore
import IsletLog
import Storage

/// One round of firing, inside one transaction: each due item runs through the
/// same service call a request would make, and is settled as sent or dropped (with
/// the reason) in the transaction that queued its pushes. A rule that refuses an
/// item when it fires drops that item only; a database failure rolls the round back
/// (the next tick tries again).
struct Firing {
    /// The part of the store a round touches: the sends it fires (through the
    /// activity and notification services), the items it settles and the events it
    /// writes.
    typealias Stores =
        AppStore & DeviceStore & ActivityStore & ActivityTypeStore & PushQueue & PushHistory & ScheduleStore & EventStore
        & ChannelStore

    let session: any Stores
    let environment: ServiceEnvironment
    let now: Date
    /// Whether any push was queued.
    private(set) var queued = false
    /// How many timelines were renewed (or found unrenewable).
    private(set) var renewed = 0
    /// What the limits did to the pushes queued, by send, for `/metrics` once the
    /// round commits.
    private(set) var limited: [Limited] = []

    /// Pushes of one send of `appID` downgraded to priority 5, or held back.
    struct Limited: Sendable {
        let appID: String
        let downgraded: Int
        let deferred: Int
    }
    private var apps: [String: AppRecord?] = [:]

    init(session: any Stores, environment: ServiceEnvironment, now: Date) {
        self.session = session
        self.environment = environment
        self.now = now
    }

    private var lifecycle: ActivityLifecycle { environment.lifecycle }

    private mutating func app(_ id: String) throws -> AppRecord? {
        if let cached = apps[id] { return cached }
        let app = try session.app(id: id)
        apps[id] = app
        return app
    }

    /// Fires `item`.
    mutating func fire(_ item: ScheduleRecord) throws {
        guard let app = try app(item.appID) else {
            return try settle(item, .dropped, reason: ScheduleReason.refused, detail: "The app no longer exists.")
        }
        do {
            switch item.kind {
            case .start:
                let command = try decoded { try ScheduledCommand.start(item.command, app: app) }
                let result = try ActivityService.start(command, session: session, lifecycle: lifecycle, budget: environment.budget, now: now)
                limited.append(Limited(appID: app.id, downgraded: 0, deferred: result.deferred))
                try settle(item, .sent, targets: result.targets)
                if var timeline = try session.timeline(appID: app.id, activityID: command.activityID), timeline.renew {
                    // The successor's renewal counts from the start as it happened.
                    timeline.renewAt = TimelineRules.renewAt(startedAt: now, lifecycle: lifecycle, lead: environment.renewLead)
                    try session.putTimeline(timeline)
                }
            case .update, .timelineEntry:
                let activityID = try activityID(of: item)
                let command = try decoded { try ScheduledCommand.update(item.command, app: app, activityID: activityID) }
                let result = try ActivityService.update(command, session: session, lifecycle: lifecycle, budget: environment.budget, now: now)
                limited.append(Limited(appID: app.id, downgraded: result.priorityDowngraded, deferred: 0))
                try settle(item, .sent, targets: result.targets)
            case .end:
                let activityID = try activityID(of: item)
                let command = ScheduledCommand.end(
                    item.command, app: app, activityID: activityID, cause: item.timelineGeneration == nil ? .server : .scheduled)
                let result = try ActivityService.end(command, session: session, lifecycle: lifecycle, now: now)
                if result.alreadyEnded {
                    try settle(item, .dropped, reason: ScheduleReason.activityEnded, detail: "The activity had already ended.")
                } else {
                    try settle(item, .sent, targets: result.targets)
                }
                try session.settlePendingTimeline(
                    appID: app.id, activityID: activityID, status: .dropped, reason: ScheduleReason.activityEnded, now: now)
            case .notification:
                let command = try decoded { try ScheduledCommand.notification(item.command, app: app) }
                let result = try NotificationService.send(command, session: session, now: now)
                try settle(item, .sent, targets: result.targets)
            }
            queued = true
        } catch let error as ServiceError {
            try settle(item, .dropped, reason: error.reason ?? ScheduleReason.refused, detail: error.detail)
            if item.kind == .start, let activityID = item.activityID {
                try session.settlePendingTimeline(
                    appID: app.id, activityID: activityID, status: .dropped, reason: ScheduleReason.startDropped, now: now)
            }
        }
    }

    private func activityID(of item: ScheduleRecord) throws -> String {
        guard let activityID = item.activityID else { throw StoreError(.corrupt, "a scheduled \(item.kind.rawValue) names no activity") }
        return activityID
    }

    /// A stored command read back; one that no longer reads drops its item instead
    /// of blocking every later one.
    private func decoded<T>(_ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch {
            throw ServiceError(.failed, "The stored command could not be read: \(error).", reason: ScheduleReason.refused)
        }
    }

    private func settle(
        _ item: ScheduleRecord, _ status: ScheduleStatus, reason: String? = nil, detail: String? = nil, targets: Int? = nil
    ) throws {
        try session.settleSchedule(
            sequence: item.sequence, status: status, reason: reason, detail: detail, targets: targets, at: now)
        let type: EventType
        switch status {
        case .sent: type = .scheduleFired
        case .dropped: type = .scheduleDropped
        case .scheduled, .cancelled: return
        }
        var data: [String: JSONValue] = [
            "schedule_id": .string(item.scheduleID), "kind": .string(item.kind.rawValue),
            "send_at": .string(RFC3339.string(item.sendAt)),
        ]
        if let activityID = item.activityID { data["activity_id"] = .string(activityID) }
        if let reason { data["reason"] = .string(reason) }
        if let targets { data["targets"] = .integer(Int64(targets)) }
        try session.appendEvents([
            NewEvent(appID: item.appID, type: type, activityID: item.activityID, occurredAt: now, data: .object(data))
        ])
    }

    // MARK: - Renewal

    /// Renews every timeline whose renewal has come: 15 minutes (the lead) before the
    /// activity's update window closes, when entries remain past it (or its end
    /// comes after the activity's last window), the activity
    /// is ended on its devices and its successor (`id~2`, `~3`, …) started by
    /// push-to-start on each device of it holding a push-to-start token for its
    /// type, with the same attributes, the current state and the start's alert; the
    /// timeline's remaining items go to the successor.
    mutating func renewDue() throws {
        for timeline in try session.dueRenewals(now: now, limit: 50) {
            try renew(timeline)
            renewed += 1
        }
    }

    private mutating func renew(_ timeline: TimelineRecord) throws {
        var done = timeline
        done.renewAt = nil
        try session.putTimeline(done)
        let appID = timeline.appID
        guard let app = try app(appID),
            let activity = try session.lockedActivity(appID: appID, activityID: timeline.activityID),
            lifecycle.effectiveStatus(activity.status, startedAt: activity.startedAt, now: now) != .ended
        else {
            try session.settlePendingTimeline(
                appID: appID, activityID: timeline.activityID, status: .dropped, reason: ScheduleReason.activityEnded, now: now)
            return
        }
        let pending = try session.timelineItems(appID: appID, activityID: activity.activityID, generation: timeline.generation)
            .filter { $0.status == .scheduled }
        guard pending.contains(where: { outlives(activity, $0) }) else {
            return  // Everything left fits in this activity's own windows.
        }
        let holders = try session.copies(appID: appID, activityID: activity.activityID)
            .filter { $0.status != .ended }.map(\.deviceID)
        var targets = holders.isEmpty
            ? [] : try session.startTargets(appID: appID, audience: .deviceIDs(holders), activityType: activity.activityType)
        // Android copies need no push-to-start token: the successor's start reaches
        // them as a data message.
        if !holders.isEmpty, app.fcm != nil {
            targets += try session.androidStartTargets(appID: appID, audience: .deviceIDs(holders))
        }
        let renewable = Set(targets.map(\.deviceID))
        let notRenewed = holders.filter { !renewable.contains($0) }
        let alertJSON = timeline.startAlert ?? activity.startAlert
        let successorID = Self.successorID(of: activity.activityID)
        guard !renewable.isEmpty, let alertJSON, let alert = try? ScheduledCommand.alert(alertJSON) else {
            return try notRenewable(activity, holders: holders, timeline: timeline)
        }
        var start = StartActivity(
            app: app, activityID: successorID, activityType: activity.activityType, attributes: activity.attributes,
            contentState: activity.contentState, alert: alert, audience: .deviceIDs(holders.filter(renewable.contains)),
            endAt: nil, staleDate: nil, relevanceScore: nil, priority: nil, idempotency: nil)
        start.storedContent = true
        // The successor lets in whom its predecessor did.
        start.join = activity.join ?? .anyone
        do {
            let result = try ActivityService.start(start, session: session, lifecycle: lifecycle, budget: environment.budget, now: now)
            try session.copyJoinAudience(appID: appID, from: activity.activityID, to: successorID)
            limited.append(Limited(appID: start.app.id, downgraded: 0, deferred: result.deferred))
        } catch let error as ServiceError {
            environment.logger.warning(
                "timeline renewal could not start the successor", ("activity", .string(activity.activityID)),
                ("error", .string(error.detail)))
            return try notRenewable(activity, holders: holders, timeline: timeline)
        }
        _ = try ActivityService.end(
            EndActivity(app: app, activityID: activity.activityID, contentState: nil, dismissalDate: nil, cause: .renewed,
                idempotency: nil),
            session: session, lifecycle: lifecycle, now: now)
        try session.moveTimeline(appID: appID, from: activity.activityID, to: successorID)
        try session.putTimeline(TimelineRecord(
            appID: appID, activityID: successorID, generation: timeline.generation, endAt: timeline.endAt, renew: true,
            renewAt: TimelineRules.renewAt(startedAt: now, lifecycle: lifecycle, lead: environment.renewLead),
            startAlert: alertJSON, updatedAt: now))
        try session.recordRenewal(appID: appID, from: activity.activityID, to: successorID, notRenewed: notRenewed)
        queued = true
    }

    /// Whether a timeline item comes too late for `activity`: an entry once its
    /// update window has closed, an end once the activity has ended by the clock.
    private func outlives(_ activity: ActivityRecord, _ item: ScheduleRecord) -> Bool {
        switch item.kind {
        case .timelineEntry: item.sendAt >= lifecycle.updateDeadline(startedAt: activity.startedAt)
        case .end: item.sendAt >= lifecycle.expiry(startedAt: activity.startedAt)
        default: false
        }
    }

    /// No device can be renewed: the activity runs out its own windows, and the
    /// timeline's items past them are dropped.
    private func notRenewable(_ activity: ActivityRecord, holders: [String], timeline: TimelineRecord) throws {
        try session.recordRenewal(appID: timeline.appID, from: activity.activityID, to: nil, notRenewed: holders)
        for item in try session.timelineItems(appID: timeline.appID, activityID: activity.activityID, generation: timeline.generation)
        where item.status == .scheduled && outlives(activity, item) {
            try settle(item, .dropped, reason: ScheduleReason.notRenewed, detail: "No device of the activity holds a push-to-start token for \(activity.activityType).")
        }
    }

    /// `order-1` → `order-1~2`, `order-1~2` → `order-1~3`.
    static func successorID(of activityID: String) -> String {
        if let tilde = activityID.lastIndex(of: "~"), let number = Int(activityID[activityID.index(after: tilde)...]), number >= 2 {
            return "\(activityID[..<tilde])~\(number + 1)"
        }
        return activityID + "~2"
    }
}
