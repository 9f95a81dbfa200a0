import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Testing

/// What one app may hold, through the API: webhooks (409 past the cap), event
/// streams open at once (429 with Retry-After past the cap, a slot freed when a
/// stream closes), tags per device (422 past 100); and webhook lists come in pages.
@Suite("Caps an app cannot exceed")
struct AppCapsTests {
    func createWebhook(_ harness: ServerHarness, _ app: TestApp, _ n: Int) async throws -> Reply {
        try await harness.call(
            "POST", "/v1/apps/\(app.id)/webhooks", key: app.serverKey,
            json: ["url": .string("https://8.8.8.8/hooks/\(n)"), "events": ["*"]])
    }

    @Test func anAppHasAtMostItsWebhooks() async throws {
        try await ServerHarness.with(configure: { $0.maxWebhooksPerApp = 2 }) { harness in
            let app = try await harness.createApp()
            var ids: [String] = []
            for n in 1...2 {
                let created = try await createWebhook(harness, app, n)
                #expect(created.status == 201, "\(created.json)")
                ids.append(try #require(created["id"]?.stringValue))
            }
            let third = try await createWebhook(harness, app, 3)
            #expect(third.status == 409, "\(third.json)")
            #expect(third.headers["content-type"] == "application/problem+json")
            let detail = third["detail"]?.stringValue ?? ""
            #expect(detail.contains("(2, --max-webhooks-per-app)"), "\(detail)")
            #expect(third["secret"] == nil)
            let listed = try await harness.call("GET", "/v1/apps/\(app.id)/webhooks", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.count == 2)
            // The cap is the app's: another app has its own.
            let other = try await harness.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await createWebhook(harness, other, 1).status == 201)
            // Removing one makes room again.
            #expect(try await harness.call("DELETE", "/v1/apps/\(app.id)/webhooks/\(ids[0])", key: app.serverKey).status == 204)
            #expect(try await createWebhook(harness, app, 4).status == 201)
            #expect(try await createWebhook(harness, app, 5).status == 409)
        }
    }

    @Test func creationsAtOnceStayWithinTheCap() async throws {
        try await ServerHarness.with(configure: { $0.maxWebhooksPerApp = 3 }) { harness in
            let app = try await harness.createApp()
            let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
                for n in 1...8 { group.addTask { try await createWebhook(harness, app, n).status } }
                return try await group.reduce(into: [Int]()) { $0.append($1) }
            }
            #expect(statuses.filter { $0 == 201 }.count == 3, "\(statuses)")
            #expect(statuses.filter { $0 == 409 }.count == 5, "\(statuses)")
            let listed = try await harness.call("GET", "/v1/apps/\(app.id)/webhooks", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.count == 3)
        }
    }

    @Test func webhookListsComeInPages() async throws {
        try await ServerHarness.with { harness in
            let app = try await harness.createApp()
            let base = "/v1/apps/\(app.id)/webhooks"
            var created: [(at: String, id: String)] = []
            for n in 1...5 {
                let reply = try await createWebhook(harness, app, n)
                try #require(reply.status == 201, "\(reply.json)")
                created.append((try #require(reply["created_at"]?.stringValue), try #require(reply["id"]?.stringValue)))
                // Some made at the same moment: those come by id.
                harness.clock.advance(by: n % 2 == 0 ? 0 : 1)
            }
            let ids = created.sorted { ($0.at, $0.id) < ($1.at, $1.id) }.map(\.id)
            // Without parameters: every webhook (up to 50), oldest first, no next page.
            let all = try await harness.call("GET", base, key: app.serverKey)
            #expect(all.status == 200)
            #expect(all["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == ids)
            #expect(all["next_cursor"] == .null)
            #expect(all["items"]?.arrayValue?.allSatisfy { $0["secret"] == nil } == true)
            // In pages of two, following next_cursor.
            var seen: [String] = []
            var cursor: String?
            var pages = 0
            repeat {
                let query = "?limit=2" + (cursor.map { "&cursor=\($0)" } ?? "")
                let page = try await harness.call("GET", base + query, key: app.serverKey)
                #expect(page.status == 200, "\(page.json)")
                let items = page["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } ?? []
                #expect(items.count <= 2)
                seen += items
                cursor = page["next_cursor"]?.stringValue
                pages += 1
            } while cursor != nil && pages < 10
            #expect(seen == ids)
            #expect(pages == 3)
            // A page's cursor still works once its last webhook is gone.
            let first = try await harness.call("GET", base + "?limit=2", key: app.serverKey)
            let next = try #require(first["next_cursor"]?.stringValue)
            #expect(try await harness.call("DELETE", "\(base)/\(ids[1])", key: app.serverKey).status == 204)
            let after = try await harness.call("GET", base + "?limit=2&cursor=\(next)", key: app.serverKey)
            #expect(after["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == Array(ids[2...3]))
            // Bad parameters name themselves.
            for (query, field) in [("?limit=0", "limit"), ("?limit=201", "limit"), ("?cursor=7", "cursor"), ("?page=2", "page")] {
                let refused = try await harness.call("GET", base + query, key: app.serverKey)
                #expect(refused.status == 422 && refused.errorFields == [field], "\(query): \(refused.json)")
            }
        }
    }

    /// An answer to a stream's request: its head, and the body of a refusal.
    struct Opening: Sendable {
        let head: RawHTTPResponse
        let body: Data
        var status: Int { head.status }
        var headers: [String: String] { head.headers }
        var json: JSONValue? { try? JSONValue(parsing: body) }
    }

    /// Opens an event stream of `app` on a connection of its own; answers the
    /// connection and the answer's head (with the body of a refusal).
    func openStream(_ harness: ServerHarness, _ app: TestApp) async throws -> (RawHTTPConnection, Opening) {
        let connection = try RawHTTPConnection(port: harness.application.port)
        let opening = try await connection.async { connection in
            try connection.write(
                "GET /v1/apps/\(app.id)/events HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
                    + "Authorization: Bearer \(app.serverKey)\r\nConnection: close\r\n\r\n")
            let head = try connection.readResponseHead()
            guard head.status != 200 else { return Opening(head: head, body: Data()) }
            // A refusal's whole body, up to the close.
            return Opening(head: head, body: try connection.readToEnd())
        }
        return (connection, opening)
    }

    @Test func anAppHoldsAtMostItsEventStreams() async throws {
        try await ServerHarness.with(configure: {
            $0.maxEventStreamsPerApp = 2
            $0.eventStreamKeepAliveSeconds = 0.2
        }) { harness in
            let app = try await harness.createApp()
            let (first, firstHead) = try await openStream(harness, app)
            let (second, secondHead) = try await openStream(harness, app)
            #expect(firstHead.status == 200 && secondHead.status == 200)
            let (_, refused) = try await openStream(harness, app)
            #expect(refused.status == 429)
            #expect(refused.headers["retry-after"].flatMap(Int.init).map { $0 > 0 } == true)
            #expect(refused.headers["content-type"] == "application/problem+json")
            let detail = refused.json?["detail"]?.stringValue ?? ""
            #expect(detail.contains("2 event streams") && detail.contains("--max-event-streams-per-app"), "\(detail)")
            // JSON pages are no streams, and another app has slots of its own.
            #expect(try await harness.call("GET", "/v1/apps/\(app.id)/events", key: app.serverKey).status == 200)
            let other = try await harness.createApp(name: "Other", bundleID: "com.example.other")
            let (otherStream, otherHead) = try await openStream(harness, other)
            #expect(otherHead.status == 200)
            // Closing a stream frees its slot (once the server sees the client gone).
            first.hangUp()
            var reopened: RawHTTPConnection?
            let freed = try await eventually {
                let (connection, head) = try await openStream(harness, app)
                if head.status == 200 { reopened = connection }
                return head.status == 200
            }
            #expect(freed)
            let (_, again) = try await openStream(harness, app)
            #expect(again.status == 429)
            second.hangUp()
            reopened?.hangUp()
            otherStream.hangUp()
        }
    }

    @Test func aDeviceHasAtMostAHundredTags() async throws {
        try await ServerHarness.with { harness in
            let app = try await harness.createApp()
            let path = "/v1/apps/\(app.id)/devices/phone-1"
            func register(_ count: Int) async throws -> Reply {
                try await harness.call("PUT", path, key: app.deviceKey, json: [
                    "platform": "ios", "environment": "sandbox",
                    "tags": .array((0..<count).map { .string("tag-\($0)") }),
                ])
            }
            let tooMany = try await register(101)
            #expect(tooMany.status == 422)
            #expect(tooMany.errorFields == ["tags"])
            let message = tooMany["errors"]?.arrayValue?.first?["message"]?.stringValue ?? ""
            #expect(message.contains("at most 100"), "\(message)")
            #expect(try await register(100).status == 201)
        }
    }
}
