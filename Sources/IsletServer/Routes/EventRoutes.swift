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
    static let typesPattern: String = {
        let families = Set(EventType.allCases.map { String($0.family) }).sorted().map { "\($0)\\.\\*" }
        let exact = EventType.allCases.map { $0.rawValue.replacingOccurrences(of: ".", with: "\\.") }
        let one = "(\\*|" + (families + exact).joined(separator: "|") + ")"
        return "^\(one)(,\(one))*$"
    }()

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

/// Writes an app's events as Server-Sent Events: each as `id:` / `event:` / `data:`
/// lines, a comment every `keepAlive` while nothing happens (proxies close idle
/// connections), the catch-up after `Last-Event-ID` read from the database, then the
/// live events from this node's feed, without a gap or a repeat.
struct EventStreaming: Sendable {
    let feed: EventFeed
    let events: EventService
    let keepAlive: Duration

    /// Events read per catch-up page.
    static let page = 500

    func response(appID: String, after: Int64?, patterns: [EventPattern]) async throws -> HTTPResponse {
        // Without Last-Event-ID (or ?after=), the stream starts now.
        let start = after ?? feed.cursor
        let feed = self.feed
        let events = self.events
        let keepAlive = self.keepAlive
        return HTTPResponse.stream(
            headers: [
                "Content-Type": "text/event-stream; charset=utf-8", "Cache-Control": "no-cache",
                "X-Accel-Buffering": "no",
            ]
        ) { writer in
            var cursor = start
            // The first bytes: a retry hint, so that the headers and something of the
            // body reach the client at once.
            guard writer.write(Data("retry: 2000\n: stream of \(appID) after \(EventRecord.id(cursor))\n\n".utf8)) else { return }
            while !writer.isClosed {
                let batch: [EventRecord]
                var through = cursor
                if let fresh = feed.events(appID: appID, after: cursor, patterns: patterns) {
                    batch = fresh.events
                    through = fresh.through
                } else {
                    // Further behind than the feed remembers: from the database. A
                    // page that is not full holds everything committed when it was
                    // read, which includes all the feed had read before: the stream
                    // goes on from the feed's cursor.
                    let feedCursor = feed.cursor
                    guard let page = try? await events.page(appID: appID, after: cursor, patterns: patterns, limit: Self.page)
                    else { return }
                    batch = page.items
                    through = page.items.last?.sequence ?? cursor
                    if page.items.count < Self.page { through = max(through, feedCursor) }
                }
                if !batch.isEmpty {
                    // In pieces, each written once the connection has taken most of
                    // the one before: a stream with thousands of events to send
                    // keeps within its buffer, at the pace of its client.
                    var text = ""
                    for event in batch {
                        text += Self.frame(event)
                        if text.utf8.count >= Self.piece {
                            guard await Self.send(text, to: writer) else { return }
                            text = ""
                        }
                    }
                    if !text.isEmpty { guard await Self.send(text, to: writer) else { return } }
                }
                if through > cursor { cursor = through }
                if batch.isEmpty {
                    let before = feed.cursor
                    if before <= cursor {
                        // News, the client leaving (or the server stopping), or the
                        // keep-alive's time, whichever comes first.
                        let waitingFrom = cursor
                        await withTaskGroup(of: Void.self) { group in
                            group.addTask { await feed.wait(after: waitingFrom, timeout: keepAlive) }
                            group.addTask { _ = await writer.closed(within: keepAlive) }
                            await group.next()
                            group.cancelAll()
                        }
                        if writer.isClosed { return }
                        if feed.cursor <= cursor {
                            guard writer.write(Data(": keep-alive\n\n".utf8)) else { return }
                        }
                    }
                }
            }
        }
    }

    /// Bytes per write of a batch.
    static let piece = 64 * 1024

    /// Writes `text` once the writer's queue is below two pieces; false once the
    /// client is gone.
    static func send(_ text: String, to writer: HTTPBodyWriter) async -> Bool {
        while writer.queuedBytes > 2 * piece {
            if writer.isClosed { return false }
            try? await Task.sleep(for: .milliseconds(2))
        }
        return writer.write(Data(text.utf8))
    }

    /// One event as a Server-Sent Events message.
    static func frame(_ event: EventRecord) -> String {
        "id: \(event.id)\nevent: \(event.type)\ndata: \(event.json.jsonText)\n\n"
    }
}
