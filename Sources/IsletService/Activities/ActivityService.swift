import Foundation
import IsletCore
import IsletLog
public import Storage

/// Live Activities from the server's side: start one remotely on an audience's
/// devices, update and end it on every device holding it, end those whose end time
/// has come, and read activities and their pushes back. Every send is checked
/// (lifecycle, schema, payload rules), built once, and queued in the same
/// transaction that records it.
public struct ActivityService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores =
        AppStore & DeviceStore & ActivityStore & ActivityTypeStore & PushQueue & PushHistory & NodeCoordination & EventStore
        & ChannelStore & IdempotencyStore

    let environment: ServiceEnvironment
    /// Broadcast channels, for starts on one.
    private let channels: ChannelService?

    /// Creates the service; without `channels`, a start on a channel is refused.
    public init(environment: ServiceEnvironment, channels: ChannelService? = nil) {
        self.environment = environment
        self.channels = channels
    }

    // MARK: - Start

    /// Starts an activity: one push-to-start per device of the audience that holds a
    /// token for its type (subscribing it to the activity's channel, with channel
    /// delivery).
    public func start(_ command: StartActivity) async throws(ServiceError) -> Replayable<StartResult> {
        let app = command.app
        try Self.checkAttributes(command)
        try SendRules.requireActivityCredentials(app)
        let command = try await prepareChannels(command)
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let budget = environment.budget
        do {
            let answer = try await environment.idempotentWrite(
                appID: app.id, idempotency: command.idempotency, now: now
            ) { (session: any Stores) in
                try Self.start(command, session: session, lifecycle: lifecycle, budget: budget, now: now)
            }
            if command.endAt != nil { environment.timersChanged() }
            return answer
        } catch {
            // The channels made for a start that did not happen are deleted again.
            await discardChannels(of: command)
            throw error
        }
    }

    /// Deletes the channels Islet created for `command`'s start, which failed.
    public func discardChannels(of command: StartActivity) async {
        guard let created = command.channelPlan?.created, !created.isEmpty, let channels else { return }
        await channels.discard(created, app: command.app)
    }

    /// `command` with the channels it uses made ready (see `ChannelService.plan`):
    /// created at APNs before the start's transaction, which no network call holds
    /// open. A retry of an answered request needs none (its answer is replayed).
    public func prepareChannels(_ command: StartActivity) async throws(ServiceError) -> StartActivity {
        guard command.delivery != .tokens, command.channelPlan == nil else { return command }
        if command.audience == nil, command.delivery != .channel {
            throw ServiceError.invalid(
                "A start needs an audience unless its delivery is channel.", field: "audience", "is required")
        }
        guard let channels else {
            throw ServiceError(.unavailable, "This server has no channel management API configured.")
        }
        // A retry of an answered request is replayed; a start the transaction would
        // refuse for its content makes no channel first.
        let since = environment.clock.now().addingTimeInterval(-environment.idempotencyWindow)
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let answered = try await environment.read { (session: any Stores) -> Bool in
            if let idempotency = command.idempotency,
                try session.idempotentAnswer(appID: command.app.id, key: idempotency.key, since: since) != nil
            {
                return true
            }
            _ = try Self.prepareStart(command, session: session, lifecycle: lifecycle, now: now)
            return false
        }
        if answered { return command }
        var prepared = command
        prepared.channelPlan = try await channels.plan(for: command)
        return prepared
    }

    /// A client's start may not set `islet_activity_id` to anything but the
    /// activity's id: Islet sets it, and a device reports its activity by it.
    static func checkAttributes(_ command: StartActivity) throws(ServiceError) {
        if let given = command.attributes?["islet_activity_id"], given != .string(command.activityID) {
            let message = "is set by Islet to the activity id; leave it out"
            throw .invalid(
                "The field attributes.islet_activity_id is invalid: \(ServiceError.sentence(message))",
                field: "attributes.islet_activity_id", message)
        }
    }

    /// The attributes of a start, with `islet_activity_id` set to its activity id.
    static func stamped(_ attributes: JSONValue?, activityID: String) -> JSONValue? {
        guard case .object(var members)? = attributes else { return attributes }
        members["islet_activity_id"] = .string(activityID)
        return .object(members)
    }

    /// Starts an activity in `session` (see `start(_:)`): for a request, and for a
    /// scheduled start or a renewal when its time comes.
    static func start(
        _ command: StartActivity,
        session: any DeviceStore & ActivityStore & ActivityTypeStore & PushQueue & PushHistory & EventStore & ChannelStore,
        lifecycle: ActivityLifecycle, budget defaults: SendBudget, now: Date
    ) throws -> StartResult {
        let app = command.app
        try SendRules.requireActivityCredentials(app)
        let appID = app.id
        let activityID = command.activityID
        let activityType = command.activityType
        let (prepared, push, built) = try Self.prepareStart(command, session: session, lifecycle: lifecycle, now: now)
        // An id held only by an activity devices created themselves is taken: its
        // copies end (cause `replaced`), so that no device can squat an id the
        // backend means to start.
        if let local = try Self.runningLocal(
            try session.activity(appID: appID, activityID: activityID), lifecycle: lifecycle, now: now)
        {
            try Self.replaceLocal(local, appID: appID, session: session, now: now)
        }
        let join = command.effectiveJoin
        let plan = command.channelPlan.flatMap { $0.delivery == .channel ? $0 : nil }
        guard let audience = command.audience else {
            guard let plan else {
                throw ServiceError.invalid("A start needs an audience.", field: "audience", "is required")
            }
            // Started by the app on its devices, subscribed to the channel.
            try session.insertActivity(
                appID: appID, activityID: activityID, activityType: activityType, origin: .remote,
                attributes: prepared.attributes, contentState: prepared.contentState, lastTimestamp: built.timestamp,
                endAt: command.endAt, replacing: true, now: now)
            try session.setJoin(appID: appID, activityID: activityID, rule: join, adding: JoinAudience())
            try Self.assign(plan, appID: appID, activityID: activityID, session: session, lifecycle: lifecycle, now: now)
            try session.appendEvents([NewEvent(
                appID: appID, type: .activityStarted, activityID: activityID, occurredAt: now,
                data: [
                    "activity_id": .string(activityID), "activity_type": .string(activityType), "origin": "remote",
                    "targets": 0, "deferred": 0, "delivery": "channel",
                ])])
            var result = StartResult(activityID: activityID, targets: 0, warnings: prepared.warnings)
            result.delivery = .channel
            result.deliveryReason = command.channelPlan?.reason
            result.channels = plan.channels.values.map(\.channelID).sorted()
            return result
        }
        var warnings = prepared.warnings
        var targets = try session.startTargets(appID: appID, audience: audience, activityType: activityType)
        // Android devices need no push-to-start token: the start is a data message,
        // sent with the app's FCM service account (iOS devices need its APNs key).
        var android = try session.androidStartTargets(appID: appID, audience: audience)
        if app.fcm == nil, !android.isEmpty {
            warnings.append(
                "\(android.count) android device(s) in the audience were left out: the app has no FCM service account.")
            android = []
        }
        if app.credentials == nil, !targets.isEmpty {
            warnings.append("\(targets.count) iOS device(s) in the audience were left out: the app has no APNs credentials.")
            targets = []
        }
        guard !targets.isEmpty || !android.isEmpty else {
            let size = try session.audienceSize(appID: appID, audience: audience)
            var detail = size == 0
                ? "The audience matches no registered device."
                : "None of the \(size) device(s) in the audience holds a push-to-start token for \(activityType) or is an android device FCM can reach."
            if size > 0, !warnings.isEmpty { detail += " " + warnings.joined(separator: " ") }
            throw ServiceError.invalid(
                detail, field: "audience.\(audience.field)", "names no device that can start \(activityType)",
                reason: ScheduleReason.noTargets)
        }
        // The Android data message is checked (FCM's size) before anything is written.
        var androidContent: SendContent?
        var androidData: AndroidDataPush?
        if !android.isEmpty {
            let data = AndroidDataPush(
                event: .start, activityID: activityID, activityType: activityType, contentState: prepared.wireState,
                attributes: prepared.attributes, staleDate: command.staleDate, alerted: command.alert != nil)
            androidData = data
            androidContent = try AndroidSends.content(
                Receipts.stamping(data, receipts: prepared.receipts, sendID: Receipts.widest), event: .start,
                timestamp: built.timestamp, expiration: built.expiration, now: now)
        }
        let deferred = try Self.spaceStarts(
            &targets, appID: appID, budget: app.budget.applied(to: defaults), session: session, now: now)
        try session.insertActivity(
            appID: appID, activityID: activityID, activityType: activityType, origin: .remote,
            attributes: prepared.attributes, contentState: prepared.contentState, lastTimestamp: built.timestamp,
            endAt: command.endAt, replacing: true, now: now)
        // Under `audience`, the start's audience is kept: a device it resolves to
        // may join later (one that had no push-to-start token yet, say). The devices
        // it targets hold a copy already: a list of device ids keeps only the others.
        var kept = JoinAudience()
        if join == .audience {
            if case .deviceIDs(let ids) = audience {
                let targeted = Set(targets.map(\.deviceID)).union(android.map(\.deviceID))
                kept = JoinAudience(deviceIDs: ids.filter { !targeted.contains($0) })
            } else {
                kept = JoinAudience(audience)
            }
        }
        try session.setJoin(appID: appID, activityID: activityID, rule: join, adding: kept)
        // With channel delivery, each device that can take a channel is subscribed
        // to its environment's; the others get their own update token.
        var tokenTargets = targets
        var channelTargets: [APNsEnvironment: [PushTarget]] = [:]
        if let plan {
            tokenTargets = []
            for target in targets {
                if target.takesChannels, plan.channels[target.environment] != nil {
                    channelTargets[target.environment, default: []].append(target)
                } else {
                    tokenTargets.append(target)
                }
            }
        }
        // Each group's start is one send, which makes the group's copies and
        // reaches them by windows; a start held back goes as a row of its own.
        // With receipts, each group's payload is built again to name its send.
        let receipts = prepared.receipts
        var groups: [(targets: [PushTarget], content: SendContent, push: LiveActivityPush, limit: PayloadLimit?)] = []
        if !tokenTargets.isEmpty {
            groups.append((tokenTargets, SendRules.content(built, event: .start), push, SendRules.startLimit(for: app)))
        }
        for (environment, group) in channelTargets.sorted(by: { $0.key.rawValue < $1.key.rawValue }) {
            var subscribing = push
            subscribing.inputPushChannel = plan?.channels[environment]?.apnsChannelID
            let builtForChannel = try SendRules.build(
                Receipts.stamping(subscribing, receipts: receipts, sendID: Receipts.widest), bundleID: app.bundleID,
                now: now, lastTimestamp: nil)
            groups.append((group, SendRules.content(builtForChannel, event: .start), subscribing, nil))
        }
        var sendIDs: [Int64] = []
        for group in groups {
            let restamp: ((Int64) throws -> Data)? = receipts ? { sendID in
                try SendRules.build(
                    Receipts.stamping(group.push, receipts: true, sendID: sendID), bundleID: app.bundleID, now: now,
                    lastTimestamp: nil, limit: group.limit
                ).payload
            } : nil
            let sendID = try Receipts.insertSend(
                group.content, restamp: restamp, appID: appID, activityID: activityID, session: session, now: now)
            try session.insertPendingCopies(
                appID: appID, activityID: activityID, targets: group.targets, startSendID: sendID, now: now)
            sendIDs.append(sendID)
        }
        if let plan {
            try session.subscribeCopies(
                appID: appID, activityID: activityID, deviceIDs: channelTargets.values.flatMap { $0.map(\.deviceID) })
            try Self.assign(plan, appID: appID, activityID: activityID, session: session, lifecycle: lifecycle, now: now)
        }
        for (group, sendID) in zip(groups, sendIDs) {
            let deferredTargets = group.targets.filter { $0.deferredUntil != nil }
            if !deferredTargets.isEmpty {
                try session.enqueuePushes(
                    sendID: sendID, appID: appID, activityID: activityID, activityType: activityType, event: .start,
                    tokenKind: .pushToStart, targets: deferredTargets, now: now, mintID: APNsMessageID.mint)
            }
            try session.queueToCopies(
                sendID: sendID, appID: appID, activityID: activityID, activityType: activityType, kind: .pushToStart,
                now: now)
        }
        if let content = androidContent, let data = androidData {
            let restamp: ((Int64) throws -> Data)? = receipts ? { sendID in
                try AndroidSends.content(
                    Receipts.stamping(data, receipts: true, sendID: sendID), event: .start, timestamp: built.timestamp,
                    expiration: built.expiration, now: now
                ).payload
            } : nil
            let sendID = try Receipts.insertSend(
                content, restamp: restamp, appID: appID, activityID: activityID, session: session, now: now)
            try session.insertAndroidCopies(
                appID: appID, activityID: activityID, deviceIDs: android.map(\.deviceID), startSendID: sendID, now: now)
            try session.queueToCopies(
                sendID: sendID, appID: appID, activityID: activityID, activityType: activityType, kind: .fcm, now: now)
        }
        if command.channelPlan?.nearLimit == true {
            try session.appendEvents([NewEvent(
                appID: appID, type: .channelLimitNear, activityID: activityID, occurredAt: now,
                data: [
                    "activity_id": .string(activityID), "delivery": "tokens",
                    "reason": .string(command.channelPlan?.reason ?? ""),
                ])])
        }
        if let alert = command.alert {
            try session.setStartAlert(appID: appID, activityID: activityID, alert: ScheduledCommand.json(alert))
        }
        try session.appendEvents([NewEvent(
            appID: appID, type: .activityStarted, activityID: activityID, occurredAt: now,
            data: [
                "activity_id": .string(activityID), "activity_type": .string(activityType), "origin": "remote",
                "targets": .integer(Int64(targets.count + android.count)), "deferred": .integer(Int64(deferred)),
                "delivery": .string(plan == nil ? "tokens" : "channel"), "android_targets": .integer(Int64(android.count)),
            ])])
        var result = StartResult(
            activityID: activityID, targets: targets.count + android.count, deferred: deferred, warnings: warnings)
        result.androidTargets = android.count
        result.deliveryReason = command.channelPlan?.reason
        if let plan {
            result.delivery = .channel
            result.channels = plan.channels.values.map(\.channelID).sorted()
            result.channelTargets = channelTargets.values.reduce(0) { $0 + $1.count }
        }
        return result
    }

    /// The start's content checked against its type's schema, its push, and the push
    /// built by the wire rules; its end time checked against the windows.
    static func prepareStart(
        _ command: StartActivity, session: any ActivityTypeStore, lifecycle: ActivityLifecycle, now: Date
    ) throws -> (PreparedContent, LiveActivityPush, BuiltPush) {
        let app = command.app
        let stamped = Self.stamped(command.attributes, activityID: command.activityID)
        let prepared = try SchemaEnforcement.prepare(
            session: session, app: app, activityType: command.activityType, attributes: stamped,
            contentState: command.contentState, isStart: true, storedState: command.storedContent)
        let push = LiveActivityPush(
            event: .start, contentState: prepared.wireState, attributesType: prepared.attributesType,
            attributes: prepared.attributes, alert: command.alert, staleDate: command.staleDate,
            relevanceScore: command.relevanceScore, priority: command.priority)
        // With receipts, built to the widest send id it may carry: the payload of
        // each of its sends, naming its own, is no larger.
        let built = try SendRules.build(
            Receipts.stamping(push, receipts: prepared.receipts, sendID: Receipts.widest), bundleID: app.bundleID,
            now: now, lastTimestamp: nil, limit: SendRules.startLimit(for: app))
        if let endAt = command.endAt {
            try SendRules.checkEndAt(endAt, startedAt: now, lifecycle: lifecycle, now: now)
        }
        return (prepared, push, built)
    }

    /// Gives the plan's channels to the activity; `conflict` when another running
    /// activity took one meanwhile.
    static func assign(
        _ plan: ChannelPlan, appID: String, activityID: String, session: any ChannelStore, lifecycle: ActivityLifecycle,
        now: Date
    ) throws {
        let taken = try session.assignChannels(
            appID: appID, activityID: activityID, channelIDs: plan.channels.values.map(\.channelID).sorted(),
            expiredBy: now.addingTimeInterval(-lifecycle.windows.total))
        if let channelID = taken.first {
            throw ServiceError(.conflict, "Channel \(channelID) carries another activity, which is running; end it or use another channel.")
        }
    }

    /// Holds back the start to each target whose device had all the starts it may
    /// have in the last hour (counting those already held back to later): its push
    /// waits until the device may take another. Answers how many were held back.
    static func spaceStarts(
        _ targets: inout [PushTarget], appID: String, budget: SendBudget, session: any PushHistory, now: Date
    ) throws -> Int {
        let times = try session.startTimes(
            appID: appID, deviceIDs: targets.map(\.deviceID), since: now.addingTimeInterval(-SendBudget.window))
        guard !times.isEmpty else { return 0 }
        var deferred = 0
        for index in targets.indices {
            guard let recent = times[targets[index].deviceID] else { continue }
            let next = budget.nextStart(after: recent, now: now)
            if next > now {
                targets[index].deferredUntil = next
                deferred += 1
            }
        }
        return deferred
    }

    // MARK: - Update and end

    /// Sends a new content state to every device holding the activity, replacing its
    /// updates still queued.
    public func update(_ command: UpdateActivity) async throws(ServiceError) -> Replayable<ActivitySendResult> {
        let app = command.app
        try SendRules.requireActivityCredentials(app)
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let budget = environment.budget
        let answer = try await environment.idempotentWrite(
            appID: app.id, idempotency: command.idempotency, now: now
        ) { (session: any Stores) in
            try Self.update(command, session: session, lifecycle: lifecycle, budget: budget, now: now)
        }
        if command.endAt != nil { environment.timersChanged() }
        return answer
    }

    /// Updates an activity in `session` (see `update(_:)`).
    static func update(
        _ command: UpdateActivity, session: any ActivityStore & ActivityTypeStore & PushQueue & PushHistory & EventStore & ChannelStore,
        lifecycle: ActivityLifecycle, budget defaults: SendBudget, now: Date
    ) throws -> ActivitySendResult {
        let app = command.app
        try SendRules.requireActivityCredentials(app)
        let appID = app.id
        let activityID = command.activityID
        let activity = try SendRules.lockedActivity(session, appID: appID, activityID: activityID)
        switch lifecycle.check(.update, status: activity.status, startedAt: activity.startedAt, now: now) {
        case .allowed:
            break
        case .ended:
            throw ServiceError(
                .conflict,
                "Activity \(activityID) has ended (\(activity.endCause?.rawValue ?? "ended")); an ended activity can never be updated again.",
                reason: ScheduleReason.activityEnded)
        case .expired(let at):
            throw ServiceError(
                .conflict,
                "Activity \(activityID) ended when its lifecycle window closed at \(RFC3339.string(at)); an ended activity can never be updated again.",
                reason: ScheduleReason.activityEnded)
        case .pastUpdateWindow(let since):
            throw ServiceError(
                .conflict,
                "Activity \(activityID) is past its update window (it closed at \(RFC3339.string(since))); devices ignore updates now. It can still be ended.",
                reason: ScheduleReason.pastUpdateWindow)
        }
        let prepared = try SchemaEnforcement.prepare(
            session: session, app: app, activityType: activity.activityType, attributes: nil,
            contentState: command.contentState, isStart: false)
        let push = LiveActivityPush(
            event: .update, contentState: prepared.wireState, alert: command.alert, staleDate: command.staleDate,
            relevanceScore: command.relevanceScore, priority: command.priority)
        // Each way the update goes takes its own size: the broadcast on a channel,
        // each copy's own update token (see `SendRules.checkTokenCopies`), FCM's data
        // message (see `sendToCopies`).
        // With receipts, checked with the widest send id stamped (see `prepareStart`).
        let checked = Receipts.stamping(push, receipts: prepared.receipts, sendID: Receipts.widest)
        let built = try SendRules.build(
            checked, bundleID: app.bundleID, now: now, lastTimestamp: activity.lastTimestamp,
            limit: SendRules.limit(for: activity.delivery))
        try SendRules.checkTokenCopies(checked, built: built, activity: activity, appID: appID, session: session)
        if let endAt = command.endAt {
            try SendRules.checkEndAt(endAt, startedAt: activity.startedAt, lifecycle: lifecycle, now: now)
        }
        // Starts, ends and updates with an alert always go as asked; the budget is
        // for the quiet updates.
        let budget = built.priority == .immediate && command.alert == nil ? app.budget.applied(to: defaults) : nil
        // An app without a service account sends nothing to Android devices.
        let android = app.fcm == nil ? nil : AndroidDataPush(
            event: .update, activityID: activityID, activityType: activity.activityType, contentState: prepared.wireState,
            staleDate: command.staleDate, alerted: command.alert != nil)
        let stamp = Self.stamp(push, prepared: prepared, bundleID: app.bundleID, activity: activity, now: now)
        return try Self.sendToCopies(
            built, android: android, stamp: stamp, event: .update, activity: activity, appID: appID,
            warnings: prepared.warnings, session: session, budget: budget, now: now
        ) {
            if let endAt = command.endAt { try session.setEndAt(appID: appID, activityID: activityID, endAt: endAt) }
            try session.recordUpdate(
                appID: appID, activityID: activityID, contentState: prepared.contentState!, timestamp: built.timestamp!,
                now: now)
        }
    }

    /// Ends the activity on every device holding it (with the last content state
    /// when the command has none), dropping its starts and updates still queued. An
    /// activity that had already ended answers so, and nothing is sent.
    public func end(_ command: EndActivity) async throws(ServiceError) -> Replayable<ActivitySendResult> {
        let app = command.app
        try SendRules.requireActivityCredentials(app)
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        return try await environment.idempotentWrite(
            appID: app.id, idempotency: command.idempotency, now: now
        ) { (session: any Stores) in
            try Self.end(command, session: session, lifecycle: lifecycle, now: now)
        }
    }

    /// Ends every activity whose end time has come, as an end command would (the
    /// last content state, cause `scheduled`). Answers how many.
    @discardableResult
    public func endDue() async -> Int {
        let now = environment.clock.now()
        let lifecycle = environment.lifecycle
        let logger = environment.logger
        do {
            // Most ticks find nothing: look with a read before taking the writer.
            guard try await !environment.store.read({ (session: any Stores) in
                try session.dueScheduledEnds(now: now, limit: 1)
            }).isEmpty else { return 0 }
            let ended = try await environment.store.write { (session: any Stores) -> Int in
                // Once across nodes: another node ending them now skips its turn.
                guard try session.claimPeriodicJob("scheduled-ends") else { return 0 }
                var ended = 0
                for (appID, activityID) in try session.dueScheduledEnds(now: now, limit: 500) {
                    guard let app = try session.app(id: appID) else { continue }
                    do {
                        _ = try Self.end(
                            EndActivity(
                                app: app, activityID: activityID, contentState: nil, dismissalDate: nil, cause: .scheduled,
                                idempotency: nil),
                            session: session, lifecycle: lifecycle, now: now)
                    } catch let error as StoreError {
                        // The database's own failure ends the transaction (it is
                        // run again, or the next tick tries again).
                        throw error
                    } catch {
                        // A payload that can no longer be built still ends the
                        // activity, so that it is not tried again every tick.
                        try session.endActivity(
                            appID: appID, activityID: activityID, cause: .scheduled, contentState: nil, timestamp: nil, at: now)
                        try session.appendEvents([Self.ended(appID: appID, activityID: activityID, cause: .scheduled, targets: 0, at: now)])
                        logger.warning("scheduled end sent nothing", ("app", .string(appID)), ("error", .string("\(error)")))
                    }
                    ended += 1
                }
                return ended
            }
            if ended > 0 {
                environment.pushesQueued()
                logger.info("activities ended at their end time", ("count", .int(ended)))
            }
            return ended
        } catch {
            logger.error("scheduled ends failed", ("error", .string("\(error)")))
            return 0
        }
    }

    /// Ends, by the clock, every activity past ActivityKit's windows that nothing
    /// ended (started more than the lifecycle's total ago; the device has ended it):
    /// its copies end (cause `expired`), its queued starts and updates are dropped
    /// (`push.dropped`), and `activity.ended` says so in the shape every end has
    /// (``ended(appID:activityID:cause:targets:at:)``, no targets: nothing is sent).
    /// Once across the nodes of a shared database. Answers how many.
    @discardableResult
    public func expireOverdue() async -> Int {
        let now = environment.clock.now()
        let total = environment.lifecycle.windows.total
        do {
            let expired = try await environment.store.write { (session: any Stores) -> Int in
                guard try session.claimPeriodicJob("expiry") else { return 0 }
                let ended = try session.expireActivities(startedBefore: now.addingTimeInterval(-total), total: total, now: now)
                try session.appendEvents(
                    ended.droppedPushes.map { NewEvent.pushDropped($0, at: now) }
                        + ended.activities.map { Self.ended(appID: $0.appID, activityID: $0.activityID, cause: .expired, targets: 0, at: now) })
                return ended.activities.count
            }
            if expired > 0 { environment.logger.info("activities ended by the clock", ("count", .int(expired))) }
            return expired
        } catch {
            environment.logger.error("ending activities by the clock failed", ("error", .string("\(error)")))
            return 0
        }
    }

    /// Ends an activity in `session` (see `end(_:)`).
    static func end(
        _ command: EndActivity, session: any ActivityStore & ActivityTypeStore & PushQueue & PushHistory & EventStore & ChannelStore,
        lifecycle: ActivityLifecycle, now: Date
    ) throws -> ActivitySendResult {
        let app = command.app
        let appID = app.id
        let activityID = command.activityID
        let activity = try SendRules.lockedActivity(session, appID: appID, activityID: activityID)
        switch lifecycle.check(.end, status: activity.status, startedAt: activity.startedAt, now: now) {
        case .ended, .expired:
            return ActivitySendResult(activityID: activityID, targets: 0, superseded: 0, warnings: [], alreadyEnded: true)
        case .allowed, .pastUpdateWindow:
            break
        }
        let prepared = try SchemaEnforcement.prepare(
            session: session, app: app, activityType: activity.activityType, attributes: nil,
            contentState: command.contentState ?? activity.contentState, isStart: false,
            storedState: command.contentState == nil)
        let push = LiveActivityPush(event: .end, contentState: prepared.wireState, dismissalDate: command.dismissalDate)
        let checked = Receipts.stamping(push, receipts: prepared.receipts, sendID: Receipts.widest)
        let built = try SendRules.build(
            checked, bundleID: app.bundleID, now: now, lastTimestamp: activity.lastTimestamp,
            limit: SendRules.limit(for: activity.delivery))
        try SendRules.checkTokenCopies(checked, built: built, activity: activity, appID: appID, session: session)
        let android = app.fcm == nil ? nil : AndroidDataPush(
            event: .end, activityID: activityID, activityType: activity.activityType, contentState: prepared.wireState,
            dismissalDate: command.dismissalDate)
        let result = try sendToCopies(
            built, android: android,
            stamp: Self.stamp(push, prepared: prepared, bundleID: app.bundleID, activity: activity, now: now),
            event: .end, activity: activity, appID: appID, warnings: prepared.warnings, session: session, now: now
        ) {
            try session.endActivity(
                appID: appID, activityID: activityID, cause: command.cause, contentState: prepared.contentState,
                timestamp: built.timestamp, at: now)
            // A push-to-start still waiting would start an activity that is over.
            let dropped = try session.dropQueuedPushes(
                appID: appID, activityID: activityID, events: [.start], reason: "ActivityEnded", now: now)
            try session.appendEvents(dropped.map { NewEvent.pushDropped($0, at: now) })
        }
        try session.appendEvents([
            Self.ended(appID: appID, activityID: activityID, cause: command.cause, targets: result.targets, at: now)
        ])
        return result
    }

    /// The activity holding an id a start wants, when devices created it themselves
    /// and it is running (the start takes the id); `nil` when none runs. Any other
    /// running activity is a `409`.
    static func runningLocal(_ existing: ActivityRecord?, lifecycle: ActivityLifecycle, now: Date) throws(ServiceError)
        -> ActivityRecord?
    {
        guard let existing, lifecycle.effectiveStatus(existing.status, startedAt: existing.startedAt, now: now) != .ended
        else { return nil }
        guard existing.origin == .local else {
            throw ServiceError(
                .conflict,
                "Activity \(existing.activityID) is already running (\(existing.status.rawValue)); end it first or use another id.",
                reason: ScheduleReason.activityRunning)
        }
        return existing
    }

    /// Ends a local activity whose id a start takes: its copies end (cause
    /// `replaced`), what is queued for it is dropped, and `activity.ended` says so.
    static func replaceLocal(
        _ local: ActivityRecord, appID: String, session: any ActivityStore & PushQueue & EventStore, now: Date
    ) throws {
        let activityID = local.activityID
        let copies = try session.copies(appID: appID, activityID: activityID).filter { $0.status != .ended }.count
        try session.endActivity(appID: appID, activityID: activityID, cause: .replaced, contentState: nil, timestamp: nil, at: now)
        let dropped = try session.dropQueuedPushes(
            appID: appID, activityID: activityID, events: [.start, .update, .end], reason: "ActivityReplaced", now: now)
        try session.dropOpenSends(
            appID: appID, activityID: activityID, events: [.update, .end], reason: "ActivityReplaced", now: now)
        try session.appendEvents(dropped.map { NewEvent.pushDropped($0, at: now) })
        try session.appendEvents([NewEvent(
            appID: appID, type: .activityEnded, activityID: activityID, occurredAt: now,
            data: [
                "activity_id": .string(activityID), "cause": .string(EndCause.replaced.rawValue), "targets": 0,
                "origin": "local", "copies": .integer(Int64(copies)),
            ])])
    }

    /// `activity.ended` with its cause.
    static func ended(appID: String, activityID: String, cause: EndCause, targets: Int, at now: Date) -> NewEvent {
        NewEvent(
            appID: appID, type: .activityEnded, activityID: activityID, occurredAt: now,
            data: [
                "activity_id": .string(activityID), "cause": .string(cause.rawValue), "targets": .integer(Int64(targets)),
            ])
    }

    /// Update targets read per page while a fan-out is queued.
    static let targetPage = 10_000

    /// Queues `built` to every device holding the activity (`android`, as a data
    /// message, to its Android copies), after dropping its queued updates (the
    /// device shows only the newest), then runs `record` (which stores the new state).
    /// With receipts, the payload of `push` built again to name send `sendID`, as
    /// an update or end of `activity` is built; nil without.
    private static func stamp(
        _ push: LiveActivityPush, prepared: PreparedContent, bundleID: String, activity: ActivityRecord, now: Date
    ) -> ((Int64) throws -> Data)? {
        guard prepared.receipts else { return nil }
        return { sendID in
            try SendRules.build(
                Receipts.stamping(push, receipts: true, sendID: sendID), bundleID: bundleID, now: now,
                lastTimestamp: activity.lastTimestamp, limit: SendRules.limit(for: activity.delivery)
            ).payload
        }
    }

    private static func sendToCopies(
        _ built: BuiltPush, android: AndroidDataPush?, stamp: ((Int64) throws -> Data)?, event: PushEvent,
        activity: ActivityRecord, appID: String, warnings: [String],
        session: any ActivityStore & PushQueue & PushHistory & EventStore & ChannelStore, budget: SendBudget? = nil, now: Date,
        record: () throws -> Void
    ) throws -> ActivitySendResult {
        let activityID = activity.activityID
        // With receipts (`stamp`), each send's payload names it; the checks before
        // were made with the widest id stamped.
        let receipts = stamp != nil
        let androidStamp: ((Int64) throws -> Data)? = receipts ? { sendID in
            guard let android else { throw ServiceError(.failed, "no Android message to stamp") }
            return try AndroidSends.content(
                Receipts.stamping(android, receipts: true, sendID: sendID), event: event, timestamp: built.timestamp,
                expiration: built.expiration, now: now
            ).payload
        } : nil
        // The Android copies' data message, when there are any: checked (FCM's
        // size) before anything is written.
        var androidContent: SendContent?
        if let android,
            try !session.androidUpdateTargets(appID: appID, activityID: activityID, afterDeviceID: nil, limit: 1).isEmpty
        {
            androidContent = try AndroidSends.content(
                Receipts.stamping(android, receipts: receipts, sendID: Receipts.widest), event: event,
                timestamp: built.timestamp, expiration: built.expiration, now: now)
        }
        let superseded = try session.supersedeQueuedUpdates(appID: appID, activityID: activityID, now: now)
        let supersededInSends = try session.dropOpenSends(
            appID: appID, activityID: activityID, events: [.update], reason: "Superseded", now: now)
        // Each copy's priority-10 updates of the last hour are counted only when the
        // activity itself sent enough of them that some copy may be over.
        var budgetSince: Date?
        if let budget, budget.policy == .downgrade {
            let since = now.addingTimeInterval(-SendBudget.window)
            if try session.priority10Sends(appID: appID, activityID: activityID, since: since) >= budget.smallestPriority10Limit {
                budgetSince = since
            }
        }
        // An activity on channels: one broadcast per channel, whatever the number
        // of subscribers. A channel that stores no message takes expiration 0 only.
        var broadcasts = 0
        if activity.delivery == .channel {
            for channel in try session.activityChannels(appID: appID, activityID: activityID) {
                var content = SendRules.content(built, event: event)
                if !channel.storesMostRecent { content.expiration = 0 }
                let broadcastID = try Receipts.insertSend(
                    content, restamp: stamp, appID: appID, activityID: activityID, session: session, now: now)
                try session.enqueuePushes(
                    sendID: broadcastID, appID: appID, activityID: activityID, activityType: activity.activityType,
                    event: event, tokenKind: .channel,
                    targets: [PushTarget(deviceID: channel.channelID, token: channel.apnsChannelID, environment: channel.environment)],
                    now: now, mintID: APNsMessageID.mint)
                broadcasts += 1
            }
        }
        // The copies holding their own update token (every copy of a token
        // activity; on a channel, the devices that could not take one): one send,
        // sent by windows of its audience, with no row per device. A channel
        // activity records the send only when some copy needs it.
        var targets = 0
        var downgraded = 0
        let holdsTokens = try !session.updateTargets(appID: appID, activityID: activityID, afterDeviceID: nil, limit: 1).isEmpty
        if activity.delivery == .tokens || holdsTokens {
            let sendID = try Receipts.insertSend(
                SendRules.content(built, event: event), restamp: stamp, appID: appID, activityID: activityID,
                session: session, now: now)
            // Only when some copy may be over its priority-10 budget are the copies
            // read, a page at a time: those over it go at priority 5, each by a row
            // of its own, and the windows pass them by.
            if let budget, let since = budgetSince {
                var after: String?
                while true {
                    let page = try session.updateTargets(
                        appID: appID, activityID: activityID, afterDeviceID: after, limit: Self.targetPage)
                    guard let last = page.last else { break }
                    let usage = try session.priority10Usage(
                        appID: appID, activityID: activityID, since: since, afterDeviceID: after,
                        throughDeviceID: last.deviceID)
                    var over: [PushTarget] = []
                    for var target in page {
                        let copy = usage[target.deviceID] ?? BudgetUsage(used: 0, frequentUpdates: nil)
                        if budget.downgrades(used: copy.used, frequentUpdates: copy.frequentUpdates) {
                            target.priorityDowngraded = true
                            over.append(target)
                        }
                    }
                    try session.enqueuePushes(
                        sendID: sendID, appID: appID, activityID: activityID, activityType: activity.activityType,
                        event: event, tokenKind: .liveActivityUpdate, targets: over, now: now, mintID: APNsMessageID.mint)
                    downgraded += over.count
                    guard page.count == Self.targetPage else { break }
                    after = last.deviceID
                }
            }
            targets = downgraded + (try session.queueToCopies(
                sendID: sendID, appID: appID, activityID: activityID, activityType: activity.activityType,
                kind: .liveActivityUpdate, now: now))
        }
        // The Android copies: FCM reaches each device's own token, by windows too.
        // Apple's budget for priority-10 updates is not theirs.
        var androidTargets = 0
        if let content = androidContent {
            let androidSendID = try Receipts.insertSend(
                content, restamp: androidStamp, appID: appID, activityID: activityID, session: session, now: now)
            androidTargets = try session.queueToCopies(
                sendID: androidSendID, appID: appID, activityID: activityID, activityType: activity.activityType,
                kind: .fcm, now: now)
        }
        targets += androidTargets
        try record()
        var events = superseded.map { NewEvent.pushDropped($0, at: now) }
        if event == .update {
            events.append(NewEvent(
                appID: appID, type: .activityUpdated, activityID: activityID, occurredAt: now,
                data: [
                    "activity_id": .string(activityID), "targets": .integer(Int64(targets + broadcasts)),
                    "superseded": .integer(Int64(superseded.count + supersededInSends)),
                    "broadcasts": .integer(Int64(broadcasts)),
                ]))
        }
        try session.appendEvents(events)
        var result = ActivitySendResult(
            activityID: activityID, targets: targets + broadcasts, superseded: superseded.count + supersededInSends,
            priorityDowngraded: downgraded, warnings: warnings, alreadyEnded: false)
        result.broadcasts = broadcasts
        result.androidTargets = androidTargets
        return result
    }

    // MARK: - Reading

    /// A page of the app's activities, newest first.
    public func list(appID: String, _ query: ActivityQuery) async throws(ServiceError) -> ActivityPage {
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        var filter = ActivityFilter(
            status: query.status, activityType: query.activityType, before: query.cursor, limit: query.limit)
        filter.expiredBefore = now.addingTimeInterval(-lifecycle.windows.total)
        let pageFilter = filter
        let items = try await environment.read { (session: any Stores) in
            try session.activities(appID: appID, filter: pageFilter)
        }
        return ActivityPage(
            items: items.map { ActivityView($0, lifecycle: lifecycle, now: now) },
            nextCursor: items.count == query.limit ? items.last?.sequence : nil)
    }

    /// An activity and every device's copy of it, or `notFound`.
    public func show(appID: String, activityID: String) async throws(ServiceError) -> ActivityDetail {
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let since = now.addingTimeInterval(-SendBudget.window)
        let defaults = environment.budget
        let (activity, instances, budget, usage, channels, sends) = try await environment.read {
            (session: any Stores) -> (ActivityRecord, [CopyRecord], SendBudget, [String: BudgetUsage], [ChannelRecord], [SendSummary]) in
            let activity = try SendRules.activity(session, appID: appID, activityID: activityID)
            let budget = try session.app(id: appID)?.budget.applied(to: defaults) ?? defaults
            let usage = try session.priority10Usage(
                appID: appID, activityID: activityID, since: since, afterDeviceID: nil, throughDeviceID: nil)
            let channels = activity.delivery == .channel ? try session.activityChannels(appID: appID, activityID: activityID) : []
            let sends = try session.sendSummaries(appID: appID, activityID: activityID, limit: Self.sendsShown)
            return (activity, try session.copies(appID: appID, activityID: activityID), budget, usage, channels, sends)
        }
        // Until the sweep stores it, an activity past every window has ended on
        // every device too.
        let expiry = lifecycle.expiry(startedAt: activity.startedAt)
        let expired = activity.status != .ended && now >= expiry
        let devices = instances.map { instance in
            var copy = instance
            if expired && copy.status != .ended {
                copy.status = .ended
                copy.endedAt = expiry
                copy.endCause = .expired
            }
            return copy
        }
        var detail = ActivityDetail(
            activity: ActivityView(activity, lifecycle: lifecycle, now: now), devices: devices, budget: budget, usage: usage)
        detail.channels = channels
        detail.sends = sends
        return detail
    }

    /// The newest sends an activity's answer shows.
    static let sendsShown = 20

    /// Every push made for the activity since it started, oldest first, or `notFound`.
    /// A start held back until its device may take another is `isDeferred` until
    /// its time comes.
    public func pushes(appID: String, activityID: String) async throws(ServiceError) -> [PushHistoryItem] {
        let now = environment.clock.now()
        var items = try await environment.read { (session: any Stores) -> [PushHistoryItem] in
            let activity = try SendRules.activity(session, appID: appID, activityID: activityID)
            return try session.pushes(appID: appID, activityID: activityID, since: activity.startedAt)
        }
        for index in items.indices where items[index].status == .queued {
            items[index].isDeferred = items[index].deferredUntil.map { $0 > now } ?? false
        }
        return items
    }
}
