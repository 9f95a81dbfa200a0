import Foundation
import IsletCore
import IsletService
import Storage

/// The request bodies, field by field: each route declares one (`APIRoute.body`),
/// its handler reads the body by it (`RouteRequest.body()`) and the OpenAPI
/// document renders it, so what is documented is what is enforced.
enum RequestSchemas {
    private static let apnsFields = BodySchema([
        BodyField("team_id", .string(.appleID), required: true),
        BodyField("key_id", .string(.appleID), required: true),
        BodyField(
            "private_key", .string(.privateKeyPEM), required: true,
            description: "The .p8 key's PEM text (a P-256 private key)."),
    ])

    /// A new app, on a server that keeps history `historyRetentionDays` days (an
    /// app's own retention is at most that).
    static func createApp(historyRetentionDays: Double) -> BodySchema { BodySchema([
        BodyField("name", .string(.text(max: 200)), required: true),
        BodyField("bundle_id", .string(.bundleID), required: true),
        BodyField("apns", .object(apnsFields), description: "APNs credentials, all three together; null or absent: none."),
        BodyField("strict_activity_types", .bool),
        BodyField("fcm", .object(fcmFields), description: "The FCM service account, for Android devices; null or absent: none."),
        localJoin,
        historyRetention(server: historyRetentionDays, null: "null or absent: the server's."),
    ]) }
    /// The `fcm` group: the service account's JSON as downloaded.
    private static let fcmFields = BodySchema([
        BodyField(
            "service_account", .anyObject, required: true,
            description: "The service account's JSON (project_id, client_email, private_key: an RSA key, token_uri); sealed at rest, never returned."),
    ])
    /// Changes to an app, on a server that keeps history `historyRetentionDays` days.
    static func updateApp(historyRetentionDays: Double) -> BodySchema { BodySchema([
        BodyField("name", .string(.text(max: 200))),
        BodyField("bundle_id", .string(.bundleID)),
        BodyField("apns", .object(apnsFields), description: "Replaces the credentials as a whole group; null removes them."),
        BodyField("strict_activity_types", .bool),
        BodyField(
            "device_secrets", .enumeration(DeviceSecretPolicy.allCases.map(\.rawValue)),
            description: "required: every device route for a registered device needs its Islet-Device-Secret; off: not checked."),
        BodyField(
            "budget", .object(budgetFields),
            description: "The app's own budget figures; a figure absent is kept, null takes the server's again; null for the whole group takes every server figure."),
        BodyField(
            "rate_limits", .object(rateLimitFields),
            description: "The app's own rate limits; a figure absent is kept, null takes the server's again; null for the whole group takes every server figure."),
        BodyField("fcm", .object(fcmFields), description: "Replaces the FCM service account; null removes it."),
        localJoin,
        historyRetention(server: historyRetentionDays, null: "null takes the server's again."),
    ]) }
    /// `history_retention_days`: from an hour to the server's retention (`server`
    /// days), whose `null` means what `null` says.
    private static func historyRetention(server: Double, null: String) -> BodyField {
        let range = HistoryRetention.days.lowerBound...max(HistoryRetention.days.lowerBound, server)
        return BodyField(
            "history_retention_days", .bounded(range, note: "one hour to the server's retention"),
            description: "Days the app's history (ended activities, settled sends and their pushes) is kept, from 1/24 (one hour) to the server's --history-retention-days (\(HistoryRetention.spoken(server)) here), fractions allowed; a longer one is refused with 422, not cut short; \(null)")
    }
    private static let localJoin = BodyField(
        "local_join", .enumeration(LocalJoinRule.allCases.map(\.rawValue)),
        description: "Who may follow an activity a device created itself (no backend start): anyone (the default): any device that registers for it; user: only devices of the creating device's user_id (without one, that device alone)."
    )
    private static let budgetCount = FieldType.count(SendBudget.range)
    private static let budgetFields = BodySchema([
        BodyField("priority_10_per_hour", budgetCount, description: "Priority-10 updates a copy of an activity gets in any hour."),
        BodyField(
            "frequent_priority_10_per_hour", budgetCount,
            description: "The same, on a device that allowed frequent updates."),
        BodyField(
            "policy", .enumeration(BudgetPolicy.allCases.map(\.rawValue)),
            description: "downgrade: past the budget, an update goes at priority 5; keep: it goes at 10 anyway."),
        BodyField("starts_per_device_per_hour", budgetCount, description: "Push-to-starts a device gets in any hour; later ones wait."),
    ])
    private static let perSecond = FieldType.bounded(RateLimit.perSecondRange, note: "one request an hour to a million a second")
    private static let burst = FieldType.count(RateLimit.burstRange)
    private static let rateLimitFields = BodySchema([
        BodyField(
            "sends_per_second", perSecond,
            description: "Requests of the sends family a second, on average: from 1/3600 (one an hour) to 1,000,000."),
        BodyField("sends_burst", burst, description: "Requests of the sends family at once, before the rate applies."),
        BodyField(
            "registrations_per_second", perSecond,
            description: "Requests of the device routes a second, on average: from 1/3600 (one an hour) to 1,000,000."),
        BodyField("registrations_burst", burst, description: "Requests of the device routes at once, before the rate applies."),
    ])
    static let registerDevice = BodySchema([
        BodyField("platform", .enumeration(DevicePlatform.allCases.map(\.rawValue)), required: true),
        BodyField(
            "environment", .enumeration(APNsEnvironment.allCases.map(\.rawValue)),
            description: "The APNs environment of an ios device's tokens (required there); an android device gives none."),
        BodyField(
            "fcm_token", .string(.text(max: 4096)),
            description: "An android device's FCM registration token; absent or null keeps the stored one."),
        BodyField(
            "apns_token", .token(emptyMeansAbsent: true),
            description: "The device token; absent, null or empty keeps the stored one."),
        BodyField("user_id", .string(.identifier), description: "null clears it."),
        BodyField("tags", .strings(minCount: 0, maxCount: 100, item: .text(max: 100))),
        BodyField(
            "frequent_updates", .bool,
            description: "Whether the user allowed frequent updates (ActivityKit's frequentPushesEnabled); absent keeps what the device said before, null forgets it (unknown)."),
        BodyField(
            "os_version", .string(.text(max: 32)),
            description: "The device's iOS version (18.2): a device on iOS 18 or later, or one that never said, can take a broadcast channel. Absent keeps it, null forgets it."),
    ])
    static let token = BodySchema([BodyField("token", .token(emptyMeansAbsent: false), required: true)])
    /// A broadcast channel to create.
    static let createChannel = BodySchema([
        BodyField("environment", .enumeration(APNsEnvironment.allCases.map(\.rawValue)), required: true),
        BodyField(
            "message_storage_policy", .enumeration(["none", "most_recent"]),
            description: "most_recent: APNs keeps the channel's newest message for devices that subscribe later; none (the default) keeps nothing."),
    ])
    static let registerActivityToken = BodySchema([
        BodyField("activity_type", .string(.activityType), required: true),
        BodyField(
            "token", .token(emptyMeansAbsent: false),
            description: "The activity's update token; required of an iOS device, refused from an android one (FCM reaches its fcm_token)."),
    ])
    /// A new webhook; its URL may be `http` only when the server allows it.
    static func createWebhook(allowHTTP: Bool) -> BodySchema {
        BodySchema([
            BodyField(
                "url", .string(.webhookURL(allowHTTP: allowHTTP)), required: true,
                description: "https (http only with --webhooks-allow-http)."),
            BodyField(
                "events", .strings(minCount: 1, maxCount: 50, item: .eventPattern), required: true,
                description: "Event types (push.failed), families (activity.*) or *."),
            BodyField("description", .string(.text(max: 500))),
        ])
    }
    /// Changes to a webhook; its URL may be `http` only when the server allows it.
    static func updateWebhook(allowHTTP: Bool) -> BodySchema {
        BodySchema([
            BodyField("url", .string(.webhookURL(allowHTTP: allowHTTP))),
            BodyField("events", .strings(minCount: 1, maxCount: 50, item: .eventPattern)),
            BodyField("description", .string(.text(max: 500)), description: "null removes it."),
            BodyField("enabled", .bool, description: "true enables a disabled webhook again (its failures are forgotten)."),
        ])
    }
    /// A body that takes no field (an empty body, or `{}`).
    static let empty = BodySchema([])
    /// A tap on an activity, as the device reports it.
    static let tap = BodySchema([
        BodyField("apns_id", .string(.text(max: 64)), description: "The push tapped; the newest one delivered to the device for the activity when absent."),
        BodyField("tapped_at", .date, description: "When the tap happened (now when absent); the same tap sent again with its time counts once."),
    ])
    static let receipt = BodySchema([
        BodyField(
            "send_id", .string(.text(max: 20)), required: true,
            description: "The send shown: the send_id its content state carried under islet (islet_send_id in an FCM message)."),
        BodyField("received_at", .date, description: "When the device showed it (now when absent); at most 5 minutes ahead."),
    ])
    static let alert = BodySchema([
        BodyField("title", .string(.text(max: 512)), required: true),
        BodyField("body", .string(.text(max: 2_048)), required: true),
        BodyField("sound", .string(.text(max: 256))),
    ])
    private static let audienceList = FieldType.strings(minCount: 1, maxCount: 100_000, item: .text(max: 256))
    static let audience = BodySchema(
        [
            BodyField("user_ids", audienceList, nullable: false),
            BodyField("device_ids", audienceList, nullable: false),
            BodyField("tags", audienceList, nullable: false),
        ],
        exactlyOne: ["user_ids", "device_ids", "tags"])
    private static let priority = BodyField("priority", .integer(allowed: [5, 10]))
    private static let sendAt = BodyField(
        "send_at", .date,
        description: "When to send: ahead, the answer is 202 {schedule_id, send_at, status}; up to 60 s ago, at once.")
    static let timelineEntry = BodySchema([
        BodyField("at", .date, required: true),
        BodyField("content_state", .anyObject, required: true),
        BodyField("alert", .object(alert)),
        BodyField("stale_date", .date),
        BodyField("relevance_score", .number),
        priority,
    ])
    static let timeline = BodySchema([
        BodyField("entries", .objects(timelineEntry, maxCount: 1_440), required: true, description: "In strictly increasing at."),
        BodyField("end_at", .date, description: "Ends the activity then, with the last entry's state."),
        BodyField("renew", .bool, description: "Run past the 8 hours by starting a successor (id~2, ~3, …)."),
    ])
    static let startActivity = BodySchema([
        BodyField("activity_id", .string(.identifier), required: true),
        BodyField("activity_type", .string(.activityType), required: true),
        BodyField("attributes", .anyObject, required: true),
        BodyField("content_state", .anyObject, required: true),
        BodyField("alert", .object(alert), required: true),
        BodyField(
            "audience", .object(audience),
            description: "Required, unless delivery is channel: then, without one, the app starts the activity on its devices, subscribed to the channel."),
        BodyField("stale_date", .date),
        BodyField("relevance_score", .number),
        priority,
        BodyField("end_at", .date),
        sendAt,
        BodyField("timeline", .object(timeline), description: "Entries pushed after the start, then the end."),
        BodyField(
            "delivery", .enumeration(DeliveryRequest.allCases.map(\.rawValue)),
            description: "tokens (the default): each update goes to every device's own token; channel: one broadcast per environment (iOS 18); auto: channel when more devices than the broadcast threshold can take one."),
        BodyField("channel_id", .string(.identifier), description: "With delivery channel: the channel to use (created through the channel routes)."),
        BodyField(
            "channel_environment", .enumeration(APNsEnvironment.allCases.map(\.rawValue)),
            description: "With delivery channel and no audience or channel_id: where Islet creates the channel (production by default)."),
        BodyField(
            "join", .enumeration(JoinRule.allCases.map(\.rawValue)),
            description: "Who may follow the activity (register an update token for it, or join it from Android): audience (the default with an audience): the devices the start targeted and any its audience resolves to at the time (widened later through …/audience); anyone (the default without one): any device of the app. Any other device is 403."),
    ])
    /// Values added to an activity's audience: at least one list.
    private static let joinList = FieldType.strings(minCount: 1, maxCount: 10_000, item: .text(max: 256))
    static let widenAudience = BodySchema(
        [
            BodyField("user_ids", joinList, nullable: false, description: "Devices of these user ids may follow it."),
            BodyField("device_ids", joinList, nullable: false, description: "These devices may follow it."),
            BodyField("tags", joinList, nullable: false, description: "Devices carrying one of these tags may follow it."),
        ],
        atLeastOne: true)
    static let updateActivity = BodySchema([
        BodyField("content_state", .anyObject, required: true),
        BodyField("alert", .object(alert)),
        BodyField("stale_date", .date),
        BodyField("relevance_score", .number),
        priority,
        BodyField("end_at", .date),
        sendAt,
    ])
    static let endActivity = BodySchema([
        BodyField("content_state", .anyObject),
        BodyField("dismissal_date", .date),
        sendAt,
    ])
    static let notification = BodySchema([
        BodyField("audience", .object(audience), required: true),
        BodyField("alert", .object(alert), required: true),
        sendAt,
    ])
    static let activityType = BodySchema(
        [
            BodyField("format", .enumeration(ActivityTypeSchema.Format.allCases.map(\.rawValue))),
            BodyField("widget_name", .string(.text(max: 200)), description: "Required for expo-widgets, refused otherwise."),
            BodyField("attributes", .fieldDefinitions, required: true),
            BodyField("content_state", .fieldDefinitions, required: true),
            BodyField("force", .bool),
            BodyField(
                "receipts", .bool,
                description: "Whether each start, update and end carries \"islet\": {\"send_id\": …} in its content state, for the device to send a receipt (default false)."),
        ],
        // widget_name goes with expo-widgets, and only with it (ActivityTypeService).
        anyOf: [
            [
                "required": ["format", "widget_name"],
                "properties": [
                    "format": ["const": .string(ActivityTypeSchema.Format.expoWidgets.rawValue)], "widget_name": ["type": "string"],
                ],
            ],
            [
                "properties": [
                    "format": ["enum": [.string(ActivityTypeSchema.Format.activitykit.rawValue), .null]],
                    "widget_name": ["type": "null"],
                ],
            ],
        ])
}
