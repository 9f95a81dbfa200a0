public import Foundation
public import IsletCore
import IsletLog
public import Storage

/// A page of schedule items, soonest first.
public struct SchedulePage: Sendable {
    /// The items.
    public let items: [ScheduleRecord]
    /// Where the next page starts, when there may be one.
    public let nextCursor: ScheduleCursor?
}

/// Which schedule items to list.
public struct ScheduleQuery: Sendable, Hashable {
    /// Only this activity's.
    public var activityID: String?
    /// Only of this status.
    public var status: ScheduleStatus?
    /// Only of this kind.
    public var kind: ScheduleKind?
    /// Items per page.
    public var limit = 50
    /// After this item.
    public var cursor: ScheduleCursor?

    /// The first page of every item.
    public init() {}
}

/// What a cancellation found: the item as it is now, and whether this call
/// cancelled it (false: it was cancelled before).
public struct CancelOutcome: Sendable {
    /// The item.
    public let schedule: ScheduleRecord
    /// Whether this call changed it.
    public let changed: Bool
}

/// Time, owned by the server: sends held for their `send_at` (starts, updates, ends,
/// alerts), listed and cancelled, and fired when their time comes through the same
/// service calls a request makes, with timeline entries and renewals alongside.
/// Every item is in the database before the answer, and fires once: the transaction
/// that queues its pushes is the one that marks it sent.
public struct ScheduleService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = Firing.Stores & NodeCoordination

    private let environment: ServiceEnvironment

    /// How far in the past a `send_at` may lie and still be sent (at once).
    public static let pastGrace: TimeInterval = 60
    /// Items fired per transaction.
    static let batchSize = 500

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    // MARK: - Scheduling

    /// Starts an activity at `sendAt` (now, without one), with `timeline` to follow.
    public func start(
        _ command: StartActivity, sendAt: Date?, timeline: TimelinePlan? = nil
    ) async throws(ServiceError) -> Replayable<Scheduling<StartResult>> {
        let app = command.app
        try ActivityService.checkAttributes(command)
        try SendRules.requireActivityCredentials(app)
        let environment = self.environment
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let when = try Self.when(sendAt, now: now)
        let budget = environment.budget
        defer { if when != nil || timeline != nil || command.endAt != nil { environment.timersChanged() } }
        return try await environment.idempotentWrite(
            appID: app.id, idempotency: command.idempotency, now: now
        ) { (session: any Stores) in
            let startedAt = when ?? now
            if let timeline {
                try TimelineRules.check(
                    timeline, app: app, activityType: command.activityType, startedAt: startedAt, notBefore: when,
                    session: session, lifecycle: lifecycle, now: now, prefix: "timeline.")
            }
            let answer: Scheduling<StartResult>
            if let when {
                try Self.checkStart(command, at: when, session: session, lifecycle: lifecycle)
                answer = .scheduled(try Self.insert(
                    .start, activityID: command.activityID, at: when, command: ScheduledCommand.json(command),
                    appID: app.id, session: session, now: now))
            } else {
                answer = .immediate(try ActivityService.start(command, session: session, lifecycle: lifecycle, budget: budget, now: now))
            }
            if let timeline {
                _ = try TimelineRules.store(
                    timeline, appID: app.id, activityID: command.activityID, startedAt: startedAt,
                    startAlert: command.alert.map(ScheduledCommand.json), session: session, lifecycle: lifecycle,
                    renewLead: environment.renewLead, now: now)
            }
            return answer
        }
    }

    /// Updates an activity at `sendAt` (now, without one).
    public func update(_ command: UpdateActivity, sendAt: Date?) async throws(ServiceError) -> Replayable<Scheduling<ActivitySendResult>> {
        let app = command.app
        let lifecycle = environment.lifecycle
        let budget = environment.budget
        let environment = self.environment
        defer { if command.endAt != nil { environment.timersChanged() } }
        return try await send(app: app, idempotency: command.idempotency, sendAt: sendAt) { session, now in
            try ActivityService.update(command, session: session, lifecycle: lifecycle, budget: budget, now: now)
        } schedule: { session, now, when in
            let activity = try SendRules.activity(session, appID: app.id, activityID: command.activityID)
            try Self.checkLifecycle(.update, activity: activity, at: when, lifecycle: lifecycle)
            let prepared = try SchemaEnforcement.prepare(
                session: session, app: app, activityType: activity.activityType, attributes: nil,
                contentState: command.contentState, isStart: false)
            let push = LiveActivityPush(
                event: .update, contentState: prepared.wireState, alert: command.alert, staleDate: command.staleDate,
                relevanceScore: command.relevanceScore, priority: command.priority)
            // Checked to the broadcast's size on a channel; the copies holding their
            // own update token then are checked when it is sent.
            _ = try SendRules.build(
                push, bundleID: app.bundleID, now: when, lastTimestamp: nil, limit: SendRules.limit(for: activity.delivery))
            if let endAt = command.endAt {
                try SendRules.checkEndAt(endAt, startedAt: activity.startedAt, lifecycle: lifecycle, now: when)
            }
            return .scheduled(try Self.insert(
                .update, activityID: command.activityID, at: when, command: ScheduledCommand.json(command), appID: app.id,
                session: session, now: now))
        }
    }

    /// Ends an activity at `sendAt` (now, without one). An activity that has ended
    /// already answers so, as an immediate end does, and nothing is scheduled.
    public func end(_ command: EndActivity, sendAt: Date?) async throws(ServiceError) -> Replayable<Scheduling<ActivitySendResult>> {
        let app = command.app
        let lifecycle = environment.lifecycle
        return try await send(app: app, idempotency: command.idempotency, sendAt: sendAt) { session, now in
            try ActivityService.end(command, session: session, lifecycle: lifecycle, now: now)
        } schedule: { session, now, when in
            let activity = try SendRules.activity(session, appID: app.id, activityID: command.activityID)
            switch lifecycle.check(.end, status: activity.status, startedAt: activity.startedAt, now: now) {
            case .ended, .expired:
                return .immediate(try ActivityService.end(command, session: session, lifecycle: lifecycle, now: now))
            case .allowed, .pastUpdateWindow:
                break
            }
            try Self.checkLifecycle(.end, activity: activity, at: when, lifecycle: lifecycle)
            if let state = command.contentState {
                let prepared = try SchemaEnforcement.prepare(
                    session: session, app: app, activityType: activity.activityType, attributes: nil, contentState: state,
                    isStart: false)
                let push = LiveActivityPush(event: .end, contentState: prepared.wireState, dismissalDate: command.dismissalDate)
                _ = try SendRules.build(
                    push, bundleID: app.bundleID, now: when, lastTimestamp: nil,
                    limit: SendRules.limit(for: activity.delivery))
            }
            return .scheduled(try Self.insert(
                .end, activityID: command.activityID, at: when, command: ScheduledCommand.json(command), appID: app.id,
                session: session, now: now))
        }
    }

    /// Sends an alert at `sendAt` (now, without one); its audience is resolved then.
    public func notify(_ command: SendNotification, sendAt: Date?) async throws(ServiceError) -> Replayable<Scheduling<NotificationResult>> {
        try await send(app: command.app, idempotency: command.idempotency, sendAt: sendAt) { session, now in
            try NotificationService.send(command, session: session, now: now)
        } schedule: { session, now, when in
            _ = try NotificationService.check(command, now: when)
            return .scheduled(try Self.insert(
                .notification, activityID: nil, at: when, command: ScheduledCommand.json(command), appID: command.app.id,
                session: session, now: now))
        }
    }

    /// What every send with an optional `send_at` shares: the app's credentials, the
    /// rule for `send_at`, and one transaction behind the idempotency key, which runs
    /// `immediate` for a send now and `schedule` for one held until `when`.
    private func send<R: ReplayableResult>(
        app: AppRecord, idempotency: IdempotencyKey?, sendAt: Date?,
        immediate: @escaping @Sendable (_ session: any Stores, _ now: Date) throws -> R,
        schedule: @escaping @Sendable (_ session: any Stores, _ now: Date, _ when: Date) throws -> Scheduling<R>
    ) async throws(ServiceError) -> Replayable<Scheduling<R>> {
        try SendRules.requireActivityCredentials(app)
        let now = environment.clock.now()
        let when = try Self.when(sendAt, now: now)
        let answer = try await environment.idempotentWrite(
            appID: app.id, idempotency: idempotency, now: now
        ) { (session: any Stores) -> Scheduling<R> in
            guard let when else { return .immediate(try immediate(session, now)) }
            return try schedule(session, now, when)
        }
        if when != nil { environment.timersChanged() }
        return answer
    }

    /// When a send with `sendAt` goes: nil for now (no `send_at`, or one up to
    /// `pastGrace` ago), the time ahead otherwise; further back is refused.
    static func when(_ sendAt: Date?, now: Date) throws(ServiceError) -> Date? {
        guard let sendAt else { return nil }
        if sendAt > now { return sendAt }
        guard now.timeIntervalSince(sendAt) <= pastGrace else {
            throw ServiceError.invalid(
                "The field send_at is invalid: it lies more than \(Int(pastGrace)) s in the past (now is \(RFC3339.string(now))).",
                field: "send_at", "lies more than \(Int(pastGrace)) s in the past")
        }
        return nil
    }

    /// A scheduled start, checked as of its time: the payload, the schema, the end
    /// time, and that the id will be free.
    private static func checkStart(
        _ command: StartActivity, at when: Date, session: any ActivityStore & ActivityTypeStore & ScheduleStore,
        lifecycle: ActivityLifecycle
    ) throws {
        let app = command.app
        let prepared = try SchemaEnforcement.prepare(
            session: session, app: app, activityType: command.activityType,
            attributes: ActivityService.stamped(command.attributes, activityID: command.activityID),
            contentState: command.contentState, isStart: true)
        let push = LiveActivityPush(
            event: .start, contentState: prepared.wireState, attributesType: prepared.attributesType,
            attributes: prepared.attributes, alert: command.alert, staleDate: command.staleDate,
            relevanceScore: command.relevanceScore, priority: command.priority)
        _ = try SendRules.build(
            push, bundleID: app.bundleID, now: when, lastTimestamp: nil, limit: SendRules.startLimit(for: app))
        if let endAt = command.endAt {
            try SendRules.checkEndAt(endAt, startedAt: when, lifecycle: lifecycle, now: when)
        }
        // One devices created themselves does not hold the id: the start takes it.
        if let existing = try session.activity(appID: app.id, activityID: command.activityID), existing.origin != .local,
            lifecycle.effectiveStatus(existing.status, startedAt: existing.startedAt, now: when) != .ended
        {
            throw ServiceError(
                .conflict,
                "Activity \(command.activityID) is running (\(existing.status.rawValue)) and will still be at send_at; end it first or use another id.")
        }
        if let pending = try session.pendingSchedules(appID: app.id, activityID: command.activityID, kind: .start).first {
            throw ServiceError(
                .conflict,
                "Activity \(command.activityID) is already scheduled to start at \(RFC3339.string(pending.sendAt)) (\(pending.scheduleID)); cancel that first or use another id.")
        }
    }

    /// An update or end of `activity` is allowed as of `when`, or refused as an
    /// immediate one would be, naming `send_at` when the time is the cause.
    private static func checkLifecycle(
        _ action: ActivityLifecycle.Action, activity: ActivityRecord, at when: Date, lifecycle: ActivityLifecycle
    ) throws(ServiceError) {
        let id = activity.activityID
        if activity.status == .ended {
            throw ServiceError(.conflict, "Activity \(id) has ended (\(activity.endCause?.rawValue ?? "ended")); an ended activity can never be updated again.")
        }
        switch lifecycle.check(action, status: activity.status, startedAt: activity.startedAt, now: when) {
        case .allowed:
            return
        case .ended:
            throw ServiceError(.conflict, "Activity \(id) has ended.")
        case .pastUpdateWindow(let since):
            throw ServiceError.invalid(
                "The field send_at is invalid: it comes after the activity's update window closes at \(RFC3339.string(since)); devices would ignore the update.",
                field: "send_at", "comes after the activity's update window closes at \(RFC3339.string(since))")
        case .expired(let at):
            throw ServiceError.invalid(
                "The field send_at is invalid: it comes after the activity's window closes at \(RFC3339.string(at)), when it has ended by itself.",
                field: "send_at", "comes after the activity's window closes at \(RFC3339.string(at))")
        }
    }

    private static func insert(
        _ kind: ScheduleKind, activityID: String?, at when: Date, command: JSONValue, appID: String,
        session: any ScheduleStore, now: Date
    ) throws -> ScheduledSend {
        let scheduleID = ScheduleID.mint(at: now)
        try session.insertSchedules(
            appID: appID, [NewSchedule(scheduleID: scheduleID, kind: kind, activityID: activityID, sendAt: when, command: command)],
            now: now)
        return ScheduledSend(scheduleID: scheduleID, sendAt: when)
    }

    // MARK: - Reading and cancelling

    /// A page of the app's schedule items, soonest first.
    public func list(appID: String, _ query: ScheduleQuery) async throws(ServiceError) -> SchedulePage {
        let filter = ScheduleFilter(
            activityID: query.activityID, status: query.status, kind: query.kind, after: query.cursor, limit: query.limit)
        let items = try await environment.read { (session: any Stores) in
            try session.schedules(appID: appID, filter: filter)
        }
        let last = items.count == query.limit ? items.last : nil
        return SchedulePage(
            items: items, nextCursor: last.map { ScheduleCursor(sendAt: $0.sendAt.unixMilliseconds, sequence: $0.sequence) })
    }

    /// One schedule item, or `notFound`.
    public func show(appID: String, scheduleID: String) async throws(ServiceError) -> ScheduleRecord {
        guard let item = try await environment.read({ (session: any Stores) in
            try session.schedule(appID: appID, scheduleID: scheduleID)
        }) else {
            throw ServiceError(.notFound, "There is no schedule \(scheduleID).")
        }
        return item
    }

    /// Cancels an item still scheduled (again: nothing changes); one that was sent
    /// or dropped is a `conflict`. An item being fired at this moment is either
    /// cancelled or sent, never both, and the answer says which.
    public func cancel(appID: String, scheduleID: String) async throws(ServiceError) -> CancelOutcome {
        let now = environment.clock.now()
        let outcome = try await environment.write { (session: any Stores) -> CancelOutcome in
            let changed = try session.cancelSchedule(appID: appID, scheduleID: scheduleID, now: now)
            guard let item = try session.schedule(appID: appID, scheduleID: scheduleID) else {
                throw ServiceError(.notFound, "There is no schedule \(scheduleID).")
            }
            if changed, item.kind == .start, let activityID = item.activityID {
                // Its timeline follows a start that will not happen.
                try session.settlePendingTimeline(
                    appID: appID, activityID: activityID, status: .cancelled, reason: ScheduleReason.startDropped, now: now)
            }
            return CancelOutcome(schedule: item, changed: changed)
        }
        switch outcome.schedule.status {
        case .cancelled, .scheduled:
            return outcome
        case .sent, .dropped:
            let item = outcome.schedule
            throw ServiceError(
                .conflict,
                "Schedule \(scheduleID) was \(item.status.rawValue)\(item.firedAt.map { " at " + RFC3339.string($0) } ?? "") and can no longer be cancelled.")
        }
    }

    // MARK: - Firing

    /// Fires every item whose time has come (and renews the timelines due for it),
    /// once across the nodes of the database. Answers how many items it settled.
    @discardableResult
    public func fireDue() async -> Int {
        let environment = self.environment
        let now = environment.clock.now()
        let logger = environment.logger
        do {
            // Most ticks find nothing: look with a read before taking the writer.
            let due = try await environment.store.read { (session: any Stores) -> Bool in
                if let next = try session.nextScheduleTime(), next <= now { return true }
                return try !session.dueRenewals(now: now, limit: 1).isEmpty
            }
            guard due else { return 0 }
            var settled = 0
            var queued = false
            while true {
                let round = try await environment.store.write {
                    (session: any Stores) -> (settled: Int, queued: Bool, more: Bool, limited: [Firing.Limited]) in
                    guard try session.claimPeriodicJob("schedules") else { return (0, false, false, []) }
                    var firing = Firing(session: session, environment: environment, now: now)
                    try firing.renewDue()
                    let skipped = try session.skipSupersededEntries(now: now)
                    let items = try session.claimDueSchedules(now: now, limit: Self.batchSize)
                    for item in items { try firing.fire(item) }
                    return (
                        items.count + skipped + firing.renewed, firing.queued, items.count == Self.batchSize, firing.limited
                    )
                }
                for limited in round.limited {
                    environment.limitMetrics.downgraded(appID: limited.appID, count: limited.downgraded)
                    environment.limitMetrics.deferred(appID: limited.appID, count: limited.deferred)
                }
                settled += round.settled
                queued = queued || round.queued
                if !round.more { break }
            }
            if queued { environment.pushesQueued() }
            if settled > 0 { logger.info("schedule items fired", ("count", .int(settled))) }
            return settled
        } catch {
            logger.error("firing schedules failed", ("error", .string("\(error)")))
            return 0
        }
    }
}
