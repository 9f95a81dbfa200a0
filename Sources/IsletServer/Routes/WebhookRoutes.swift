import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// An app's webhook endpoints (server key): saved with a secret shown once, listed,
/// changed, removed, their secret rotated; their deliveries listed and retried.
struct WebhookRoutes: Sendable {
    let webhooks: WebhookService

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/webhooks",
                summary: "Add a webhook endpoint; its signing secret (whsec_…) is in this answer only.", access: .server,
                body: RequestSchemas.createWebhook(allowHTTP: webhooks.allowsHTTP), carriesSecret: true,
                responses: [
                    (201, "{id, url, events, description, enabled, secret, …}"), (409, "The app has as many webhooks as it may"),
                    (422, "The URL or an event type is refused"),
                ],
                answer: AnswerSchemas.webhookWithSecretAnswer
            ) { request in try await create(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/webhooks", summary: "List the app's webhook endpoints, oldest first.",
                access: .server, query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.webhookPageAnswer
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/webhooks/{webhook_id}", summary: "Read a webhook endpoint.", access: .server,
                responses: [(200, "The webhook"), (404, "No such webhook")], answer: AnswerSchemas.ref("Webhook")
            ) { request in try await show(request) },
            APIRoute(
                "PATCH", "/v1/apps/{app_id}/webhooks/{webhook_id}",
                summary: "Change a webhook's URL, events or description, or enable or disable it.", access: .server,
                body: RequestSchemas.updateWebhook(allowHTTP: webhooks.allowsHTTP),
                responses: [(200, "The webhook"), (404, "No such webhook"), (422, "The URL or an event type is refused")],
                answer: AnswerSchemas.ref("Webhook")
            ) { request in try await update(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/webhooks/{webhook_id}", summary: "Remove a webhook and its deliveries.",
                access: .server, responses: [(204, "Removed"), (404, "No such webhook")]
            ) { request in try await delete(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/webhooks/{webhook_id}/rotate-secret",
                summary: "Give the webhook a new secret (in this answer only); the old one also signs for 24 hours.",
                access: .server, body: RequestSchemas.empty, carriesSecret: true,
                responses: [(200, "The webhook with its new secret"), (404, "No such webhook")],
                answer: AnswerSchemas.webhookWithSecretAnswer
            ) { request in try await rotate(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/webhooks/{webhook_id}/deliveries",
                summary: "List a webhook's deliveries, newest first.", access: .server, query: Self.deliveriesQuery,
                responses: [(200, "{items, next_cursor}"), (404, "No such webhook"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.webhookDeliveryPageAnswer
            ) { request in try await deliveries(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
                summary: "Send a delivery again now, with the same webhook-id.", access: .server, body: RequestSchemas.empty,
                responses: [(202, "The delivery, pending"), (404, "No such delivery"), (409, "Being sent now, or the webhook is disabled")],
                answer: AnswerSchemas.ref("WebhookDelivery")
            ) { request in try await retry(request) },
        ]
    }

    private func create(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let url = body.root.string("url")
        let events = body.root.strings("events")
        let description = body.root.string("description")
        try body.finish()
        let webhook = try await webhooks.create(CreateWebhook(
            appID: request.app.id, url: try body.required(url, "url"), events: try body.required(events, "events"),
            description: description))
        return APIJSON.response(status: 201, Self.json(webhook, secret: true))
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        let page = try await webhooks.list(
            appID: request.app.id, after: request.query["cursor", as: WebhookCursor.self],
            limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            "items": .array(page.items.map { Self.json($0) }),
            "next_cursor": page.nextCursor.map { .string(Self.cursorText($0)) } ?? .null,
        ]))
    }

    /// `<created_at ms>-<webhook id>`, as `next_cursor` writes it.
    static func cursorText(_ cursor: WebhookCursor) -> String {
        "\(cursor.createdAt.unixMilliseconds)-\(cursor.webhookID)"
    }

    /// A cursor as `cursorText` writes it, or nil.
    static func cursor(_ text: String) -> WebhookCursor? {
        guard let dash = text.firstIndex(of: "-") else { return nil }
        let digits = text[..<dash]
        let id = text[text.index(after: dash)...]
        let hex = id.dropFirst(3)
        guard (1...15).contains(digits.count), digits.allSatisfy({ ("0"..."9").contains($0) }), let milliseconds = Int64(digits),
            id.hasPrefix("wh_"), (1...64).contains(hex.count), hex.allSatisfy({ ("0"..."9").contains($0) || ("a"..."f").contains($0) })
        else { return nil }
        return WebhookCursor(createdAt: Date(unixMilliseconds: milliseconds), webhookID: String(id))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        return APIJSON.response(Self.json(try await webhooks.show(appID: request.app.id, webhookID: id)))
    }

    private func update(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        let body = try request.body()
        let url = body.root.string("url")
        let events = body.root.strings("events")
        let description = body.root.isNull("description") ? "" : body.root.string("description")
        let enabled = body.root.bool("enabled")
        try body.finish()
        let webhook = try await webhooks.update(UpdateWebhook(
            appID: request.app.id, webhookID: id, url: url, events: events, description: description, enabled: enabled))
        return APIJSON.response(Self.json(webhook))
    }

    private func delete(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        try await webhooks.delete(appID: request.app.id, webhookID: id)
        return HTTPResponse(status: 204)
    }

    private func rotate(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        try request.body().finish()
        return APIJSON.response(Self.json(try await webhooks.rotateSecret(appID: request.app.id, webhookID: id), secret: true))
    }

    private func deliveries(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        let page = try await webhooks.deliveries(
            appID: request.app.id, webhookID: id, before: request.query["cursor", as: Int64.self],
            limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            "items": .array(page.items.map(Self.json)),
            "next_cursor": page.nextCursor.map { .string(WebhookDeliveryRecord.id($0)) } ?? .null,
        ]))
    }

    private func retry(_ request: RouteRequest) async throws -> HTTPResponse {
        let id = try PathValues.identifier(request.parameters, "webhook_id")
        let deliveryID = try PathValues.identifier(request.parameters, "delivery_id")
        try request.body().finish()
        let delivery = try await webhooks.retry(appID: request.app.id, webhookID: id, deliveryID: deliveryID)
        return APIJSON.response(status: 202, Self.json(delivery))
    }

    static let listQuery: [QueryParameter] = [
        .integer("limit", "Webhooks per page.", 1...200, default: 50),
        .cursor("^[0-9]{1,15}-wh_[0-9a-f]{1,64}$", convert: WebhookRoutes.cursor),
    ]

    static let deliveriesQuery: [QueryParameter] = [
        .integer("limit", "Deliveries per page.", 1...200, default: 50),
        .cursor("^dlv_[0-9]{1,18}$", convert: WebhookDeliveryRecord.sequence(of:)),
    ]

    static func json(_ webhook: WebhookRecord, secret: Bool = false) -> JSONValue {
        var body: [String: JSONValue] = [
            "id": .string(webhook.webhookID), "url": .string(webhook.url),
            "events": .array(webhook.events.map(JSONValue.string)), "description": APIJSON.optional(webhook.description),
            "enabled": .bool(webhook.enabled), "disabled_reason": APIJSON.optional(webhook.disabledReason),
            "failing_since": APIJSON.date(webhook.failingSince), "created_at": APIJSON.date(webhook.createdAt),
            "updated_at": APIJSON.date(webhook.updatedAt),
        ]
        if secret { body["secret"] = .string(webhook.secret) }
        return .object(body)
    }

    static func json(_ delivery: WebhookDeliveryRecord) -> JSONValue {
        .object([
            "id": .string(WebhookDeliveryRecord.id(delivery.sequence)), "event_id": .string(EventRecord.id(delivery.eventSequence)),
            "event_type": .string(delivery.eventType), "activity_id": APIJSON.optional(delivery.orderingKey),
            "status": .string(delivery.status.rawValue), "attempts": .integer(Int64(delivery.attempts)),
            "response_status": delivery.responseStatus.map { .integer(Int64($0)) } ?? .null,
            "error": APIJSON.optional(delivery.error),
            "duration_ms": delivery.durationMilliseconds.map { .integer(Int64($0)) } ?? .null,
            "next_attempt_at": APIJSON.date(delivery.status == .pending ? delivery.nextAttemptAt : nil),
            "created_at": APIJSON.date(delivery.createdAt), "last_attempt_at": APIJSON.date(delivery.lastAttemptAt),
        ])
    }
}
