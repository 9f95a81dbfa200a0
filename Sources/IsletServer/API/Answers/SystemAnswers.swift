import IsletCore
import IsletService
import Storage

extension AnswerSchemas {
    /// The shapes the system routes share: apps (the admin routes, the overview),
    /// nodes, health.
    static let systemComponents: [String: JSONValue] = [
        "App": appShape,
        "AppWithKeys": appWithKeysShape,
        "AppKeys": appKeysShape,
        "AppBudget": appBudgetShape,
        "AppRateLimits": appRateLimitsShape,
        "Node": nodeShape,
        "Health": healthShape,
    ]

    // MARK: Apps (AppRoutes)

    /// The budget in force, its own figures else the server's (`AppRoutes.json(_:)`).
    private static let appBudgetShape: JSONValue = {
        let properties: [String: JSONValue] = [
            "priority_10_per_hour": integer,
            "frequent_priority_10_per_hour": integer,
            "policy": oneOf(BudgetPolicy.allCases.map(\.rawValue)),
            "starts_per_device_per_hour": integer,
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// The rate limits in force, two figures per family, each `null` when the
    /// family has no limit (`AppRoutes.json(_:)`).
    private static let appRateLimitsShape: JSONValue = {
        var properties: [String: JSONValue] = [:]
        for family in RateFamily.allCases {
            properties["\(family.rawValue)_per_second"] = nullable(number)
            properties["\(family.rawValue)_burst"] = nullable(integer)
        }
        return object(properties, required: Array(properties.keys))
    }()

    /// An app as the admin routes show it (`AppRoutes.json(_:)`, both of them):
    /// every key always there.
    private static let appProperties: [String: JSONValue] = {
        let fcm: JSONValue = object(["project_id": string, "client_email": string], required: ["project_id", "client_email"])
        let apns: JSONValue = object(["team_id": string, "key_id": string], required: ["team_id", "key_id"])
        let properties: [String: JSONValue] = [
            "id": string,
            "name": string,
            "bundle_id": string,
            "created_at": time,
            "updated_at": time,
            "strict_activity_types": boolean,
            "device_secrets": oneOf(DeviceSecretPolicy.allCases.map(\.rawValue)),
            "local_join": oneOf(LocalJoinRule.allCases.map(\.rawValue)),
            "history_retention_days": nullable(number),
            "fcm": nullable(fcm),
            "apns": nullable(apns),
            "budget": ref("AppBudget"),
            "rate_limits": ref("AppRateLimits"),
        ]
        return properties
    }()

    /// An app with `extra` keys, all of them always there.
    private static func appObject(adding extra: [String: JSONValue]) -> JSONValue {
        var properties = appProperties
        properties.merge(extra, uniquingKeysWith: { _, new in new })
        return object(properties, required: Array(properties.keys))
    }

    private static let appShape: JSONValue = appObject(adding: [:])

    /// A new app, with its keys, shown once.
    private static let appWithKeysShape: JSONValue = appObject(adding: ["server_key": string, "device_key": string])

    /// An app's new keys.
    private static let appKeysShape: JSONValue = object(
        ["id": string, "server_key": string, "device_key": string], required: ["id", "server_key", "device_key"])

    /// `POST /v1/apps`.
    static let appCreatedAnswer: JSONValue = ref("AppWithKeys")

    /// `GET /v1/apps`: every app, in one list (no cursor).
    static let appListAnswer: JSONValue = object(["items": array(ref("App"))], required: ["items"])

    /// `PATCH /v1/apps/{app_id}`.
    static let appAnswer: JSONValue = ref("App")

    /// `GET /v1/apps/{app_id}`: the app with what its history holds.
    static let appDetailAnswer: JSONValue = {
        let history: [String: JSONValue] = [
            "retention_days": number,
            "activities": integer,
            "sends": integer,
            "pushes": integer,
            "oldest_at": nullable(time),
        ]
        return appObject(adding: ["history": object(history, required: Array(history.keys))])
    }()

    /// `POST /v1/apps/{app_id}/keys/rotate`.
    static let appKeysAnswer: JSONValue = ref("AppKeys")

    /// What one bucket of the overview (or all of them) came to.
    private static let appOverviewCounts: [String: JSONValue] = [
        "sends": integer,
        "pushes": integer,
        "delivered": integer,
        "failed": integer,
        "received": integer,
        "taps": integer,
        "priority_downgraded": integer,
        "deferred": integer,
        "rate_limited": integer,
        "dead_tokens": integer,
    ]

    /// `GET /v1/apps/{app_id}/overview`.
    static let appOverviewAnswer: JSONValue = {
        var bucket = appOverviewCounts
        bucket["at"] = time
        let failure: [String: JSONValue] = ["reason": string, "count": integer]
        let webhook: [String: JSONValue] = [
            "webhook_id": string,
            "url": string,
            "enabled": boolean,
            "failing_since": nullable(time),
            "disabled_reason": nullable(string),
        ]
        let properties: [String: JSONValue] = [
            "app_id": string,
            "name": string,
            "period": oneOf(OverviewPeriod.allCases.map(\.rawValue)),
            "from": time,
            "to": time,
            "bucket_seconds": integer,
            "totals": object(appOverviewCounts, required: Array(appOverviewCounts.keys)),
            "series": array(object(bucket, required: Array(bucket.keys))),
            "failures": array(object(failure, required: Array(failure.keys))),
            "webhooks_failing": array(object(webhook, required: Array(webhook.keys))),
            "budget": ref("AppBudget"),
            "rate_limits": ref("AppRateLimits"),
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /v1/apps/{app_id}/lookup`.
    static let appLookupAnswer: JSONValue = {
        let activity: [String: JSONValue] = ["activity_id": string, "activity_type": string, "status": string]
        let device: [String: JSONValue] = [
            "device_id": string, "platform": string, "user_id": nullable(string), "matched": string,
        ]
        let copy: [String: JSONValue] = ["activity_id": string, "device_id": string]
        let push: [String: JSONValue] = [
            "activity_id": nullable(string),
            "device_id": string,
            "apns_id": string,
            "event": string,
            "status": string,
            "send_id": string,
            "matched": string,
        ]
        let properties: [String: JSONValue] = [
            "query": string,
            "activities": array(object(activity, required: Array(activity.keys))),
            "devices": array(object(device, required: Array(device.keys))),
            "copies": array(object(copy, required: Array(copy.keys))),
            "pushes": array(object(push, required: Array(push.keys))),
        ]
        return object(properties, required: Array(properties.keys))
    }()

    // MARK: Pushes (ExportRoutes)

    /// A push row as `GET /v1/apps/{app_id}/pushes` shows it: `ActivityRoutes.json(_:
    /// PushHistoryItem)` with its activity (`null` for an alert). A broadcast names
    /// its channel instead of a device; an Android push has FCM's figures instead of
    /// APNs's.
    private static let exportPushRow: JSONValue = {
        let properties: [String: JSONValue] = [
            "activity_id": nullable(string),
            "device_id": nullable(string),
            "channel_id": nullable(string),
            "token_kind": string,
            "platform": oneOf(["android", "ios"]),
            "event": string,
            "status": string,
            "environment": nullable(string),
            "environment_switched": boolean,
            "apns_status": nullable(integer),
            "fcm_status": nullable(integer),
            "reason": nullable(string),
            "apns_id": string,
            "apns_unique_id": nullable(string),
            "fcm_message_name": nullable(string),
            "attempts": integer,
            "created_at": time,
            "updated_at": time,
            "sent_at": nullable(time),
            "taps": integer,
            "first_tapped_at": nullable(time),
            "priority_downgraded": boolean,
            "deferred_until": nullable(time),
            "send_id": string,
            "received_at": nullable(time),
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /v1/apps/{app_id}/pushes`.
    static let exportPushPageAnswer: JSONValue = page(of: exportPushRow, required: ["next_cursor"])

    // MARK: Sessions (SessionRoutes)

    /// `DELETE /v1/sessions`.
    static let sessionsEndedAnswer: JSONValue = object(["ended": integer], required: ["ended"])

    // MARK: Nodes (NodeRoutes)

    /// A node as its heartbeats show it.
    private static let nodeShape: JSONValue = {
        let properties: [String: JSONValue] = [
            "node_id": string, "started_at": time, "last_heartbeat_at": time, "claimed_pushes": integer,
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /v1/nodes`: every node, in one list (no cursor).
    static let nodeListAnswer: JSONValue = object(["items": array(ref("Node"))], required: ["items"])

    // MARK: System (SystemRoutes)

    /// A healthy node's answer (the 503 is not a success answer).
    private static let healthShape: JSONValue = {
        let checks: JSONValue = object(["database": oneOf(["ok"])], required: ["database"])
        let properties: [String: JSONValue] = [
            "status": oneOf(["ok"]), "checks": checks, "node_id": string, "backend": string,
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /healthz`.
    static let healthAnswer: JSONValue = ref("Health")

    /// `GET /healthz`'s 503: the same shape, the failing check's problem in place
    /// of its `ok`.
    static let unhealthyAnswer: JSONValue = {
        let checks: JSONValue = object(["database": string], required: ["database"])
        let properties: [String: JSONValue] = [
            "status": oneOf(["unavailable"]), "checks": checks, "node_id": string, "backend": string,
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /v1/version`.
    static let versionAnswer: JSONValue = {
        let libraries: [String: JSONValue] = [
            "openssl": string, "nghttp2": string, "libmicrohttpd": string, "sqlite": string, "libpq": string,
        ]
        let properties: [String: JSONValue] = [
            "name": oneOf(["islet"]),
            "version": string,
            "schema_version": integer,
            "libraries": object(libraries, required: Array(libraries.keys)),
        ]
        return object(properties, required: Array(properties.keys))
    }()

    /// `GET /openapi.json`: the document's outline (`OpenAPIDocument.make`).
    static let openAPIDocumentAnswer: JSONValue = {
        let info: [String: JSONValue] = ["title": string, "version": string, "description": string]
        let tag: [String: JSONValue] = ["name": string, "description": string]
        let components: [String: JSONValue] = ["securitySchemes": anyObject, "schemas": anyObject]
        let properties: [String: JSONValue] = [
            "openapi": string,
            "info": object(info, required: Array(info.keys)),
            "tags": array(object(tag, required: Array(tag.keys))),
            "paths": anyObject,
            "components": object(components, required: Array(components.keys)),
        ]
        return object(properties, required: Array(properties.keys))
    }()
}
