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
                access: .server, query: Self.query, alsoChecks: { Self.lastEventID($0).fault.map { [$0] } ?? [] },
                responses: [
                    (200, "{items, next_cursor}, or text/event-stream"), (422, "A query parameter or Last-Event-ID is invalid"),
                    (429, "The app has as many event streams open as it may (Retry-After)"),
                ],
                answer: AnswerSchemas.eventPageAnswer
            ) { request in try await read(request) },
        ]
    }

    private func read(_ request: RouteRequest) async throws -> HTTPResponse {
        // The router has refused a Last-Event-ID that is not an event id.
        let after: Int64? = Self.lastEventID(request.http).after ?? request.query["after"]
        let patterns: [EventPattern] = request.query["types"] ?? []
        if Self.isStreaming(request.http), let stream {
            return try await stream.response(appID: request.app.id, after: after, patterns: patterns)
        }
        let page = try await events.page(
            appID: request.app.id, after: after, patterns: patterns, limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            "items": .array(page.items.map(\.json)), "next_cursor": APIJSON.optional(page.nextCursor),
        ]))
    }

    /// Whether a request asks for the stream rather than a page.
    static func isStreaming(_ request: HTTPRequest) -> Bool {
        (request.headers["Accept"] ?? "").lowercased().contains("text/event-stream")
    }

    /// The event a stream resumes after (`Last-Event-ID`, read on streams only), or
    /// the fault that refuses it.
    static func lastEventID(_ request: HTTPRequest) -> (after: Int64?, fault: Problem.FieldError?) {
        guard isStreaming(request), let text = request.headers["Last-Event-ID"] else { return (nil, nil) }
        guard let value = EventRecord.sequence(of: text.trimmingCharacters(in: .whitespaces)) else {
            return (nil, .init(field: "Last-Event-ID", message: "must be the id of an event of this stream, such as evt_42"))
        }
        return (value, nil)
    }

    static let query: [QueryParameter] = [
        .list(
            "types", "Comma-separated event types or families (push.failed,activity.*).", item: .eventPattern,
            convert: { EventPattern($0) }),
        .pattern(
            "after", "Events after this event id.", "^evt_[0-9]{1,18}$", message: "must be an event id such as evt_42",
            convert: EventRecord.sequence(of:)),
        .integer(
            "limit", "Events per page (JSON pages only).", 1...Int64(EventService.maxPage), default: 100,
            applies: { !EventRoutes.isStreaming($0) }),
    ]
}
