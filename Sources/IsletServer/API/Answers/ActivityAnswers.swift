import IsletCore
import Storage

extension AnswerSchemas {
    /// The shapes the activity routes share.
    static let activityComponents: [String: JSONValue] = [
        "Activity": ActivityShapes.activity,
        "ActivityDetail": ActivityShapes.activityDetail,
        "ActivityCopy": ActivityShapes.copy,
        "ActivityAudience": ActivityShapes.audience,
        "Push": ActivityShapes.push,
        "Send": ActivityShapes.send,
        "StartQueued": ActivityShapes.startQueued,
        "SendQueued": ActivityShapes.sendQueued,
        "ActivityAlreadyEnded": ActivityShapes.alreadyEnded,
        "Scheduled": ActivityShapes.scheduled,
        "Schedule": ActivityShapes.schedule,
        "Timeline": ActivityShapes.timeline,
    ]

    // MARK: The activity, notification, schedule and timeline routes' answers

    /// `POST …/activities`: queued (`StartResult.json`, with or without a timeline)
    /// or, with a `send_at` ahead, scheduled.
    static let startActivityAnswer: JSONValue = ["anyOf": [ref("StartQueued"), ref("Scheduled")]]

    /// `POST …/activities/{activity_id}/update`: queued or scheduled.
    static let updateActivityAnswer: JSONValue = ["anyOf": [ref("SendQueued"), ref("Scheduled")]]

    /// `POST …/activities/{activity_id}/end`: queued (202), already ended (200), or
    /// scheduled (202).
    static let endActivityAnswer: JSONValue = [
        "anyOf": [ref("SendQueued"), ref("ActivityAlreadyEnded"), ref("Scheduled")],
    ]

    /// `GET …/activities`: a page of activities.
    static let activityListAnswer: JSONValue = page(of: ref("Activity"), required: ["next_cursor"])

    /// `GET …/activities/{activity_id}`.
    static let activityDetailAnswer: JSONValue = ref("ActivityDetail")

    /// `GET` and `POST …/activities/{activity_id}/audience`.
    static let activityAudienceAnswer: JSONValue = ref("ActivityAudience")

    /// `GET …/activities/{activity_id}/pushes`: `{activity_id, items}`.
    static let activityPushesAnswer: JSONValue = object(
        ["activity_id": string, "items": array(ref("Push"))], required: ["activity_id", "items"])

    /// `GET …/activities/{activity_id}/sends`: `{activity_id, items, next_cursor}`.
    static let activitySendsAnswer: JSONValue = page(
        of: ref("Send"), extra: ["activity_id": string], required: ["activity_id", "next_cursor"])

    /// `POST …/notifications`: queued (`{targets}`) or scheduled.
    static let notificationAnswer: JSONValue = [
        "anyOf": [object(["targets": integer], required: ["targets"]), ref("Scheduled")],
    ]

    /// `GET …/schedules`: a page of schedule items.
    static let scheduleListAnswer: JSONValue = page(of: ref("Schedule"), required: ["next_cursor"])

    /// `GET` and `DELETE …/schedules/{schedule_id}`: the item.
    static let scheduleItemAnswer: JSONValue = ref("Schedule")

    /// `PUT` and `GET …/activities/{activity_id}/timeline`.
    static let timelineAnswer: JSONValue = ref("Timeline")
}

/// The parts of the activity components.
private enum ActivityShapes {
    typealias S = AnswerSchemas

    /// One of the raw values of `type`, or of `extra`.
    static func cases<E: CaseIterable & RawRepresentable>(_ type: E.Type, _ extra: [String] = []) -> JSONValue
    where E.RawValue == String {
        S.oneOf(type.allCases.map(\.rawValue) + extra)
    }

    /// One of the raw values of `type`, or `null` (as `anyOf`: an `enum` alone would
    /// refuse `null`).
    static func nullableCases<E: CaseIterable & RawRepresentable>(_ type: E.Type) -> JSONValue
    where E.RawValue == String {
        ["anyOf": [cases(type), ["type": "null"]]]
    }

    /// An activity's join rule as shown (`ActivityRoutes.joinRule`): a start's rule,
    /// or `local`.
    static let joinRule: JSONValue = cases(JoinRule.self, ["local"])

    // MARK: Activity (ActivityRoutes.json(ActivityView))

    static let activityProperties: [String: JSONValue] = [
        "activity_id": S.string, "activity_type": S.string,
        "origin": cases(ActivityRecord.Origin.self), "status": cases(ActivityStatus.self),
        "started_at": S.time, "updated_at": S.nullable(S.time),
        "ended_at": S.nullable(S.time), "end_cause": nullableCases(EndCause.self),
        "update_deadline": S.time, "end_at": S.nullable(S.time),
        "end_deadline": S.time, "delivery": cases(ActivityDelivery.self),
        "join": joinRule,
    ]

    static let activity: JSONValue = S.object(activityProperties, required: Array(activityProperties.keys))

    // MARK: ActivityDetail (ActivityRoutes.show)

    /// One of its broadcast channels.
    static let channel: JSONValue = S.object(
        ["channel_id": S.string, "apns_channel_id": S.string, "environment": cases(APNsEnvironment.self)],
        required: ["channel_id", "apns_channel_id", "environment"])

    /// One of its newest sends, with what it came to.
    static let sendSummary: JSONValue = {
        let properties: [String: JSONValue] = [
            "send_id": S.string, "event": cases(PushEvent.self), "token_kind": cases(PushTokenKind.self),
            "status": S.string, "targets": S.integer, "sent": S.integer, "received": S.integer,
            "created_at": S.time,
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    static let activityDetail: JSONValue = {
        var properties: [String: JSONValue] = activityProperties
        let extra: [String: JSONValue] = [
            "attributes": S.nullable(S.anyObject), "content_state": S.nullable(S.anyObject),
            "channels": S.array(channel), "devices": S.array(S.ref("ActivityCopy")),
            "sends": S.array(sendSummary),
            "renewed_to": S.nullable(S.string), "renewed_from": S.nullable(S.string),
            // Only for an activity renewed, or with devices that could not be.
            "not_renewed": S.array(S.string),
        ]
        properties.merge(extra, uniquingKeysWith: { $1 })
        return S.object(properties, required: properties.keys.filter { $0 != "not_renewed" })
    }()

    // MARK: ActivityCopy (CopyJSON.json, with the priority-10 budget)

    static let copy: JSONValue = {
        let budget: JSONValue = S.object(
            ["per_hour": S.integer, "remaining": S.integer], required: ["per_hour", "remaining"])
        let properties: [String: JSONValue] = [
            "device_id": S.string, "status": cases(CopyStatus.self),
            "has_update_token": S.boolean, "update_token_prefix": S.nullable(S.string),
            "environment": nullableCases(APNsEnvironment.self),
            "token_registered_at": S.nullable(S.time), "created_at": S.time,
            "ended_at": S.nullable(S.time), "end_cause": nullableCases(EndCause.self),
            "on_channel": S.boolean, "platform": S.string, "joined": S.boolean,
            "last_received_send_id": S.nullable(S.string), "last_received_at": S.nullable(S.time),
            "priority_10_budget": S.nullable(budget),
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    // MARK: ActivityAudience (ActivityRoutes.json(ActivityJoinView))

    static let audience: JSONValue = {
        let values: JSONValue = S.object(
            ["user_ids": S.array(S.string), "device_ids": S.array(S.string), "tags": S.array(S.string)],
            required: ["user_ids", "device_ids", "tags"])
        let joinedProperties: [String: JSONValue] = [
            "device_id": S.string, "platform": S.string, "status": cases(CopyStatus.self), "joined_at": S.time,
        ]
        let joined: JSONValue = S.object(joinedProperties, required: Array(joinedProperties.keys))
        let properties: [String: JSONValue] = [
            "activity_id": S.string, "origin": cases(ActivityRecord.Origin.self), "join": joinRule,
            "local_join": cases(LocalJoinRule.self), "audience": values,
            "created_by": S.nullable(S.string), "creator_user_id": S.nullable(S.string),
            "joined": S.array(joined),
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    // MARK: Push (ActivityRoutes.json(PushHistoryItem))

    static let push: JSONValue = {
        let properties: [String: JSONValue] = [
            "device_id": S.nullable(S.string), "channel_id": S.nullable(S.string),
            "token_kind": cases(PushTokenKind.self), "platform": S.oneOf(["android", "ios"]),
            "event": cases(PushEvent.self), "status": cases(PushStatus.self, ["deferred"]),
            "environment": nullableCases(APNsEnvironment.self), "environment_switched": S.boolean,
            "apns_status": S.nullable(S.integer), "fcm_status": S.nullable(S.integer),
            "reason": S.nullable(S.string), "apns_id": S.string,
            "apns_unique_id": S.nullable(S.string), "fcm_message_name": S.nullable(S.string),
            "attempts": S.integer, "created_at": S.time, "updated_at": S.time, "sent_at": S.nullable(S.time),
            "taps": S.integer, "first_tapped_at": S.nullable(S.time),
            "priority_downgraded": S.boolean, "deferred_until": S.nullable(S.time),
            "send_id": S.string, "received_at": S.nullable(S.time),
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    // MARK: Send (ActivityRoutes.sends: one send of the activity's timeline)

    static let send: JSONValue = {
        let properties: [String: JSONValue] = [
            "send_id": S.string, "event": cases(PushEvent.self), "token_kind": cases(PushTokenKind.self),
            "platform": S.string, "status": S.string, "drop_reason": S.nullable(S.string),
            "created_at": S.time, "content_state": S.nullable(S.anyObject),
            "changed": S.nullable(S.array(S.string)),
            // `aps.alert` as sent: a string or an object, or null.
            "alert": S.anyValue,
            "targets": S.integer, "sent": S.integer, "failed": S.integer, "received": S.integer, "taps": S.integer,
        ]
        return S.object(properties, required: Array(properties.keys))
    }()

    // MARK: Send answers (StartResult, ActivitySendResult, Scheduling.scheduled)

    static let startQueued: JSONValue = {
        let properties: [String: JSONValue] = [
            "activity_id": S.string, "targets": S.integer, "deferred": S.integer,
            "delivery": cases(ActivityDelivery.self), "delivery_reason": S.string,
            "channels": S.array(S.string), "channel_targets": S.integer,
            "android_targets": S.integer, "warnings": S.array(S.string),
        ]
        return S.object(properties, required: ["activity_id", "targets", "deferred", "delivery"])
    }()

    static let sendQueued: JSONValue = {
        let properties: [String: JSONValue] = [
            "activity_id": S.string, "targets": S.integer, "superseded": S.integer,
            "priority_downgraded": S.integer, "broadcasts": S.integer, "android_targets": S.integer,
            "warnings": S.array(S.string),
        ]
        return S.object(properties, required: ["activity_id", "targets", "superseded", "priority_downgraded"])
    }()

    static let alreadyEnded: JSONValue = S.object(
        ["activity_id": S.string, "targets": S.integer, "status": S.oneOf(["ended"]), "detail": S.string],
        required: ["activity_id", "targets", "status", "detail"])

    static let scheduled: JSONValue = S.object(
        ["schedule_id": S.string, "send_at": S.time, "status": S.oneOf([ScheduleStatus.scheduled.rawValue])],
        required: ["schedule_id", "send_at", "status"])

    // MARK: Schedule (ScheduleRoutes.json(ScheduleRecord))

    static let schedule: JSONValue = {
        let properties: [String: JSONValue] = [
            "schedule_id": S.string, "kind": cases(ScheduleKind.self), "activity_id": S.nullable(S.string),
            "send_at": S.time, "status": cases(ScheduleStatus.self), "reason": S.nullable(S.string),
            "targets": S.nullable(S.integer), "created_at": S.time, "fired_at": S.nullable(S.time),
            "detail": S.string, "entry_index": S.integer,
        ]
        // `detail` and `entry_index` only when the item has them.
        return S.object(properties, required: properties.keys.filter { $0 != "detail" && $0 != "entry_index" })
    }()

    // MARK: Timeline (TimelineRoutes.json(TimelineView))

    static let timeline: JSONValue = {
        let entryProperties: [String: JSONValue] = [
            "index": S.integer, "at": S.time,
            // TimelineView.Entry.status.
            "status": S.oneOf(["pending", "sent", "skipped", "cancelled"]),
            "schedule_id": S.string, "sent_at": S.nullable(S.time), "reason": S.nullable(S.string),
        ]
        let entry: JSONValue = S.object(entryProperties, required: Array(entryProperties.keys))
        let properties: [String: JSONValue] = [
            "activity_id": S.string, "entries": S.array(entry), "end_at": S.nullable(S.time), "renew": S.boolean,
        ]
        return S.object(properties, required: Array(properties.keys))
    }()
}
