import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Testing

/// Events through the API: webhooks saved and refused, real deliveries verified by
/// the `standardwebhooks` package (not by Islet's code), and the event stream over
/// a real socket, resumed with Last-Event-ID.
@Suite("Events, webhooks and the event stream through the API")
struct EventsAPITests {
    /// An app with a device that can start an activity.
    func startable(_ harness: ServerHarness) async throws -> TestApp {
        let app = try await harness.createApp()
        try await harness.registerStartable(app, "phone-1", userID: "user-1")
        return app
    }

    /// Runs `body` with a webhook receiver of `scripts/peers/webhook_receiver.py`
    /// (given `arguments`): the process, its port, and the file it reads the
    /// webhook's secret from (written once the webhook exists). The receiver is
    /// stopped when `body` ends.
    func withWebhookReceiver(
        _ arguments: [String], _ body: (ChildProcess, Int64, URL) async throws -> Void
    ) async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/webhook_receiver.py")
        try await withTemporaryDirectory { folder in
            let secretFile = folder.appendingPathComponent("secret")
            let receiver = try ChildProcess(python, [script, secretFile.path] + arguments)
            defer { receiver.stop() }
            let portLine = try #require(await receiver.line { $0.contains("\"port\"") }, "\(receiver.standardError)")
            let port = try #require(try JSONValue(parsing: Data(portLine.utf8))["port"]?.int64Value)
            try await body(receiver, port, secretFile)
        }
    }

    @Test func webhookRoutesFollowTheirContract() async throws {
        try await ServerHarness.with { harness in
            let app = try await harness.createApp()
            let base = "/v1/apps/\(app.id)/webhooks"
            // https only, by default; event types must exist.
            let plain = try await harness.call("POST", base, key: app.serverKey, json: ["url": "http://hooks.example.com/x", "events": ["push.*"]])
            #expect(plain.status == 422 && plain.errorFields == ["url"], "\(plain.json)")
            let loopback = try await harness.call("POST", base, key: app.serverKey, json: ["url": "https://127.0.0.1:8443/x", "events": ["push.*"]])
            #expect(loopback.status == 422 && loopback.errorFields == ["url"], "\(loopback.json)")
            #expect(loopback.json["detail"]?.stringValue?.contains("loopback") == true)
            let metadata = try await harness.call("POST", base, key: app.serverKey, json: ["url": "https://169.254.169.254/x", "events": ["*"]])
            #expect(metadata.status == 422 && metadata.errorFields == ["url"])
            let badType = try await harness.call("POST", base, key: app.serverKey, json: ["url": "https://8.8.8.8/x", "events": ["push.sent", "push.nope"]])
            #expect(badType.status == 422 && badType.errorFields == ["events[1]"], "\(badType.json)")
            let noKey = try await harness.call("POST", base, key: nil, json: ["url": "https://8.8.8.8/x", "events": ["*"]])
            #expect(noKey.status == 401)

            let created = try await harness.call("POST", base, key: app.serverKey, json: [
                "url": "https://8.8.8.8/hooks", "events": ["activity.*", "push.failed"], "description": "ops",
            ])
            #expect(created.status == 201, "\(created.json)")
            let id = try #require(created["id"]?.stringValue)
            #expect(created["secret"]?.stringValue?.hasPrefix("whsec_") == true)
            #expect(created["events"] == ["activity.*", "push.failed"] && created["enabled"] == .bool(true))
            // The secret is shown once.
            let shown = try await harness.call("GET", "\(base)/\(id)", key: app.serverKey)
            #expect(shown.status == 200 && shown["secret"] == nil && shown["description"] == "ops")
            let listed = try await harness.call("GET", base, key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.compactMap { $0["id"]?.stringValue } == [id])
            let patched = try await harness.call("PATCH", "\(base)/\(id)", key: app.serverKey, json: ["events": ["*"], "description": .null])
            #expect(patched.status == 200 && patched["events"] == ["*"] && patched["description"] == .null, "\(patched.json)")
            let rotated = try await harness.call("POST", "\(base)/\(id)/rotate-secret", key: app.serverKey, json: [:])
            #expect(rotated.status == 200 && rotated["secret"] != created["secret"])
            let deliveries = try await harness.call("GET", "\(base)/\(id)/deliveries?limit=10", key: app.serverKey)
            #expect(deliveries.status == 200 && deliveries["items"] == [] && deliveries["next_cursor"] == .null)
            let badCursor = try await harness.call("GET", "\(base)/\(id)/deliveries?cursor=7", key: app.serverKey)
            #expect(badCursor.status == 422 && badCursor.errorFields == ["cursor"])
            let retryNothing = try await harness.call("POST", "\(base)/\(id)/deliveries/dlv_99/retry", key: app.serverKey, json: [:])
            #expect(retryNothing.status == 404)
            // Another app's key sees none of it.
            let other = try await harness.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await harness.call("GET", "/v1/apps/\(app.id)/webhooks/\(id)", key: other.serverKey).status == 404)
            #expect(try await harness.call("DELETE", "\(base)/\(id)", key: app.serverKey).status == 204)
            #expect(try await harness.call("GET", "\(base)/\(id)", key: app.serverKey).status == 404)
        }
    }

    @Test(.requires(.python)) func deliveriesAreVerifiedByStandardWebhooksRetriedWithTheSameIDAndInOrder() async throws {
        try await withWebhookReceiver(["--fail-first", "1", "--retry-after", "1"]) { receiver, port, secretFile in
            try await ServerHarness.with(configure: { config in
                config.webhooksAllowHTTP = true
                config.webhooksAllowPrivate = true
                config.webhookRetryBaseSeconds = 0.5
            }) { harness in
                let app = try await startable(harness)
                let created = try await harness.call("POST", "/v1/apps/\(app.id)/webhooks", key: app.serverKey, json: [
                    "url": .string("http://127.0.0.1:\(port)/islet"), "events": ["activity.*", "push.*"],
                ])
                try #require(created.status == 201, "\(created.json)")
                try Data(try #require(created["secret"]?.stringValue).utf8).write(to: secretFile)
                let webhookID = try #require(created["id"]?.stringValue)

                #expect(try await harness.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
                let token = try await harness.simulatedUpdateToken(activityID: "order-1")
                try await harness.registerUpdateToken(app, "phone-1", "order-1", token: token)
                #expect(try await harness.update(app, "order-1", state: ["status": "on the way", "eta": 5]).status == 202)
                _ = try await harness.settledPushes(app, "order-1", count: 2)
                #expect(try await harness.call(
                    "POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey, json: [:]).status == 202)
                _ = try await harness.settledPushes(app, "order-1", count: 3)

                // Every event of the activity, in the outbox's order.
                let page = try await harness.call("GET", "/v1/apps/\(app.id)/events?limit=100", key: app.serverKey)
                let expected = (page["items"]?.arrayValue ?? []).filter {
                    let type = $0["type"]?.stringValue ?? ""
                    return type.hasPrefix("activity.") || type.hasPrefix("push.")
                }
                let expectedTypes = expected.map { $0["type"]?.stringValue ?? "" }
                #expect(expectedTypes.contains("activity.ended"))
                let expectedIDs = expected.compactMap { $0["id"]?.stringValue }
                // The first attempt was answered 500 (Retry-After: 1); the clock moves
                // on so that its retry comes due.
                var received: [JSONValue] = []
                let arrived = try await harness.eventually {
                    harness.clock.advance(by: 0.5)
                    received = receiver.lines.compactMap { try? JSONValue(parsing: Data($0.utf8)) }.filter { $0["answered"] != nil }
                    return Set(received.filter { $0["answered"] == .integer(204) }.compactMap { $0["id"]?.stringValue })
                        == Set(expectedIDs)
                }
                #expect(arrived, "received \(received.count), expected \(expectedIDs)")
                #expect(received.allSatisfy { $0["verified"] == .bool(true) }, "\(received.filter { $0["verified"] != .bool(true) })")
                // The refused delivery came again with the same webhook-id, before
                // anything after it of the same activity.
                let first = try #require(received.first)
                #expect(first["answered"] == .integer(500))
                let successes = received.filter { $0["answered"] == .integer(204) }.compactMap { $0["id"]?.stringValue }
                #expect(successes.first == first["id"]?.stringValue)
                #expect(successes == expectedIDs, "deliveries of one activity arrive in the order they happened")

                // The receiver writes its line before its answer reaches the server,
                // which records it a moment later: waited for, not read at once.
                var items: [JSONValue] = []
                let recorded = try await harness.eventually {
                    let deliveries = try await harness.call(
                        "GET", "/v1/apps/\(app.id)/webhooks/\(webhookID)/deliveries?limit=200", key: app.serverKey)
                    items = deliveries["items"]?.arrayValue ?? []
                    return items.count == expectedIDs.count && items.allSatisfy { $0["status"] == "succeeded" }
                }
                #expect(recorded, "\(items)")
                let retried = try #require(items.first { $0["event_id"] == first["id"] })
                #expect(retried["attempts"] == .integer(2) && retried["response_status"] == .integer(204))
                // Sent again on request, with the same id.
                let again = try await harness.call(
                    "POST", "/v1/apps/\(app.id)/webhooks/\(webhookID)/deliveries/\(try #require(retried["id"]?.stringValue))/retry",
                    key: app.serverKey, json: [:])
                #expect(again.status == 202 && again["status"] == "pending", "\(again.json)")
                // The dispatcher looks for due deliveries every quarter second of its
                // clock, which the test moves while it waits.
                let resent = try await harness.eventually {
                    harness.clock.advance(by: 0.5)
                    return receiver.lines.filter { $0.contains(first["id"]?.stringValue ?? "-") }.count >= 3
                }
                #expect(resent)
            }
        }
    }

    /// A tap reported by the device counts on the push the simulator delivered,
    /// shows on the activity's pushes, and reaches a webhook as `activity.tapped`,
    /// verified by the `standardwebhooks` package.
    @Test(.requires(.python)) func aTapCountsOnTheDeliveredPushAndReachesAWebhook() async throws {
        try await withWebhookReceiver([]) { receiver, port, secretFile in
            try await ServerHarness.with(configure: { config in
                config.webhooksAllowHTTP = true
                config.webhooksAllowPrivate = true
            }) { harness in
                let app = try await startable(harness)
                let created = try await harness.call("POST", "/v1/apps/\(app.id)/webhooks", key: app.serverKey, json: [
                    "url": .string("http://127.0.0.1:\(port)/islet"), "events": ["activity.tapped"],
                ])
                try #require(created.status == 201, "\(created.json)")
                try Data(try #require(created["secret"]?.stringValue).utf8).write(to: secretFile)
                func tap(_ body: JSONValue, activity activityID: String = "order-1") async throws -> Reply {
                    try await harness.call(
                        "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/\(activityID)/taps", key: app.deviceKey, json: body,
                        headers: harness.secretHeader(app, "phone-1"))
                }

                #expect(try await harness.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
                let token = try await harness.simulatedUpdateToken(activityID: "order-1")
                try await harness.registerUpdateToken(app, "phone-1", "order-1", token: token)
                let start = try #require(try await harness.settledPushes(app, "order-1", count: 1).first)
                #expect(start["status"] == "sent" && start["taps"] == .integer(0) && start["first_tapped_at"] == .null)
                let startID = try #require(start["apns_id"]?.stringValue)

                // Without apns_id: the newest push delivered to the device, the start.
                let tappedAt = harness.clock.now().addingTimeInterval(-30)
                let first = try await tap(["tapped_at": .string(RFC3339.string(tappedAt))])
                #expect(first.status == 201, "\(first.json)")
                #expect(first["apns_id"]?.stringValue == startID && first["tapped_at"]?.stringValue == RFC3339.string(tappedAt))
                // The same tap sent again is answered alike and counted once.
                let again = try await tap(["tapped_at": .string(RFC3339.string(tappedAt))])
                #expect(again.status == 201 && again["apns_id"]?.stringValue == startID)
                // Named by its apns-id, in upper case as a client may write it.
                #expect(try await tap(["apns_id": .string(startID.uppercased())]).status == 201)
                let pushes = try await harness.settledPushes(app, "order-1", count: 1)
                let tapped = try #require(pushes.first { $0["apns_id"]?.stringValue == startID })
                #expect(tapped["taps"] == .integer(2) && tapped["first_tapped_at"]?.stringValue == RFC3339.string(tappedAt))

                // Refusals name their field; an activity the device does not hold is 404.
                let unknownPush = try await tap(["apns_id": "00000000-0000-0000-0000-000000000000"])
                #expect(unknownPush.status == 422 && unknownPush.errorFields == ["apns_id"], "\(unknownPush.json)")
                let ahead = try await tap(["tapped_at": .string(RFC3339.string(harness.clock.now().addingTimeInterval(3_600)))])
                #expect(ahead.status == 422 && ahead.errorFields == ["tapped_at"], "\(ahead.json)")
                #expect(try await tap(["tapped": true]).errorFields == ["tapped"])
                #expect(try await tap([:], activity: "order-9").status == 404)
                #expect(try await harness.call(
                    "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/order-1/taps", key: app.deviceKey, json: [:]
                ).status == 403)

                // Two taps counted, two events, each delivered to the webhook.
                let events = try await harness.call(
                    "GET", "/v1/apps/\(app.id)/events?types=activity.tapped&limit=10", key: app.serverKey)
                let items = events["items"]?.arrayValue ?? []
                #expect(items.count == 2, "\(events.json)")
                #expect(items.allSatisfy { $0["data"]?["apns_id"]?.stringValue == startID && $0["data"]?["device_id"] == "phone-1" })
                var received: [JSONValue] = []
                let arrived = try await harness.eventually {
                    harness.clock.advance(by: 0.5)
                    received = receiver.lines.compactMap { try? JSONValue(parsing: Data($0.utf8)) }.filter { $0["answered"] != nil }
                    return received.count >= 2
                }
                #expect(arrived, "\(received)")
                #expect(received.allSatisfy {
                    $0["verified"] == .bool(true) && $0["type"] == "activity.tapped" && $0["activity_id"] == "order-1"
                }, "\(received)")
            }
        }
    }

    /// A tap is counted once per push and time, however it is retried: two taps
    /// reported again in turn, and again after a newer push arrived, add two taps
    /// and two events. A tap dated before its activity started, or before the push
    /// it names was sent, is refused.
    @Test func aTapRetriedInAnyOrderCountsOnceAndNoTapPrecedesItsPush() async throws {
        try await ServerHarness.with { harness in
            let app = try await startable(harness)
            func tap(_ body: JSONValue) async throws -> Reply {
                try await harness.call(
                    "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/order-1/taps", key: app.deviceKey, json: body,
                    headers: harness.secretHeader(app, "phone-1"))
            }
            #expect(try await harness.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            let token = try await harness.simulatedUpdateToken(activityID: "order-1")
            try await harness.registerUpdateToken(app, "phone-1", "order-1", token: token)
            let start = try #require(try await harness.settledPushes(app, "order-1", count: 1).first)
            let startID = try #require(start["apns_id"]?.stringValue)

            let earlier = RFC3339.string(harness.clock.now().addingTimeInterval(1))
            let later = RFC3339.string(harness.clock.now().addingTimeInterval(2))
            harness.clock.advance(by: 10)
            for _ in 0..<6 {
                for tappedAt in [earlier, later] {
                    let reply = try await tap(["tapped_at": .string(tappedAt)])
                    #expect(reply.status == 201 && reply["apns_id"]?.stringValue == startID, "\(reply.json)")
                }
            }
            // A newer push arrives; the same taps reported again still count on the
            // start, once.
            harness.clock.advance(by: 3_600)
            #expect(try await harness.update(app, "order-1", state: ["status": "on the way", "eta": 5]).status == 202)
            let pushes = try await harness.settledPushes(app, "order-1", count: 2)
            let update = try #require(pushes.first { $0["event"] == "update" })
            let updateID = try #require(update["apns_id"]?.stringValue)
            for tappedAt in [earlier, later] {
                let reply = try await tap(["tapped_at": .string(tappedAt)])
                #expect(reply.status == 201 && reply["apns_id"]?.stringValue == startID, "\(reply.json)")
            }
            let tapped = try await harness.settledPushes(app, "order-1", count: 2)
            #expect(tapped.first { $0["apns_id"]?.stringValue == startID }?["taps"] == .integer(2), "\(tapped)")
            #expect(tapped.first { $0["apns_id"]?.stringValue == updateID }?["taps"] == .integer(0), "\(tapped)")
            let events = try await harness.call(
                "GET", "/v1/apps/\(app.id)/events?types=activity.tapped&limit=50", key: app.serverKey)
            #expect(events["items"]?.arrayValue?.count == 2, "\(events.json)")

            // In 1970, long before the activity started; before the update it names
            // was sent.
            let epoch = try await tap(["tapped_at": 0])
            #expect(epoch.status == 422 && epoch.errorFields == ["tapped_at"], "\(epoch.json)")
            let beforeSent = try await tap(["apns_id": .string(updateID), "tapped_at": .string(earlier)])
            #expect(beforeSent.status == 422 && beforeSent.errorFields == ["tapped_at"], "\(beforeSent.json)")
            let after = try await tap(["apns_id": .string(updateID)])
            #expect(after.status == 201 && after["apns_id"]?.stringValue == updateID, "\(after.json)")
            let counted = try await harness.call(
                "GET", "/v1/apps/\(app.id)/events?types=activity.tapped&limit=50", key: app.serverKey)
            #expect(counted["items"]?.arrayValue?.count == 3, "\(counted.json)")
        }
    }

    @Test func theStreamSendsEventsLiveAndResumesWithoutAGapOrARepeat() async throws {
        try await ServerHarness.with(configure: { $0.eventStreamKeepAliveSeconds = 0.3 }) { harness in
            let app = try await startable(harness)
            let port = harness.application.port
            func open(lastEventID: String? = nil, query: String = "") throws -> RawHTTPConnection {
                let connection = try RawHTTPConnection(port: port)
                var request = "GET /v1/apps/\(app.id)/events\(query) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n"
                request += "Authorization: Bearer \(app.serverKey)\r\n"
                if let lastEventID { request += "Last-Event-ID: \(lastEventID)\r\n" }
                try connection.write(request + "\r\n")
                return connection
            }
            /// Reads messages until one of `type` arrives; answers the (id, type) of each.
            func read(_ connection: RawHTTPConnection, until type: String, id last: String? = nil) async throws -> [(id: String, type: String)] {
                try await connection.async { c in
                    var seen: [(id: String, type: String)] = []
                    while true {
                        let message = try c.readChunkedBody(through: "\n\n", timeout: .seconds(30))
                        var id: String?
                        var event: String?
                        for line in message.split(separator: "\n") {
                            if line.hasPrefix("id: ") { id = String(line.dropFirst(4)) }
                            if line.hasPrefix("event: ") { event = String(line.dropFirst(7)) }
                        }
                        if let id, let event {
                            seen.append((id, event))
                            if let last { if id == last { return seen } } else if event == type { return seen }
                        }
                        if type == ":keep-alive", message.hasPrefix(": keep-alive") { return seen }
                    }
                }
            }
            let live = try open()
            let head = try await live.async { try $0.readResponseHead() }
            #expect(head.status == 200 && head.headers["content-type"]?.hasPrefix("text/event-stream") == true)
            #expect(try await read(live, until: ":keep-alive").isEmpty, "a quiet stream gets keep-alive comments")
            #expect(try await harness.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            let first = try await read(live, until: "activity.started")
            #expect(first.map(\.type) == ["activity.started"])
            live.hangUp()

            // While no stream is open, more happens.
            _ = try await harness.settledPushes(app, "order-1", count: 1)
            let token = try await harness.simulatedUpdateToken(activityID: "order-1")
            try await harness.registerUpdateToken(app, "phone-1", "order-1", token: token)
            #expect(try await harness.update(app, "order-1", state: ["status": "on the way", "eta": 5]).status == 202)
            _ = try await harness.settledPushes(app, "order-1", count: 2)

            let all = try await harness.call("GET", "/v1/apps/\(app.id)/events?limit=100", key: app.serverKey)
            let ids = (all["items"]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
            let startedAt = try #require(ids.firstIndex(of: first[0].id))
            let missed = Array(ids[(startedAt + 1)...])
            #expect(!missed.isEmpty)
            let resumed = try open(lastEventID: first[0].id)
            _ = try await resumed.async { try $0.readResponseHead() }
            let replayed = try await read(resumed, until: "", id: missed.last ?? "")
            #expect(replayed.map(\.id) == missed, "resumed after \(first[0].id): no gap, no repeat")
            resumed.hangUp()

            // ?types= filters the stream.
            let filtered = try open(lastEventID: first[0].id, query: "?types=activity.*")
            _ = try await filtered.async { try $0.readResponseHead() }
            let activityOnly = try await read(filtered, until: "activity.updated")
            #expect(activityOnly.allSatisfy { $0.type.hasPrefix("activity.") } && activityOnly.map(\.type).contains("activity.token_registered"))
            filtered.hangUp()

            // JSON pages: bad parameters name themselves.
            let badTypes = try await harness.call("GET", "/v1/apps/\(app.id)/events?types=push.sent,nope", key: app.serverKey)
            #expect(badTypes.status == 422 && badTypes.errorFields == ["types[1]"], "\(badTypes.json)")
            let badAfter = try await harness.call("GET", "/v1/apps/\(app.id)/events?after=12", key: app.serverKey)
            #expect(badAfter.status == 422 && badAfter.errorFields == ["after"])
            let paged = try await harness.call("GET", "/v1/apps/\(app.id)/events?limit=2", key: app.serverKey)
            #expect(paged["items"]?.arrayValue?.count == 2 && paged["next_cursor"] == .string(ids[1]))
        }
    }

    @Test func faultsOfTheQueryAndOfWhatTheRouteReadsBesideItAreAnsweredAsOne() async throws {
        try await ServerHarness.with { harness in
            let app = try await harness.createApp()
            let events = "/v1/apps/\(app.id)/events"
            let stream = ["Accept": "text/event-stream", "Last-Event-ID": "nope"]
            // A stream's bad query and bad Last-Event-ID in one 422: names it does not
            // take first, then the query's faults, then the header's.
            let both = try await harness.call("GET", "\(events)?types=nope&after=12&limit=5", key: app.serverKey, headers: stream)
            #expect(both.status == 422 && both.errorFields == ["limit", "types", "after", "Last-Event-ID"], "\(both.json)")
            #expect(both.json["detail"] == "The query has invalid parameters.")
            let header = try await harness.call("GET", events, key: app.serverKey, headers: stream)
            #expect(header.status == 422 && header.errorFields == ["Last-Event-ID"], "\(header.json)")
            // A JSON page does not read Last-Event-ID.
            let page = try await harness.call("GET", "\(events)?limit=5", key: app.serverKey, headers: ["Last-Event-ID": "nope"])
            #expect(page.status == 200, "\(page.json)")

            // A bad path id is answered alone, before the query.
            let path = "/v1/apps/\(app.id)/webhooks/wh%20x/deliveries?limit=0&cursor=7"
            let badPath = try await harness.call("GET", path, key: app.serverKey)
            #expect(badPath.status == 422 && badPath.errorFields == ["webhook_id"], "\(badPath.json)")
            #expect(badPath.json["detail"]?.stringValue?.hasPrefix("The path's webhook_id") == true, "\(badPath.json)")
            let badQuery = try await harness.call("GET", "/v1/apps/\(app.id)/webhooks/wh_1/deliveries?limit=0&cursor=7", key: app.serverKey)
            #expect(badQuery.status == 422 && badQuery.errorFields == ["limit", "cursor"], "\(badQuery.json)")
        }
    }
}
