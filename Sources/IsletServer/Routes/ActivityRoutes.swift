import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The server routes (server key): start an activity on an audience's devices,
/// update and end it on every device holding it, and read activities and their
/// pushes back. Each handler parses, calls the activity service, and renders.
struct ActivityRoutes: Sendable {
    let activities: ActivityService
    let schedules: ScheduleService

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities",
                summary: "Start an activity remotely: a push-to-start to every device of the audience holding a token for its type.",
                access: .server, body: RequestSchemas.startActivity, idempotent: true, largeBody: true,
                family: .sends, responses: [(202, "Queued: {activity_id, targets}; with a send_at ahead, scheduled: {schedule_id, send_at, status}"), (409, "The activity id is in use (or scheduled to start), or the app has no APNs credentials"), (422, "A field is invalid, or no device of the audience can be started")],
                answer: AnswerSchemas.startActivityAnswer
            ) { request in try await start(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities/{activity_id}/update",
                summary: "Send the activity's new content state to every device holding it.",
                access: .server, body: RequestSchemas.updateActivity, idempotent: true,
                family: .sends, responses: [(202, "Queued: {targets}; with a send_at ahead, scheduled: {schedule_id, send_at, status}"), (404, "No such activity"), (409, "Ended, or past its update window, or the app has no APNs credentials"), (422, "A field is invalid (send_at after the update window, say)")],
                answer: AnswerSchemas.updateActivityAnswer
            ) { request in try await update(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities/{activity_id}/end",
                summary: "End the activity on every device holding it; without a content state the last one is sent.",
                access: .server, body: RequestSchemas.endActivity, idempotent: true,
                family: .sends, responses: [(202, "Queued: {targets}; with a send_at ahead, scheduled: {schedule_id, send_at, status}"), (200, "Already ended; nothing sent"), (404, "No such activity"), (409, "The app has no APNs credentials"), (422, "A field is invalid (send_at after the end window, say)")],
                answer: AnswerSchemas.endActivityAnswer
            ) { request in try await end(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities", summary: "List activities, newest first.", access: .server,
                query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.activityListAnswer
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}",
                summary: "Read an activity and its per-device copies.", access: .server,
                responses: [(200, "The activity"), (404, "No such activity")],
                answer: AnswerSchemas.activityDetailAnswer
            ) { request in try await show(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/audience",
                summary: "Who may follow the activity (its join rule, and the audience it lets in beside the devices its start targeted) and which devices joined it on their own.",
                access: .server,
                responses: [(200, "{activity_id, origin, join, local_join, audience: {user_ids, device_ids, tags}, created_by, creator_user_id, joined: [{device_id, platform, status, joined_at}]}"), (404, "No such activity")],
                answer: AnswerSchemas.activityAudienceAnswer
            ) { request in try await audience(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/activities/{activity_id}/audience",
                summary: "Let more devices follow an activity started under join: audience: adds user ids, device ids or tags to the audience it lets in (nothing is sent; a device it now takes in may register for it).",
                access: .server, body: RequestSchemas.widenAudience, largeBody: true,
                responses: [(200, "Who may follow it now (as GET)"), (404, "No such activity"), (409, "The activity has ended, was created on a device, or lets anyone follow it"), (422, "A field is invalid, or the audience would pass 200,000 values")],
                answer: AnswerSchemas.activityAudienceAnswer
            ) { request in try await widenAudience(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/pushes",
                summary: "Every push made for the activity, with APNs's answers: a push of a send's window that went as its send did has no row of its own and is told from its send and the copy (its apns-id derived from both, its sent_at its send's last progress, no apns_unique_id or fcm_message_name).",
                access: .server,
                responses: [(200, "{items}"), (404, "No such activity")],
                answer: AnswerSchemas.activityPushesAnswer
            ) { request in try await pushes(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/sends",
                summary: "The activity's timeline: its sends (start, updates, end, broadcasts), newest first, each with the content state it carried, the paths that changed from the send before it on the same platform, and what it came to: targets, sent, failed, received (receipts) and taps.",
                access: .server, query: Self.sendsQuery,
                responses: [(200, "{activity_id, items, next_cursor}"), (404, "No such activity"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.activitySendsAnswer
            ) { request in try await sends(request) },
        ]
    }

    // MARK: - Sends

    private func start(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let root = body.root
        let activityID = root.string("activity_id")
        let activityType = root.string("activity_type")
        let attributes = root.jsonObject("attributes")
        let contentState = root.jsonObject("content_state")
        let alert = SendFields.alert(root)
        let audience = SendFields.audience(root)
        let endAt = root.date("end_at")
        let staleDate = root.date("stale_date")
        let relevance = root.double("relevance_score")
        let priority = root.integer("priority")
        let sendAt = root.date("send_at")
        let timelineReader = root.object("timeline")
        let timeline = timelineReader.flatMap(SendFields.timeline)
        let delivery = root.enumeration("delivery", as: DeliveryRequest.self) ?? .tokens
        let channelID = root.string("channel_id")
        let channelEnvironment = root.enumeration("channel_environment", as: APNsEnvironment.self)
        let join = root.enumeration("join", as: JoinRule.self)
        try body.finish()
        if channelID != nil, delivery != .channel {
            throw Self.invalid("channel_id", "is taken only with delivery channel")
        }
        if channelEnvironment != nil, delivery != .channel || audience != nil || channelID != nil {
            throw Self.invalid("channel_environment", "is taken only with delivery channel, without an audience or a channel_id")
        }
        if sendAt != nil, delivery != .tokens {
            throw Self.invalid("delivery", "must be tokens for a start with send_at")
        }
        if audience == nil, delivery != .channel {
            throw Self.invalid("audience", "is required (unless delivery is channel)")
        }
        var command = StartActivity(
            app: request.app, activityID: activityID!, activityType: activityType!, attributes: attributes,
            contentState: contentState, alert: alert, audience: audience, endAt: endAt,
            staleDate: staleDate, relevanceScore: relevance, priority: priority,
            idempotency: IdempotencyHeader.key(request.http))
        command.delivery = delivery
        command.join = join
        command.channelID = channelID
        command.channelEnvironment = channelEnvironment
        guard sendAt != nil || timelineReader != nil else {
            return IdempotencyHeader.response(try await activities.start(command), status: 202)
        }
        let plan = timelineReader == nil ? nil : try body.required(timeline, "timeline")
        let prepared = try await activities.prepareChannels(command)
        let answer: Replayable<Scheduling<StartResult>>
        do {
            answer = try await schedules.start(prepared, sendAt: sendAt, timeline: plan)
        } catch {
            await activities.discardChannels(of: prepared)
            throw error
        }
        return IdempotencyHeader.response(answer, status: 202)
    }

    private func update(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let root = body.root
        let contentState = root.jsonObject("content_state")
        let alert = SendFields.alert(root)
        let endAt = root.date("end_at")
        let staleDate = root.date("stale_date")
        let relevance = root.double("relevance_score")
        let priority = root.integer("priority")
        let sendAt = root.date("send_at")
        try body.finish()
        let command = UpdateActivity(
            app: request.app, activityID: activityID, contentState: contentState, alert: alert, endAt: endAt,
            staleDate: staleDate, relevanceScore: relevance, priority: priority,
            idempotency: IdempotencyHeader.key(request.http))
        guard let sendAt else { return IdempotencyHeader.response(try await activities.update(command), status: 202) }
        return IdempotencyHeader.response(try await schedules.update(command, sendAt: sendAt), status: 202)
    }

    private func end(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let contentState = body.root.jsonObject("content_state")
        let dismissalDate = body.root.date("dismissal_date")
        let sendAt = body.root.date("send_at")
        try body.finish()
        let command = EndActivity(
            app: request.app, activityID: activityID, contentState: contentState, dismissalDate: dismissalDate,
            idempotency: IdempotencyHeader.key(request.http))
        guard let sendAt else {
            let answer = try await activities.end(command)
            return IdempotencyHeader.response(answer, status: answer.result.alreadyEnded ? 200 : 202)
        }
        let answer = try await schedules.end(command, sendAt: sendAt)
        return IdempotencyHeader.response(
            answer, status: SendFields.scheduledStatus(answer) { $0.alreadyEnded ? 200 : 202 })
    }

    /// A 422 naming `field`.
    private static func invalid(_ field: String, _ message: String) -> ServiceError {
        ServiceError.invalid("The field \(field) \(message).", field: field, message)
    }

    // MARK: - Reading

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        var query = ActivityQuery()
        query.status = request.query["status"]
        query.activityType = request.query["activity_type"]
        query.limit = request.query.defaultedInt("limit")
        query.cursor = request.query["cursor"]
        let page = try await activities.list(appID: request.app.id, query)
        return APIJSON.response(.object([
            "items": .array(page.items.map { .object(Self.json($0)) }),
            "next_cursor": page.nextCursor.map { .string(String($0)) } ?? .null,
        ]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let detail = try await activities.show(appID: request.app.id, activityID: activityID)
        var body = Self.json(detail.activity)
        body["attributes"] = detail.activity.record.attributes ?? .null
        body["content_state"] = detail.activity.record.contentState ?? .null
        body["channels"] = .array(detail.channels.map { channel in
            [
                "channel_id": .string(channel.channelID), "apns_channel_id": .string(channel.apnsChannelID),
                "environment": .string(channel.environment.rawValue),
            ]
        })
        body["devices"] = .array(detail.devices.map { copy in
            var json = CopyJSON.json(copy)
            // Apple's budget of priority-10 updates is not FCM's.
            let budget = detail.priority10(deviceID: copy.deviceID)
            json["priority_10_budget"] = copy.platform == "android" ? .null : [
                "per_hour": .integer(Int64(budget.perHour)), "remaining": .integer(Int64(budget.remaining)),
            ]
            return .object(json)
        })
        // Its newest sends, with what they came to (receipts: `received` of `targets`).
        body["sends"] = .array(detail.sends.map { send in
            [
                "send_id": .string(String(send.sendID)), "event": .string(send.event.rawValue),
                "token_kind": .string(send.tokenKind.rawValue), "status": .string(send.state),
                "targets": .integer(send.targets), "sent": .integer(send.sent), "received": .integer(send.received),
                "created_at": APIJSON.date(send.createdAt),
            ]
        })
        let renewal = detail.activity.record.renewal
        body["renewed_to"] = APIJSON.optional(renewal.renewedTo)
        body["renewed_from"] = APIJSON.optional(renewal.renewedFrom)
        if renewal.renewedTo != nil || !renewal.notRenewed.isEmpty {
            body["not_renewed"] = .array(renewal.notRenewed.map(JSONValue.string))
        }
        return APIJSON.response(.object(body))
    }

    private func audience(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        return APIJSON.response(.object(Self.json(try await activities.join(appID: request.app.id, activityID: activityID))))
    }

    private func widenAudience(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let userIDs = body.root.strings("user_ids")
        let deviceIDs = body.root.strings("device_ids")
        let tags = body.root.strings("tags")
        try body.finish()
        guard userIDs != nil || deviceIDs != nil || tags != nil else {
            throw Self.invalid("device_ids", "is required unless user_ids or tags is given")
        }
        let adding = JoinAudience(userIDs: userIDs ?? [], deviceIDs: deviceIDs ?? [], tags: tags ?? [])
        let view = try await activities.widenAudience(appID: request.app.id, activityID: activityID, adding: adding)
        return APIJSON.response(.object(Self.json(view)))
    }

    static func json(_ view: ActivityJoinView) -> [String: JSONValue] {
        [
            "activity_id": .string(view.activityID), "origin": .string(view.origin.rawValue),
            "join": Self.joinRule(origin: view.origin, view.join), "local_join": .string(view.localJoin.rawValue),
            "audience": view.audience.json, "created_by": APIJSON.optional(view.createdBy),
            "creator_user_id": APIJSON.optional(view.creatorUserID),
            "joined": .array(view.joined.map { copy in
                [
                    "device_id": .string(copy.deviceID), "platform": .string(copy.platform),
                    "status": .string(copy.status.rawValue), "joined_at": APIJSON.date(copy.createdAt),
                ]
            }),
        ]
    }

    /// An activity's join rule as shown: a backend start's rule (`anyone` for one
    /// started before the rule existed), `local` for one a device created.
    static func joinRule(origin: ActivityRecord.Origin, _ rule: JoinRule?) -> JSONValue {
        origin == .local ? "local" : .string((rule ?? .anyone).rawValue)
    }

    private func pushes(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let items = try await activities.pushes(appID: request.app.id, activityID: activityID)
        return APIJSON.response(.object(["activity_id": .string(activityID), "items": .array(items.map(Self.json))]))
    }

    private func sends(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let page = try await activities.sendHistory(
            appID: request.app.id, activityID: activityID, cursor: request.query["cursor"],
            limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            "activity_id": .string(activityID),
            "items": .array(page.items.map { entry in
                let send = entry.send
                return [
                    "send_id": .string(String(send.sendID)), "event": .string(send.event.rawValue),
                    "token_kind": .string(send.tokenKind.rawValue), "platform": .string(entry.platform),
                    "status": .string(send.state), "drop_reason": APIJSON.optional(send.dropReason),
                    "created_at": APIJSON.date(send.createdAt), "content_state": entry.contentState ?? .null,
                    "changed": entry.changed.map { .array($0.map(JSONValue.string)) } ?? .null,
                    "alert": entry.alert ?? .null, "targets": .integer(send.targets), "sent": .integer(send.sent),
                    "failed": .integer(send.failed), "received": .integer(send.received), "taps": .integer(send.taps),
                ]
            }),
            "next_cursor": page.nextCursor.map { .string(String($0)) } ?? .null,
        ]))
    }

    // MARK: - Fields

    /// The timeline's query.
    static let sendsQuery: [QueryParameter] = [
        .integer("limit", "Sends per page.", 1...200, default: 50),
        .integer("cursor", QueryParameter.cursorDescription, 1...Int64.max, message: QueryParameter.cursorMessage),
    ]

    /// The query parameters of the activity list.
    static let listQuery: [QueryParameter] = [
        .oneOf("status", "Only activities of this status.", ActivityStatus.self),
        .text("activity_type", "Only this type.", .activityType),
        .integer("limit", "Activities per page.", 1...200, default: 50),
        .integer("cursor", QueryParameter.cursorDescription, 1...Int64.max, message: QueryParameter.cursorMessage),
    ]

    // MARK: - Rendering

    static func json(_ view: ActivityView) -> [String: JSONValue] {
        let activity = view.record
        return [
            "activity_id": .string(activity.activityID), "activity_type": .string(activity.activityType),
            "origin": .string(activity.origin.rawValue), "status": .string(view.status.rawValue),
            "started_at": APIJSON.date(activity.startedAt), "updated_at": APIJSON.date(activity.updatedAt),
            "ended_at": APIJSON.date(view.endedAt), "end_cause": APIJSON.optional(view.endCause?.rawValue),
            "update_deadline": APIJSON.date(view.updateDeadline), "end_at": APIJSON.date(activity.endAt),
            "end_deadline": APIJSON.date(view.endDeadline), "delivery": .string(activity.delivery.rawValue),
            "join": joinRule(origin: activity.origin, activity.join),
        ]
    }

    static func json(_ push: PushHistoryItem) -> JSONValue {
        // A broadcast goes to a channel, not to a device: its record names the
        // channel (which the push row keeps in place of a device).
        let broadcast = push.tokenKind == .channel
        // An Android device's data message went to FCM: its status, message name
        // (or error code, as the reason) are FCM's, and it has no APNs environment.
        let android = push.tokenKind == .fcm
        let status: JSONValue = push.apnsStatus.map { .integer(Int64($0)) } ?? .null
        return .object([
            "device_id": broadcast ? .null : .string(push.deviceID),
            "channel_id": broadcast ? .string(push.deviceID) : .null, "token_kind": .string(push.tokenKind.rawValue),
            "platform": .string(android ? "android" : "ios"),
            "event": .string(push.event.rawValue), "status": .string(push.isDeferred ? "deferred" : push.status.rawValue),
            "environment": android ? .null : .string(push.environment.rawValue),
            "environment_switched": .bool(push.environmentSwitched),
            "apns_status": android ? .null : status, "fcm_status": android ? status : .null,
            "reason": APIJSON.optional(push.reason), "apns_id": .string(push.apnsID),
            "apns_unique_id": android ? .null : APIJSON.optional(push.serviceMessageID),
            "fcm_message_name": android ? APIJSON.optional(push.serviceMessageID) : .null,
            "attempts": .integer(Int64(push.attempts)), "created_at": APIJSON.date(push.createdAt),
            "updated_at": APIJSON.date(push.updatedAt), "sent_at": APIJSON.date(push.sentAt),
            "taps": .integer(Int64(push.taps)), "first_tapped_at": APIJSON.date(push.firstTappedAt),
            "priority_downgraded": .bool(push.priorityDowngraded), "deferred_until": APIJSON.date(push.deferredUntil),
            "send_id": .string(String(push.sendID)), "received_at": APIJSON.date(push.receivedAt),
        ])
    }
}
