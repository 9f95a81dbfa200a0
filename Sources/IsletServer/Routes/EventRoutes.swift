import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// An app's events (server key): a Server-Sent Events stream with
/// `Accept: text/event-stream` (resumed by `Last-Event-ID`), JSON pages otherwise.
struct EventRoutes: Sendable {
    let events: EventService
    let stream: EventStreaming?

    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", "/v1/apps/{app_id}/events",
                summary: "The app's events: with Accept: text/event-stream a live stream (Last-Event-ID resumes it), otherwise JSON pages after ?after=.",
                access: .server, query: Self.query,
                responses: [
                    (200, "{items, next_cursor}, or text/event-stream"), (422, "A query parameter or Last-Event-ID is invalid"),
                    (429, "The app has as many event streams open as it may (Retry-After)"),
                ]
            ) { request in try await read(request) },
        ]
    }

    private func read(_ request: RouteRequest) async throws -> HTTPResponse {
        let http = request.http
        var errors: [Problem.FieldError] = []
        let streaming = (http.headers["Accept"] ?? "").lowercased().contains("text/event-stream")
        let known: Set = streaming ? ["types", "after"] : ["types", "after", "limit"]
        for (name, _) in http.query where !known.contains(name) {
            errors.append(.init(field: name, message: "is not a query parameter of this route"))
        }
        var patterns: [EventPattern] = []
        if let types = http.queryValue("types") {
            let list = types.split(separator: ",", omittingEmptySubsequences: false).map {
                $0.trimmingCharacters(in: .whitespaces)
            }
            for (index, text) in list.enumerated() {
                if let pattern = EventPattern(text) { patterns.append(pattern) } else {
                    errors.append(.init(
                        field: list.count == 1 ? "types" : "types[\(index)]", message: "must be \(EventPattern.explanation)"))
                }
            }
        }
        var after: Int64?
        if let text = http.queryValue("after") {
            if let value = EventRecord.sequence(of: text) { after = value } else {
                errors.append(.init(field: "after", message: "must be an event id such as evt_42"))
            }
        }
        if let text = http.headers["Last-Event-ID"], streaming {
            if let value = EventRecord.sequence(of: text.trimmingCharacters(in: .whitespaces)) { after = value } else {
                errors.append(.init(field: "Last-Event-ID", message: "must be the id of an event of this stream, such as evt_42"))
            }
        }
        var limit = 100
        if let text = http.queryValue("limit"), !streaming {
            if let value = Int(text), (1...EventService.maxPage).contains(value) { limit = value } else {
                errors.append(.init(field: "limit", message: "must be a whole number from 1 to \(EventService.maxPage)"))
            }
        }
        guard errors.isEmpty else { throw Problem(status: 422, detail: "The query has invalid parameters.", errors: errors) }
        if streaming, let stream {
            return try await stream.response(appID: request.app.id, after: after, patterns: patterns)
        }
        let page = try await events.page(appID: request.app.id, after: after, patterns: patterns, limit: limit)
        return APIJSON.response(.object([
            "items": .array(page.items.map(\.json)), "next_cursor": APIJSON.optional(page.nextCursor),
        ]))
    }

    /// What `types` may hold: a comma-separated list of event types, families and `*`.
    static let typesPattern = "^\(TextRule.oneEventPattern)(,\(TextRule.oneEventPattern))*$"

    static let query: [QueryParameter] = [
        QueryParameter(
            name: "types", description: "Comma-separated event types or families (push.failed,activity.*).",
            schema: ["type": "string", "pattern": .string(typesPattern)]),
        QueryParameter(name: "after", description: "Events after this event id.", schema: ["type": "string", "pattern": "^evt_[0-9]{1,18}$"]),
        QueryParameter(
            name: "limit", description: "Events per page (default 100; JSON pages only).",
            schema: ["type": "integer", "minimum": 1, "maximum": .integer(Int64(EventService.maxPage))]),
    ]
}
