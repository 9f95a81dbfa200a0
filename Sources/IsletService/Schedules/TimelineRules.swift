import Foundation
import IsletCore
import Storage

/// What every timeline is checked against, and how one is stored: shared by
/// `PUT …/timeline` and by a start that carries a timeline.
enum TimelineRules {
    /// When a timeline with `renew` starts the successor of an activity that started
    /// at `startedAt`: `lead` before its update window closes (never before half of
    /// the window, so that a successor always lives a while).
    static func renewAt(startedAt: Date, lifecycle: ActivityLifecycle, lead: TimeInterval) -> Date {
        let window = lifecycle.windows.update
        return startedAt.addingTimeInterval(max(window - lead, window / 2))
    }

    /// Checks `plan` for an activity of `activityType` started (or starting) at
    /// `startedAt`: each entry as an update would be (payload rules, 4 KB, schema),
    /// in strictly increasing time, inside the update window unless `renew`; the end
    /// after the last entry. Every fault is named by its path (`entries[3].at`)
    /// after `prefix`.
    static func check(
        _ plan: TimelinePlan, app: AppRecord, activityType: String, startedAt: Date, notBefore: Date?,
        session: any ActivityTypeStore, lifecycle: ActivityLifecycle, now: Date, prefix: String
    ) throws {
        var faults: [ServiceError.FieldError] = []
        func fault(_ field: String, _ message: String) {
            faults.append(.init(field: prefix + field, message: message))
        }
        if plan.entries.count > TimelinePlan.maximumEntries {
            fault("entries", "must have at most \(TimelinePlan.maximumEntries) entries (it has \(plan.entries.count))")
            throw combined(faults)
        }
        let deadline = lifecycle.updateDeadline(startedAt: startedAt)
        let registered = try session.activityType(appID: app.id, name: activityType)
        for (index, entry) in plan.entries.enumerated() {
            let path = "entries[\(index)]."
            if index > 0, entry.at <= plan.entries[index - 1].at {
                fault(path + "at", "must come after entries[\(index - 1)].at (\(RFC3339.string(plan.entries[index - 1].at)))")
            }
            if let notBefore, entry.at < notBefore {
                fault(path + "at", "must not come before the start's send_at (\(RFC3339.string(notBefore)))")
            }
            if !plan.renew, entry.at >= deadline {
                fault(
                    path + "at",
                    "comes after the activity's update window closes at \(RFC3339.string(deadline)); set renew to run past it")
            }
            do {
                let prepared = try SchemaEnforcement.prepare(
                    registered: registered, app: app, activityType: activityType, attributes: nil,
                    contentState: entry.contentState, isStart: false)
                let push = LiveActivityPush(
                    event: .update, contentState: prepared.wireState, alert: entry.alert, staleDate: entry.staleDate,
                    relevanceScore: entry.relevanceScore, priority: entry.priority)
                _ = try SendRules.build(push, bundleID: app.bundleID, now: max(entry.at, now), lastTimestamp: nil)
            } catch {
                faults += error.prefixingFields(prefix + path).fields ?? []
            }
        }
        if let endAt = plan.endAt {
            if endAt <= now {
                fault("end_at", "must lie ahead (now is \(RFC3339.string(now)))")
            } else if let last = plan.entries.last, endAt < last.at {
                fault("end_at", "must not come before the last entry (\(RFC3339.string(last.at)))")
            } else if !plan.renew, endAt > lifecycle.expiry(startedAt: startedAt) {
                fault(
                    "end_at",
                    "must come before the activity's window closes at \(RFC3339.string(lifecycle.expiry(startedAt: startedAt))); set renew to run past it")
            }
        }
        if !faults.isEmpty { throw combined(faults) }
    }

    private static func combined(_ faults: [ServiceError.FieldError]) -> ServiceError {
        let detail = faults.count == 1
            ? "The field \(faults[0].field) is invalid: \(ServiceError.sentence(faults[0].message))"
            : "\(faults.count) fields are invalid: \(faults.prefix(10).map(\.field).joined(separator: ", "))\(faults.count > 10 ? ", …" : "")."
        return ServiceError(.invalid, detail, fields: faults)
    }

    /// Replaces the activity's timeline: its items not yet sent are cancelled, and
    /// the plan's entries (and end) are stored as a new generation.
    static func store(
        _ plan: TimelinePlan, appID: String, activityID: String, startedAt: Date, startAlert: JSONValue?,
        session: any ScheduleStore, lifecycle: ActivityLifecycle, renewLead: TimeInterval, now: Date
    ) throws -> (TimelineRecord, [ScheduleRecord]) {
        let previous = try session.timeline(appID: appID, activityID: activityID)
        try session.settlePendingTimeline(
            appID: appID, activityID: activityID, status: .cancelled, reason: ScheduleReason.replaced, now: now)
        let generation = (previous?.generation ?? 0) + 1
        let record = TimelineRecord(
            appID: appID, activityID: activityID, generation: generation, endAt: plan.endAt, renew: plan.renew,
            renewAt: plan.renew ? renewAt(startedAt: startedAt, lifecycle: lifecycle, lead: renewLead) : nil,
            startAlert: startAlert, updatedAt: now)
        try session.putTimeline(record)
        var items = plan.entries.enumerated().map { index, entry in
            NewSchedule(
                scheduleID: ScheduleID.mint(at: now), kind: .timelineEntry, activityID: activityID, sendAt: entry.at,
                command: ScheduledCommand.json(entry), timelineGeneration: generation, entryIndex: index)
        }
        if let endAt = plan.endAt {
            items.append(NewSchedule(
                scheduleID: ScheduleID.mint(at: now), kind: .end, activityID: activityID, sendAt: endAt, command: .object([:]),
                timelineGeneration: generation))
        }
        try session.insertSchedules(appID: appID, items, now: now)
        return (record, try session.timelineItems(appID: appID, activityID: activityID, generation: generation))
    }
}

extension ScheduledCommand {
    static func json(_ entry: TimelineEntry) -> JSONValue {
        var members: [String: JSONValue] = [:]
        members["content_state"] = entry.contentState
        members["alert"] = entry.alert.map(json)
        members["stale_date"] = entry.staleDate.map { .integer($0.unixMilliseconds) }
        members["relevance_score"] = entry.relevanceScore.map(JSONValue.double)
        members["priority"] = entry.priority.map { .integer(Int64($0)) }
        return .object(members)
    }
}
