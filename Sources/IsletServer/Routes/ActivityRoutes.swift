import Foundation
import HTTPServer
import IsletCore
import Storage

/// The server routes (server key): start an activity on an audience's devices,
/// update and end it on every device holding it, send ordinary alerts, and read
/// activities and their pushes back.
struct ActivityRoutes: Sendable {
    let context: ServerContext

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities",
                summary: "Start an activity remotely: a push-to-start to every device of the audience holding a token for its type.",
                access: .server, body: RequestSchemas.startActivity, idempotent: true,
                responses: [(202, "Queued: {activity_id, targets}"), (409, "The activity id is in use, or the app has no APNs credentials"), (422, "A field is invalid, or no device of the audience can be started")]
            ) { request, parameters in try await start(request, parameters) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities/{activity_id}/update",
                summary: "Send the activity's new content state to every device holding it.",
                access: .server, body: RequestSchemas.updateActivity, idempotent: true,
                responses: [(202, "Queued: {targets}"), (404, "No such activity"), (409, "Ended, or past its update window, or the app has no APNs credentials"), (422, "A field is invalid")]
            ) { request, parameters in try await update(request, parameters) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities/{activity_id}/end",
                summary: "End the activity on every device holding it; without a content state the last one is sent.",
                access: .server, body: RequestSchemas.endActivity, idempotent: true,
                responses: [(202, "Queued: {targets}"), (200, "Already ended; nothing sent"), (404, "No such activity"), (409, "The app has no APNs credentials"), (422, "A field is invalid")]
            ) { request, parameters in try await end(request, parameters) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities", summary: "List activities, newest first.", access: .server,
                query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")]
            ) { request, parameters in try await list(request, parameters) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}",
                summary: "Read an activity and its per-device copies.", access: .server,
                responses: [(200, "The activity"), (404, "No such activity")]
            ) { request, parameters in try await show(request, parameters) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/pushes",
                summary: "Every push made for the activity, with APNs's answers.", access: .server,
                responses: [(200, "{items}"), (404, "No such activity")]
            ) { request, parameters in try await pushes(request, parameters) },
        ]
    }

    // MARK: - Start

    private func start(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        let body = try RequestBody(request, schema: RequestSchemas.startActivity)
        let root = body.root
        let activityID = root.string("activity_id")
        let activityType = root.string("activity_type")
        var attributes = root.jsonObject("attributes")
        let contentState = root.jsonObject("content_state")
        let alert = Self.alert(root)
        let audience = Self.audience(root)
        let endAt = root.date("end_at")
        let staleDate = root.date("stale_date")
        let relevance = root.double("relevance_score")
        let priority = root.integer("priority")
        if let activityID, case .object(var members)? = attributes {
            if let given = members["islet_activity_id"], given != .string(activityID) {
                root.fail("attributes.islet_activity_id", "is set by Islet to the activity id; leave it out")
            }
            members["islet_activity_id"] = .string(activityID)
            attributes = .object(members)
        }
        try body.finish()
        let target = try body.required(audience, "audience")
        let stampedAttributes = attributes
        let context = self.context
        let appID = app.id
        let bundleID = app.bundleID
        try Self.requireCredentials(app)
        return try await Idempotency.perform(request, appID: appID, context: context) { session, now in
            let prepared = try SchemaEnforcement.prepare(
                session: session, app: app, activityType: activityType!, attributes: stampedAttributes,
                contentState: contentState, isStart: true)
            let push = LiveActivityPush(
                event: .start, contentState: prepared.wireState, attributesType: prepared.attributesType,
                attributes: prepared.attributes, alert: alert, staleDate: staleDate, relevanceScore: relevance,
                priority: priority)
            let built = try Self.build(push, bundleID: bundleID, now: now, lastTimestamp: nil)
            if let endAt { try Self.checkEndAt(endAt, startedAt: now, lifecycle: context.lifecycle, now: now) }
            if let existing = try session.activity(appID: appID, activityID: activityID!),
                context.lifecycle.effectiveStatus(existing.status, startedAt: existing.startedAt, now: now) != .ended
            {
                throw Problem(
                    status: 409,
                    detail: "Activity \(activityID!) is already running (\(existing.status.rawValue)); end it first or use another id.")
            }
            let targets = try session.startTargets(appID: appID, audience: target, activityType: activityType!)
            guard !targets.isEmpty else {
                let size = try session.audienceSize(appID: appID, audience: target)
                let detail = size == 0
                    ? "The audience matches no registered device."
                    : "None of the \(size) device(s) in the audience holds a push-to-start token for \(activityType!)."
                throw Problem(
                    status: 422, detail: detail,
                    errors: [.init(field: "audience.\(target.field)", message: "names no device that can start \(activityType!)")])
            }
            try session.insertActivity(
                appID: appID, activityID: activityID!, activityType: activityType!, origin: .remote,
                attributes: prepared.attributes, contentState: prepared.contentState, lastTimestamp: built.timestamp,
                endAt: endAt, replacing: true, now: now)
            try session.insertPendingInstances(appID: appID, activityID: activityID!, targets: targets, now: now)
            let sendID = try session.insertSend(appID: appID, activityID: activityID!, content: Self.content(built, event: .start), now: now)
            try session.enqueuePushes(
                sendID: sendID, appID: appID, activityID: activityID!, activityType: activityType!, event: .start,
                tokenKind: .pushToStart, targets: targets, now: now, mintID: APNsMessageID.mint)
            var answer: [String: JSONValue] = ["activity_id": .string(activityID!), "targets": .integer(Int64(targets.count))]
            if !prepared.warnings.isEmpty { answer["warnings"] = .array(prepared.warnings.map(JSONValue.string)) }
            return (202, Data(JSONValue.object(answer).jsonText.utf8))
        }
    }

    // MARK: - Update and end

    private func update(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        let activityID = try DeviceRoutes.pathIdentifier(parameters, "activity_id")
        let body = try RequestBody(request, schema: RequestSchemas.updateActivity)
        let root = body.root
        let contentState = root.jsonObject("content_state")
        let alert = Self.alert(root)
        let endAt = root.date("end_at")
        let staleDate = root.date("stale_date")
        let relevance = root.double("relevance_score")
        let priority = root.integer("priority")
        try body.finish()
        let context = self.context
        let appID = app.id
        let bundleID = app.bundleID
        try Self.requireCredentials(app)
        return try await Idempotency.perform(request, appID: appID, context: context) { session, now in
            let activity = try Self.activity(session, appID: appID, activityID: activityID)
            switch context.lifecycle.check(.update, status: activity.status, startedAt: activity.startedAt, now: now) {
            case .allowed:
                break
            case .ended:
                throw Problem(
                    status: 409,
                    detail: "Activity \(activityID) has ended (\(activity.endCause?.rawValue ?? "ended")); an ended activity can never be updated again.")
            case .expired(let at):
                throw Problem(
                    status: 409,
                    detail: "Activity \(activityID) ended when its lifecycle window closed at \(APIJSON.date(at).stringValue ?? ""); an ended activity can never be updated again.")
            case .pastUpdateWindow(let since):
                throw Problem(
                    status: 409,
                    detail: "Activity \(activityID) is past its update window (it closed at \(APIJSON.date(since).stringValue ?? "")); devices ignore updates now. It can still be ended.")
            }
            let prepared = try SchemaEnforcement.prepare(
                session: session, app: app, activityType: activity.activityType, attributes: nil,
                contentState: contentState, isStart: false)
            let push = LiveActivityPush(
                event: .update, contentState: prepared.wireState, alert: alert, staleDate: staleDate,
                relevanceScore: relevance, priority: priority)
            let built = try Self.build(push, bundleID: bundleID, now: now, lastTimestamp: activity.lastTimestamp)
            if let endAt {
                try Self.checkEndAt(endAt, startedAt: activity.startedAt, lifecycle: context.lifecycle, now: now)
            }
            return try Self.sendToHolders(
                built, event: .update, activity: activity, appID: appID, warnings: prepared.warnings, session: session,
                now: now
            ) {
                if let endAt { try session.setEndAt(appID: appID, activityID: activityID, endAt: endAt) }
                try session.recordUpdate(
                    appID: appID, activityID: activityID, contentState: prepared.contentState!, timestamp: built.timestamp!,
                    now: now)
            }
        }
    }

    private func end(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        let activityID = try DeviceRoutes.pathIdentifier(parameters, "activity_id")
        let body = try RequestBody(request, schema: RequestSchemas.endActivity)
        let contentState = body.root.jsonObject("content_state")
        let dismissalDate = body.root.date("dismissal_date")
        try body.finish()
        let context = self.context
        let appID = app.id
        try Self.requireCredentials(app)
        return try await Idempotency.perform(request, appID: appID, context: context) { session, now in
            try Self.endTransaction(
                session: session, app: app, activityID: activityID, contentState: contentState,
                dismissalDate: dismissalDate, cause: .server, lifecycle: context.lifecycle, now: now)
        }
    }

    /// Ends an activity in `session`: the end push (with `contentState`, or the last
    /// one) to every device holding it, queued starts and updates dropped. Answers
    /// 202 with the counts, or 200 when it had already ended. The end route and
    /// scheduled ends both come here.
    static func endTransaction(
        session: any StoreSession, app: AppRecord, activityID: String, contentState: JSONValue?, dismissalDate: Date?,
        cause: EndCause, lifecycle: ActivityLifecycle, now: Date
    ) throws -> (status: Int, body: Data) {
        let appID = app.id
        let activity = try Self.activity(session, appID: appID, activityID: activityID)
        switch lifecycle.check(.end, status: activity.status, startedAt: activity.startedAt, now: now) {
        case .ended, .expired:
            return (200, Data(JSONValue.object([
                "activity_id": .string(activityID), "targets": 0, "status": "ended",
                "detail": "The activity had already ended; nothing was sent.",
            ]).jsonText.utf8))
        case .allowed, .pastUpdateWindow:
            break
        }
        let prepared = try SchemaEnforcement.prepare(
            session: session, app: app, activityType: activity.activityType, attributes: nil,
            contentState: contentState ?? activity.contentState, isStart: false, storedState: contentState == nil)
        let push = LiveActivityPush(event: .end, contentState: prepared.wireState, dismissalDate: dismissalDate)
        let built = try Self.build(push, bundleID: app.bundleID, now: now, lastTimestamp: activity.lastTimestamp)
        return try Self.sendToHolders(
            built, event: .end, activity: activity, appID: appID, warnings: prepared.warnings, session: session,
            now: now
        ) {
            try session.endActivity(
                appID: appID, activityID: activityID, cause: cause, contentState: prepared.contentState,
                timestamp: built.timestamp, at: now)
            // A push-to-start still waiting would start an activity that is over.
            try session.dropQueuedPushes(
                appID: appID, activityID: activityID, events: [.start], reason: "ActivityEnded", now: now)
        }
    }

    /// Queues `built` to every device holding the activity, after dropping its
    /// queued updates (the device shows only the newest) and running `record` (which
    /// stores the new state). Answers 202 with the counts.
    private static func sendToHolders(
        _ built: BuiltPush, event: PushEvent, activity: ActivityRecord, appID: String, warnings: [String],
        session: any StoreSession, now: Date, record: () throws -> Void
    ) throws -> (status: Int, body: Data) {
        let activityID = activity.activityID
        let superseded = try session.supersedeQueuedUpdates(appID: appID, activityID: activityID, now: now)
        let targets = try session.updateTargets(appID: appID, activityID: activityID)
        try record()
        let sendID = try session.insertSend(appID: appID, activityID: activityID, content: content(built, event: event), now: now)
        try session.enqueuePushes(
            sendID: sendID, appID: appID, activityID: activityID, activityType: activity.activityType, event: event,
            tokenKind: .liveActivityUpdate, targets: targets, now: now, mintID: APNsMessageID.mint)
        var answer: [String: JSONValue] = [
            "activity_id": .string(activityID), "targets": .integer(Int64(targets.count)),
            "superseded": .integer(Int64(superseded)),
        ]
        if !warnings.isEmpty { answer["warnings"] = .array(warnings.map(JSONValue.string)) }
        return (202, Data(JSONValue.object(answer).jsonText.utf8))
    }

    // MARK: - Reading

    private func list(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        var filter = ActivityFilter()
        var errors: [Problem.FieldError] = []
        let known: Set = ["status", "activity_type", "limit", "cursor"]
        for (name, _) in request.query where !known.contains(name) {
            errors.append(.init(field: name, message: "is not a query parameter of this route"))
        }
        if let status = request.queryValue("status") {
            if let value = ActivityStatus(rawValue: status) { filter.status = value } else {
                errors.append(.init(field: "status", message: "must be started, updated or ended"))
            }
        }
        if let type = request.queryValue("activity_type") {
            if let problem = TextFormat.activityType.problem(type) {
                errors.append(.init(field: "activity_type", message: problem))
            } else {
                filter.activityType = type
            }
        }
        if let limit = request.queryValue("limit") {
            if let value = Self.queryInteger(limit), (1...200).contains(value) { filter.limit = Int(value) } else {
                errors.append(.init(field: "limit", message: "must be a whole number from 1 to 200"))
            }
        }
        if let cursor = request.queryValue("cursor") {
            if let value = Self.queryInteger(cursor), value > 0 { filter.before = value } else {
                errors.append(.init(field: "cursor", message: "must be the next_cursor of a previous page"))
            }
        }
        guard errors.isEmpty else {
            throw Problem(status: 422, detail: "The query has invalid parameters.", errors: errors)
        }
        let appID = app.id
        let lifecycle = context.lifecycle
        let now = context.clock.now()
        filter.expiredBefore = now.addingTimeInterval(-lifecycle.windows.total)
        let pageFilter = filter
        let items = try await context.store.read { try $0.activities(appID: appID, filter: pageFilter) }
        let next: JSONValue = items.count == filter.limit ? .string(String(items.last!.sequence)) : .null
        return APIJSON.response(.object([
            "items": .array(items.map { .object(json($0, now: now)) }), "next_cursor": next,
        ]))
    }

    private func show(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        let activityID = try DeviceRoutes.pathIdentifier(parameters, "activity_id")
        let appID = app.id
        let lifecycle = context.lifecycle
        let now = context.clock.now()
        let (activity, instances) = try await context.store.read { session -> (ActivityRecord, [InstanceRecord]) in
            let activity = try Self.activity(session, appID: appID, activityID: activityID)
            return (activity, try session.instances(appID: appID, activityID: activityID))
        }
        var body = json(activity, now: now)
        body["attributes"] = activity.attributes ?? .null
        body["content_state"] = activity.contentState ?? .null
        // Until the sweep stores it, an activity past every window has ended on
        // every device too.
        let expiry = lifecycle.expiry(startedAt: activity.startedAt)
        let expired = activity.status != .ended && now >= expiry
        body["devices"] = .array(instances.map { instance in
            var copy = instance
            if expired && copy.status != .ended {
                copy.status = .ended
                copy.endedAt = expiry
                copy.endCause = .expired
            }
            return .object(Self.json(copy))
        })
        return APIJSON.response(.object(body))
    }

    private func pushes(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await authorize(request, parameters)
        let activityID = try DeviceRoutes.pathIdentifier(parameters, "activity_id")
        let appID = app.id
        let items = try await context.store.read { session -> [PushHistoryItem] in
            let activity = try Self.activity(session, appID: appID, activityID: activityID)
            return try session.pushes(appID: appID, activityID: activityID, since: activity.startedAt)
        }
        return APIJSON.response(.object(["activity_id": .string(activityID), "items": .array(items.map(Self.json))]))
    }

    // MARK: - Helpers

    private func authorize(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> AppRecord {
        try await Authentication.requireApp(request, appID: parameters["app_id"] ?? "", kind: .server, context: context)
    }

    /// An end time must lie ahead, and within the activity's lifecycle window.
    static func checkEndAt(_ endAt: Date, startedAt: Date, lifecycle: ActivityLifecycle, now: Date) throws(Problem) {
        let expiry = lifecycle.expiry(startedAt: startedAt)
        let problem: String?
        if endAt <= now {
            problem = "must lie ahead (now is \(APIJSON.rfc3339(now)))"
        } else if endAt > expiry {
            problem = "must come before the activity's window closes at \(APIJSON.rfc3339(expiry))"
        } else {
            problem = nil
        }
        if let problem {
            throw Problem(status: 422, detail: "The field end_at is invalid: it \(problem).", errors: [.init(field: "end_at", message: problem)])
        }
    }

    static func requireCredentials(_ app: AppRecord) throws(Problem) {
        guard app.credentials != nil else {
            throw Problem(
                status: 409,
                detail: "App \(app.id) has no APNs credentials; add them with PATCH /v1/apps/\(app.id) before sending.")
        }
    }

    static func activity(_ session: any StoreSession, appID: String, activityID: String) throws -> ActivityRecord {
        guard let activity = try session.activity(appID: appID, activityID: activityID) else {
            throw Problem(status: 404, detail: "There is no activity \(activityID).")
        }
        return activity
    }

    /// Builds the payload; a broken rule is a 422 naming the request's own field.
    static func build(_ push: LiveActivityPush, bundleID: String, now: Date, lastTimestamp: Int64?) throws(Problem) -> BuiltPush {
        do {
            return try push.build(bundleID: bundleID, now: now, lastTimestamp: lastTimestamp)
        } catch {
            throw problem(error, event: push.event)
        }
    }

    static func problem(_ error: PayloadError, event: PushEvent) -> Problem {
        let field = apiField(error.field, event: event)
        return Problem(
            status: 422, detail: "The field \(field) is invalid: \(Problem.sentence(error.message))",
            errors: [.init(field: field, message: error.message)])
    }

    static func problem(_ error: PayloadError, event: LiveActivityEvent) -> Problem {
        problem(error, event: PushEvent(rawValue: event.rawValue) ?? .update)
    }

    /// The request field a payload path comes from.
    static func apiField(_ field: String, event: PushEvent) -> String {
        let prefixes: [(String, String)] = [
            ("aps.attributes-type", "activity_type"), ("aps.attributes", "attributes"),
            ("aps.content-state", "content_state"), ("aps.alert", "alert"), ("aps.stale-date", "stale_date"),
            ("aps.dismissal-date", "dismissal_date"), ("aps.relevance-score", "relevance_score"),
            ("apns-priority", "priority"), ("apns-topic", "bundle_id"),
        ]
        for (prefix, name) in prefixes where field == prefix || field.hasPrefix(prefix + ".") || field.hasPrefix(prefix + "[") {
            return name + field.dropFirst(prefix.count)
        }
        return field
    }

    static func content(_ built: BuiltPush, event: PushEvent) -> SendContent {
        SendContent(
            event: event, topic: built.topic, pushType: built.pushType, priority: built.priority,
            expiration: built.expiration, collapseID: built.collapseID, payload: built.payload)
    }

    /// The query parameters of the activity list.
    static let listQuery: [QueryParameter] = [
        QueryParameter(
            name: "status", description: "Only activities of this status.",
            schema: ["type": "string", "enum": .array(ActivityStatus.allCases.map { .string($0.rawValue) })]),
        QueryParameter(name: "activity_type", description: "Only this type.", schema: TextFormat.activityType.jsonSchema),
        QueryParameter(
            name: "limit", description: "Activities per page (default 50).",
            schema: ["type": "integer", "minimum": 1, "maximum": 200]),
        QueryParameter(
            name: "cursor", description: "The next_cursor of the previous page.",
            schema: ["type": "integer", "minimum": 1, "maximum": .integer(Int64.max)]),
    ]

    /// A whole number in a query: decimal digits, an optional sign.
    static func queryInteger(_ text: String) -> Int64? { Int64(text) }

    /// `alert: {title, body, sound?}`, by the `alert` field's schema.
    static func alert(_ object: ObjectReader) -> PushAlert? {
        guard let alert = object.object("alert") else { return nil }
        let title = alert.string("title")
        let body = alert.string("body")
        let sound = alert.string("sound")
        guard let title, let body else { return nil }
        return PushAlert(title: .literal(title), body: .literal(body), sound: sound)
    }

    /// `audience`: exactly one of `user_ids`, `device_ids`, `tags`.
    static func audience(_ object: ObjectReader) -> Audience? {
        guard let reader = object.object("audience"), let chosen = reader.chosen() else { return nil }
        guard let values = reader.strings(chosen) else { return nil }
        switch chosen {
        case "user_ids": return .userIDs(values)
        case "device_ids": return .deviceIDs(values)
        default: return .tags(values)
        }
    }

    private func json(_ activity: ActivityRecord, now: Date) -> [String: JSONValue] {
        let lifecycle = context.lifecycle
        let status = lifecycle.effectiveStatus(activity.status, startedAt: activity.startedAt, now: now)
        let expiry = lifecycle.expiry(startedAt: activity.startedAt)
        return [
            "activity_id": .string(activity.activityID), "activity_type": .string(activity.activityType),
            "origin": .string(activity.origin.rawValue), "status": .string(status.rawValue),
            "started_at": APIJSON.date(activity.startedAt), "updated_at": APIJSON.date(activity.updatedAt),
            "ended_at": APIJSON.date(activity.endedAt ?? (status == .ended ? expiry : nil)),
            "end_cause": APIJSON.optional(activity.endCause?.rawValue ?? (status == .ended ? EndCause.expired.rawValue : nil)),
            "update_deadline": APIJSON.date(lifecycle.updateDeadline(startedAt: activity.startedAt)),
            "end_at": APIJSON.date(activity.endAt),
            "end_deadline": APIJSON.date(expiry),
        ]
    }

    static func json(_ instance: InstanceRecord) -> [String: JSONValue] {
        [
            "device_id": .string(instance.deviceID), "status": .string(instance.status.rawValue),
            "has_update_token": .bool(instance.updateToken != nil), "environment": .string(instance.environment.rawValue),
            "token_registered_at": APIJSON.date(instance.tokenRegisteredAt), "created_at": APIJSON.date(instance.createdAt),
            "ended_at": APIJSON.date(instance.endedAt), "end_cause": APIJSON.optional(instance.endCause?.rawValue),
        ]
    }

    static func json(_ push: PushHistoryItem) -> JSONValue {
        .object([
            "device_id": .string(push.deviceID), "token_kind": .string(push.tokenKind.rawValue),
            "event": .string(push.event.rawValue), "status": .string(push.status.rawValue),
            "environment": .string(push.environment.rawValue), "environment_switched": .bool(push.environmentSwitched),
            "apns_status": push.apnsStatus.map { .integer(Int64($0)) } ?? .null, "reason": APIJSON.optional(push.reason),
            "apns_id": .string(push.apnsID), "apns_unique_id": APIJSON.optional(push.apnsUniqueID),
            "attempts": .integer(Int64(push.attempts)), "created_at": APIJSON.date(push.createdAt),
            "updated_at": APIJSON.date(push.updatedAt), "sent_at": APIJSON.date(push.sentAt),
        ])
    }
}
