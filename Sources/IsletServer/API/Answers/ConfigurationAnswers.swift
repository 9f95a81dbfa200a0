import IsletCore
import Storage

extension AnswerSchemas {
    /// The shapes the configuration routes share.
    static let configurationComponents: [String: JSONValue] = [
        "ActivityType": activityTypeComponent,
        "Webhook": webhookComponent,
        "WebhookDelivery": webhookDeliveryComponent,
        "Event": eventComponent,
    ]

    // MARK: Activity types

    /// A map of field definitions by name (`FieldSchema.json(_:)`).
    private static let activityTypeFieldMap: JSONValue = ["type": "object", "additionalProperties": ref("Field")]

    /// A registered activity type (`ActivityTypeRoutes.json(_:)`): its schema
    /// (`ActivityTypeSchema.json`) with its name, times and receipts flag.
    private static let activityTypeComponent: JSONValue = {
        let properties: [String: JSONValue] = [
            "activity_type": string,
            "format": oneOf(ActivityTypeSchema.Format.allCases.map(\.rawValue)),
            "widget_name": nullable(string),
            "attributes": activityTypeFieldMap,
            "content_state": activityTypeFieldMap,
            "created_at": time,
            "updated_at": time,
            "receipts": boolean,
        ]
        return object(
            properties,
            required: [
                "activity_type", "format", "widget_name", "attributes", "content_state", "created_at", "updated_at",
                "receipts",
            ])
    }()

    /// PUT of an activity type (201 or 200): the type, with `breaking_changes` when a
    /// replacement changed what running activities decode (sent with `force`).
    static let activityTypePutAnswer: JSONValue = {
        let extra: JSONValue = object(["breaking_changes": array(string)])
        return ["allOf": [ref("ActivityType"), extra]]
    }()

    /// The list of activity types: `{items}`.
    static let activityTypeListAnswer: JSONValue = {
        let properties: [String: JSONValue] = ["items": array(ref("ActivityType"))]
        return object(properties, required: ["items"])
    }()

    // MARK: Webhooks

    /// A webhook endpoint (`WebhookRoutes.json(_:secret:)`), without its secret.
    private static let webhookComponent: JSONValue = {
        let properties: [String: JSONValue] = [
            "id": string,
            "url": string,
            "events": array(string),
            "description": nullable(string),
            "enabled": boolean,
            "disabled_reason": nullable(string),
            "failing_since": nullable(time),
            "created_at": time,
            "updated_at": time,
        ]
        return object(
            properties,
            required: [
                "id", "url", "events", "description", "enabled", "disabled_reason", "failing_since", "created_at",
                "updated_at",
            ])
    }()

    /// A webhook with its signing secret (`whsec_…`): what creating one and rotating
    /// its secret answer.
    static let webhookWithSecretAnswer: JSONValue = {
        let secret: JSONValue = object(["secret": string], required: ["secret"])
        return ["allOf": [ref("Webhook"), secret]]
    }()

    /// A page of webhooks: `{items, next_cursor}`.
    static let webhookPageAnswer: JSONValue = page(of: ref("Webhook"), required: ["next_cursor"])

    /// One delivery of an event to a webhook (`WebhookRoutes.json(_:)` of a
    /// `WebhookDeliveryRecord`).
    private static let webhookDeliveryComponent: JSONValue = {
        let properties: [String: JSONValue] = [
            "id": string,
            "event_id": string,
            "event_type": string,
            "activity_id": nullable(string),
            "status": oneOf(WebhookDeliveryStatus.allCases.map(\.rawValue)),
            "attempts": integer,
            "response_status": nullable(integer),
            "error": nullable(string),
            "duration_ms": nullable(integer),
            "next_attempt_at": nullable(time),
            "created_at": time,
            "last_attempt_at": nullable(time),
        ]
        return object(
            properties,
            required: [
                "id", "event_id", "event_type", "activity_id", "status", "attempts", "response_status", "error",
                "duration_ms", "next_attempt_at", "created_at", "last_attempt_at",
            ])
    }()

    /// A page of a webhook's deliveries: `{items, next_cursor}`.
    static let webhookDeliveryPageAnswer: JSONValue = page(of: ref("WebhookDelivery"), required: ["next_cursor"])

    // MARK: Events

    /// An event as readers see it (`EventRecord.json`): `{id, type, app_id,
    /// occurred_at, data}`, the data's keys depending on its type.
    private static let eventComponent: JSONValue = {
        let properties: [String: JSONValue] = [
            "id": string,
            "type": string,
            "app_id": string,
            "occurred_at": time,
            "data": anyObject,
        ]
        return object(properties, required: ["id", "type", "app_id", "occurred_at", "data"])
    }()

    /// A page of events (JSON, not the stream): `{items, next_cursor}`.
    static let eventPageAnswer: JSONValue = page(of: ref("Event"), required: ["next_cursor"])
}
