import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

@Suite("Activities end to end, through the API and the simulator over TLS")
struct ActivityLifeTests {
    @Test func oneActivitysWholeLife() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let startToken = try await h.registerStartable(app, "phone-1", userID: "user-1")
            let started = try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]])
            #expect(started.status == 202)
            #expect(started["targets"]?.int64Value == 1)
            #expect(started["activity_id"]?.stringValue == "order-1")

            // The simulated phone started it, with the id stamped into the attributes.
            let updateToken = try await h.simulatedUpdateToken(activityID: "order-1")
            let simulated = try #require(h.sandbox.engine.activities().first)
            #expect(simulated.pushToStartToken == startToken)
            #expect(simulated.attributesType == "DeliveryAttributes")
            #expect(simulated.attributes?["order"] == "order-1")

            var shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["status"]?.stringValue == "started")
            #expect(shown["devices"]?.arrayValue?.first?["status"]?.stringValue == "pending")

            let registered = try await h.registerUpdateToken(app, "phone-1", "order-1", token: updateToken)
            #expect(registered.status == 201)
            #expect(try await h.registerUpdateToken(app, "phone-1", "order-1", token: updateToken).status == 200)

            let updated = try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10])
            #expect(updated.status == 202)
            #expect(updated["targets"]?.int64Value == 1)
            _ = try await h.settledPushes(app, "order-1", count: 2)
            #expect(h.sandbox.engine.activities().first?.contentState == ["status": "on the way", "eta": 10])

            let ended = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey,
                json: ["content_state": ["status": "delivered", "eta": 0]])
            #expect(ended.status == 202)
            #expect(ended["targets"]?.int64Value == 1)
            let pushes = try await h.settledPushes(app, "order-1", count: 3)
            #expect(pushes.map { $0["event"]?.stringValue } == ["start", "update", "end"])
            #expect(pushes.allSatisfy { $0["status"]?.stringValue == "sent" && $0["apns_status"]?.int64Value == 200 })
            #expect(pushes.map { $0["token_kind"]?.stringValue } == ["push_to_start", "live_activity_update", "live_activity_update"])
            #expect(Set(pushes.compactMap { $0["apns_id"]?.stringValue }).count == 3)
            let device = try #require(h.sandbox.engine.activities().first)
            #expect(device.status == .ended)
            #expect(device.contentState == ["status": "delivered", "eta": 0])

            shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["status"]?.stringValue == "ended")
            #expect(shown["end_cause"]?.stringValue == "server")
            #expect(shown["content_state"] == ["status": "delivered", "eta": 0])
            #expect(shown["devices"]?.arrayValue?.first?["status"]?.stringValue == "ended")

            // Ended is final: an update is refused, saying so; ending again sends nothing.
            let late = try await h.update(app, "order-1", state: ["status": "again"])
            #expect(late.status == 409)
            #expect(late["detail"]?.stringValue?.contains("can never be updated again") == true)
            let again = try await h.call("POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey, body: "{}")
            #expect(again.status == 200)
            #expect(again["targets"]?.int64Value == 0)
            #expect(try await h.registerUpdateToken(app, "phone-1", "order-1", token: updateToken).status == 409)
            #expect(try await h.settledPushes(app, "order-1").count == 3)
        }
    }

    @Test func pushToStartReachesEveryDeviceOfTheUser() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for phone in ["phone-a", "phone-b", "tablet"] {
                try await h.registerStartable(app, phone, userID: "user-1")
            }
            try await h.registerStartable(app, "other-phone", userID: "user-2")
            try await h.registerDevice(app, "no-start-token", userID: "user-1")
            let started = try await h.start(app, "match-1", audience: ["user_ids": ["user-1"]])
            #expect(started.status == 202)
            #expect(started["targets"]?.int64Value == 3)
            let pushes = try await h.settledPushes(app, "match-1", count: 3)
            #expect(Set(pushes.compactMap { $0["device_id"]?.stringValue }) == ["phone-a", "phone-b", "tablet"])
            #expect(h.sandbox.engine.activities().count == 3)

            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/match-1", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.count == 3)

            // Tags and device ids address devices too; an audience with no startable
            // device is refused, saying why.
            let none = try await h.start(app, "match-2", audience: ["device_ids": ["no-start-token"]])
            #expect(none.status == 422)
            #expect(none.errorFields == ["audience.device_ids"])
            #expect(none["detail"]?.stringValue?.contains("push-to-start token") == true)
            let nobody = try await h.start(app, "match-2", audience: ["tags": ["nobody"]])
            #expect(nobody.status == 422)
            #expect(nobody["detail"]?.stringValue?.contains("no registered device") == true)

            // An id in use is 409.
            let taken = try await h.start(app, "match-1", audience: ["user_ids": ["user-2"]])
            #expect(taken.status == 409)
        }
    }

    @Test func rotatedUpdateTokenReplacesTheOldOne() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            let first = ServerHarness.token()
            let second = ServerHarness.token()
            #expect(try await h.registerUpdateToken(app, "phone-1", "ride-1", token: first).status == 201)
            let local = try await h.call("GET", "/v1/apps/\(app.id)/activities/ride-1", key: app.serverKey)
            #expect(local["origin"]?.stringValue == "local")
            #expect(try await h.registerUpdateToken(app, "phone-1", "ride-1", token: second).status == 200)
            #expect(try await h.update(app, "ride-1", state: ["eta": 5]).status == 202)
            _ = try await h.settledPushes(app, "ride-1", count: 1)
            let tokens = h.sandbox.engine.pushes().compactMap { $0.token }
            #expect(tokens == [second])
            // A type other than the activity's is refused, naming the field.
            let wrongType = try await h.registerUpdateToken(app, "phone-1", "ride-1", token: second, activityType: "Other")
            #expect(wrongType.status == 422)
            #expect(wrongType.errorFields == ["activity_type"])
        }
    }

    @Test func lifecycleWindowsFollowTheClock() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            try await h.registerUpdateToken(app, "phone-1", "build-1", token: ServerHarness.token())
            h.clock.advance(by: 7 * 3600 + 59 * 60)
            #expect(try await h.update(app, "build-1", state: ["step": 1]).status == 202)
            h.clock.advance(by: 60)
            let late = try await h.update(app, "build-1", state: ["step": 2])
            #expect(late.status == 409)
            #expect(late["detail"]?.stringValue?.contains("update window") == true)
            // Between 8 and 12 hours it can still be ended.
            h.clock.advance(by: 3 * 3600)
            let ended = try await h.call("POST", "/v1/apps/\(app.id)/activities/build-1/end", key: app.serverKey, body: "{}")
            #expect(ended.status == 202)
            #expect(ended["targets"]?.int64Value == 1)

            // An activity left alone ends by the clock after 12 hours.
            try await h.registerUpdateToken(app, "phone-1", "build-2", token: ServerHarness.token())
            h.clock.advance(by: 12 * 3600)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/build-2", key: app.serverKey)
            #expect(shown["status"]?.stringValue == "ended")
            #expect(shown["end_cause"]?.stringValue == "expired")
            #expect(shown["devices"]?.arrayValue?.first?["status"]?.stringValue == "ended")
            #expect(shown["devices"]?.arrayValue?.first?["end_cause"]?.stringValue == "expired")
            let running = try await h.call("GET", "/v1/apps/\(app.id)/activities?status=started", key: app.serverKey)
            #expect(running["items"]?.arrayValue?.isEmpty == true)
            #expect(try await h.update(app, "build-2", state: ["step": 1]).status == 409)
            let endLate = try await h.call("POST", "/v1/apps/\(app.id)/activities/build-2/end", key: app.serverKey, body: "{}")
            #expect(endLate.status == 200)
            #expect(endLate["targets"]?.int64Value == 0)
            let listed = try await h.call("GET", "/v1/apps/\(app.id)/activities?status=ended", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.compactMap { $0["activity_id"]?.stringValue } == ["build-2", "build-1"])
        }
    }

    @Test func deviceSideEndStampsOnlyThatDevice() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for phone in ["phone-1", "phone-2"] {
                try await h.registerDevice(app, phone)
                try await h.registerUpdateToken(app, phone, "score-1", token: ServerHarness.token())
            }
            let ended = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/score-1/end", key: app.deviceKey, body: "",
                headers: h.secretHeader(app, "phone-1"))
            #expect(ended.status == 200)
            #expect(ended["device"]?["status"]?.stringValue == "ended")
            #expect(ended["device"]?["end_cause"]?.stringValue == "device")
            let updated = try await h.update(app, "score-1", state: ["home": 1, "away": 0])
            #expect(updated["targets"]?.int64Value == 1)
            let missing = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/phone-9/activities/score-1/end", key: app.deviceKey, body: "")
            #expect(missing.status == 404)
        }
    }

    @Test func queuedUpdatesAreCoalescedToTheNewest() async throws {
        // The simulator holds its answers until the test opens the gate, so the
        // first update stays in flight while the next four are posted, however slow
        // the machine.
        let gate = AnswerGate(closed: true)
        defer { gate.open() }
        try await ServerHarness.with(
            configure: { $0.deliveryMaxInFlight = 1 },
            simulators: { $0.answerGate = gate }
        ) { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            try await h.registerUpdateToken(app, "phone-1", "score-1", token: ServerHarness.token())
            var superseded = 0
            for goal in 1...5 {
                let reply = try await h.update(app, "score-1", state: ["home": .integer(Int64(goal))])
                #expect(reply.status == 202)
                superseded += Int(reply["superseded"]?.int64Value ?? 0)
                if goal == 1 {
                    #expect(try await h.eventually { h.sandbox.engine.pushes().count == 1 })
                }
            }
            gate.open()
            let pushes = try await h.settledPushes(app, "score-1", count: 5)
            let statuses = pushes.compactMap { $0["status"]?.stringValue }
            // The first went out; of the four queued behind it, each newer one
            // dropped the one before, and the newest was sent.
            #expect(superseded == 3)
            #expect(statuses.filter { $0 == "sent" }.count == 2)
            #expect(statuses.filter { $0 == "dropped" }.count == 3)
            #expect(pushes.filter { $0["status"]?.stringValue == "dropped" }.allSatisfy { $0["reason"]?.stringValue == "Superseded" })
            // The device ends on the newest state.
            #expect(try await h.eventually { h.sandbox.engine.pushes().count == 2 })
            #expect(h.sandbox.engine.pushes().last?.payload?["aps"]?["content-state"] == ["home": 5])
        }
    }

    @Test func endingDropsTheStartsStillQueued() async throws {
        // The simulator holds the first start's answer until the end is posted, so
        // the other three starts are still queued then.
        let gate = AnswerGate(closed: true)
        defer { gate.open() }
        try await ServerHarness.with(
            configure: { $0.deliveryMaxInFlight = 1 },
            simulators: { $0.answerGate = gate }
        ) { h in
            let app = try await h.createApp()
            for phone in ["phone-1", "phone-2", "phone-3", "phone-4"] {
                try await h.registerStartable(app, phone, userID: "user-1")
            }
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]])["targets"]?.int64Value == 4)
            #expect(try await h.eventually { h.sandbox.engine.pushes().count == 1 })
            let ended = try await h.call("POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey, body: "{}")
            #expect(ended.status == 202)
            gate.open()
            let pushes = try await h.settledPushes(app, "order-1", count: 4)
            let dropped = pushes.filter { $0["status"]?.stringValue == "dropped" }
            #expect(dropped.count == 3)
            #expect(dropped.allSatisfy { $0["reason"]?.stringValue == "ActivityEnded" })
            // Every push has settled, and only the first start reached a device.
            #expect(h.sandbox.engine.activities().count == 1)
        }
    }

    @Test func anActivityEndsAtTheTimeChosenForIt() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let now = Int64(h.clock.now().timeIntervalSince1970)
            func start(_ id: String, endAt: Int64) async throws -> Reply {
                try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                    "activity_id": .string(id), "activity_type": "DeliveryAttributes", "attributes": ["order": "1"],
                    "content_state": ["status": "on the way"], "alert": ["title": "Order", "body": "On its way"],
                    "audience": ["user_ids": ["user-1"]], "end_at": .integer(endAt),
                ])
            }
            #expect(try await start("past", endAt: now - 10).errorFields == ["end_at"])
            #expect(try await start("too-late", endAt: now + 13 * 3600).errorFields == ["end_at"])
            #expect(try await start("order-1", endAt: now + 1800).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            var shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["end_at"]?.stringValue != nil)
            // An update may move the end.
            #expect(try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/update", key: app.serverKey,
                json: ["content_state": ["status": "nearly there"], "end_at": .integer(now + 3600)]).status == 202)
            h.clock.advance(by: 1801)
            try await Task.sleep(for: .milliseconds(600))
            shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["status"]?.stringValue == "updated")
            h.clock.advance(by: 1800)
            let ended = try await h.eventually {
                let reply = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
                return reply["status"]?.stringValue == "ended" && reply["end_cause"]?.stringValue == "scheduled"
            }
            #expect(ended)
            let pushes = try await h.settledPushes(app, "order-1", count: 3)
            #expect(pushes.map { $0["event"]?.stringValue } == ["start", "update", "end"])
            #expect(h.sandbox.engine.activities().first?.status == .ended)
            #expect(h.sandbox.engine.activities().first?.contentState == ["status": "nearly there"])
        }
    }

    @Test func activitiesArePagedNewestFirst() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            for index in 1...5 {
                try await h.registerUpdateToken(app, "phone-1", "ride-\(index)", token: ServerHarness.token())
            }
            try await h.registerUpdateToken(app, "phone-1", "score-1", token: ServerHarness.token(), activityType: "ScoreAttributes")
            var seen: [String] = []
            var path = "/v1/apps/\(app.id)/activities?activity_type=DeliveryAttributes&limit=2"
            for _ in 0..<5 {
                let page = try await h.call("GET", path, key: app.serverKey)
                #expect(page.status == 200)
                let items = page["items"]?.arrayValue ?? []
                #expect(items.count <= 2)
                seen += items.compactMap { $0["activity_id"]?.stringValue }
                guard let cursor = page["next_cursor"]?.stringValue else { break }
                path = "/v1/apps/\(app.id)/activities?activity_type=DeliveryAttributes&limit=2&cursor=\(cursor)"
            }
            #expect(seen == ["ride-5", "ride-4", "ride-3", "ride-2", "ride-1"])
            let bad = try await h.call("GET", "/v1/apps/\(app.id)/activities?limit=0&status=done&colour=red", key: app.serverKey)
            #expect(bad.status == 422)
            #expect(Set(bad.errorFields) == ["limit", "status", "colour"])
        }
    }
}
