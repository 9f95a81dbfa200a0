import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

/// Who may follow an activity: a start's `join` (its audience, or anyone), the
/// backend widening the audience later, an app's `local_join` for activities devices
/// created themselves, and a backend start taking an id a device squatted.
@Suite("Who may follow an activity")
struct ActivityJoinTests {
    /// Joins `activityID` from `deviceID` with a fresh update token.
    static func follow(_ h: ServerHarness, _ app: TestApp, _ deviceID: String, _ activityID: String) async throws -> Reply {
        try await h.registerUpdateToken(app, deviceID, activityID, token: ServerHarness.token())
    }

    /// The device ids holding a copy of the activity.
    static func holders(_ h: ServerHarness, _ app: TestApp, _ activityID: String) async throws -> Set<String> {
        let reply = try await h.call("GET", "/v1/apps/\(app.id)/activities/\(activityID)", key: app.serverKey)
        return Set((reply["devices"]?.arrayValue ?? []).compactMap { $0["device_id"]?.stringValue })
    }

    @Test func aDeviceOutsideTheAudienceMayNotFollowAnActivityStartedForOthers() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await AndroidActivityTests.createApp(h)
            try await h.registerStartable(app, "customer-1", userID: "u-1")
            // The same user's second phone, with no push-to-start token yet: the
            // audience resolves to it, though the start could not target it.
            try await h.registerDevice(app, "customer-2", userID: "u-1")
            try await h.registerDevice(app, "evil-1", userID: "u-666")
            try await AndroidActivityTests.registerAndroid(h, app, "evil-2", token: "evil:APA91bEvilEvilEvil")
            let started = try await h.start(app, "order-42", audience: ["user_ids": ["u-1"]])
            #expect(started.status == 202, "\(started.json)")
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-42", key: app.serverKey)
            #expect(shown["join"] == "audience")

            for (device, body) in [
                ("evil-1", ["activity_type": "DeliveryAttributes", "token": .string(ServerHarness.token())]),
                ("evil-2", ["activity_type": "DeliveryAttributes"]) as (String, JSONValue),
            ] {
                let refused = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/\(device)/activities/order-42", key: app.deviceKey, json: body,
                    headers: h.secretHeader(app, device))
                #expect(refused.status == 403, "\(refused.json)")
                #expect(refused.headers["content-type"]?.hasPrefix("application/problem+json") == true)
                #expect(refused.errorFields == ["activity_id"], "\(refused.json)")
            }
            // Nothing was stored for them, and the next update reaches neither.
            #expect(try await Self.holders(h, app, "order-42") == ["customer-1"])
            #expect(try await Self.follow(h, app, "customer-1", "order-42").status == 201)
            #expect(try await Self.follow(h, app, "customer-2", "order-42").status == 201)
            let updated = try await h.update(app, "order-42", state: ["status": "secret address: 1 Main St", "eta": 5])
            #expect(updated.status == 202, "\(updated.json)")
            #expect(updated["android_targets"] == nil || updated["android_targets"] == 0, "\(updated.json)")
            #expect(try await Self.holders(h, app, "order-42") == ["customer-1", "customer-2"])
            let pushes = try await h.settledPushes(app, "order-42")
            #expect(!pushes.contains { ["evil-1", "evil-2"].contains($0["device_id"]?.stringValue ?? "") })
            #expect(h.fcm?.engine.records().contains { $0.token == "evil:APA91bEvilEvilEvil" } == false)

            // Who joined: customer-2 on its own; customer-1 was targeted.
            let audience = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-42/audience", key: app.serverKey)
            #expect(audience.status == 200, "\(audience.json)")
            #expect(audience["join"] == "audience" && audience["audience"]?["user_ids"] == ["u-1"], "\(audience.json)")
            #expect(audience["joined"]?.arrayValue?.compactMap { $0["device_id"]?.stringValue } == ["customer-2"])
        }
    }

    @Test func theBackendWidensTheAudienceAndReadsWhoJoined() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "customer-1")
            try await h.registerDevice(app, "courier-1", tags: ["couriers"])
            try await h.registerDevice(app, "friend-1", userID: "friend")
            #expect(try await h.start(app, "order-7", audience: ["device_ids": ["customer-1"]]).status == 202)
            #expect(try await Self.follow(h, app, "courier-1", "order-7").status == 403)

            let base = "/v1/apps/\(app.id)/activities/order-7/audience"
            // Bad input names the field; the device key may not widen.
            let empty = try await h.call("POST", base, key: app.serverKey, json: [:])
            #expect(empty.status == 422, "\(empty.json)")
            let unknown = try await h.call("POST", base, key: app.serverKey, json: ["devices": ["x"]])
            #expect(unknown.status == 422 && unknown.errorFields == ["devices"], "\(unknown.json)")
            let emptyList = try await h.call("POST", base, key: app.serverKey, json: ["tags": []])
            #expect(emptyList.status == 422 && emptyList.errorFields == ["tags"], "\(emptyList.json)")
            #expect(try await h.call("POST", base, key: app.deviceKey, json: ["device_ids": ["courier-1"]]).status == 403)
            let missing = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/nope/audience", key: app.serverKey, json: ["tags": ["x"]])
            #expect(missing.status == 404)

            // Lists hold 1 to 10,000 values of 1 to 256 characters.
            let tooMany = try await h.call(
                "POST", base, key: app.serverKey, json: ["device_ids": .array((0...10_000).map { .string("bulk-\($0)") })])
            #expect(tooMany.status == 422 && tooMany.errorFields == ["device_ids"], "\(tooMany.status)")
            let tooLong = try await h.call("POST", base, key: app.serverKey, json: ["tags": [.string(String(repeating: "t", count: 257))]])
            #expect(tooLong.status == 422 && tooLong.errorFields.first?.hasPrefix("tags") == true, "\(tooLong.json)")
            let notText = try await h.call("POST", base, key: app.serverKey, body: #"{"user_ids": [-0.0, 5e-324]}"#)
            #expect(notText.status == 422 && notText.errorFields.allSatisfy { $0.hasPrefix("user_ids") }, "\(notText.json)")
            // The devices the start targeted hold a copy: the audience lists only others.
            #expect(try await h.call("GET", base, key: app.serverKey)["audience"]?["device_ids"] == [])
            let most = try await h.call(
                "POST", base, key: app.serverKey, json: ["device_ids": .array((0..<10_000).map { .string("bulk-\($0)") })])
            #expect(most.status == 200 && most["audience"]?["device_ids"]?.arrayValue?.count == 10_000, "\(most.status)")
            let widened = try await h.call("POST", base, key: app.serverKey, json: ["tags": ["couriers"], "user_ids": ["friend"]])
            #expect(widened.status == 200, "\(widened.json)")
            #expect(widened["audience"]?["tags"] == ["couriers"] && widened["audience"]?["user_ids"] == ["friend"])
            #expect(try await Self.follow(h, app, "courier-1", "order-7").status == 201)
            #expect(try await Self.follow(h, app, "friend-1", "order-7").status == 201)
            let read = try await h.call("GET", base, key: app.serverKey)
            #expect(Set(read["joined"]?.arrayValue?.compactMap { $0["device_id"]?.stringValue } ?? []) == ["courier-1", "friend-1"])
            let copies = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-7", key: app.serverKey)
            let joinedFlags = Dictionary(uniqueKeysWithValues: (copies["devices"]?.arrayValue ?? []).compactMap { copy in
                copy["device_id"]?.stringValue.map { ($0, copy["joined"]) }
            })
            #expect(joinedFlags == ["customer-1": false, "courier-1": true, "friend-1": true])

            // An activity anyone may follow has no audience to widen.
            try await h.registerStartable(app, "fan-1")
            let open = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "match-1", "activity_type": "DeliveryAttributes", "attributes": ["order": "m"],
                "content_state": ["status": "kick-off", "eta": 90], "alert": ["title": "Match", "body": "Kick-off"],
                "audience": ["device_ids": ["fan-1"]], "join": "anyone",
            ])
            #expect(open.status == 202, "\(open.json)")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/activities/match-1", key: app.serverKey)["join"] == "anyone")
            #expect(try await Self.follow(h, app, "courier-1", "match-1").status == 201)
            let pointless = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/match-1/audience", key: app.serverKey, json: ["tags": ["x"]])
            #expect(pointless.status == 409, "\(pointless.json)")
            let badJoin = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "match-2", "activity_type": "DeliveryAttributes", "attributes": ["order": "m"],
                "content_state": ["status": "kick-off", "eta": 90], "alert": ["title": "Match", "body": "Kick-off"],
                "audience": ["device_ids": ["fan-1"]], "join": "everyone",
            ])
            #expect(badJoin.status == 422 && badJoin.errorFields == ["join"], "\(badJoin.json)")
        }
    }

    @Test func anAppMayLetOnlyTheCreatorsUserFollowALocalActivity() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for (device, user) in [("a-1", "alice"), ("a-2", "alice"), ("b-1", "bob")] {
                try await h.registerDevice(app, device, userID: user)
            }
            try await h.registerDevice(app, "anon-1")
            try await h.registerDevice(app, "anon-2")
            // By default (anyone), a match many phones start on their own is followed
            // by each.
            #expect(try await Self.follow(h, app, "a-1", "match-1").status == 201)
            #expect(try await Self.follow(h, app, "b-1", "match-1").status == 201)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/match-1", key: app.serverKey)
            #expect(shown["join"] == "local" && shown["origin"] == "local")

            let patched = try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["local_join": "user"])
            #expect(patched.status == 200 && patched["local_join"] == "user", "\(patched.json)")
            let badRule = try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["local_join": "nobody"])
            #expect(badRule.status == 422 && badRule.errorFields == ["local_join"], "\(badRule.json)")

            #expect(try await Self.follow(h, app, "a-1", "ride-1").status == 201)
            #expect(try await Self.follow(h, app, "a-2", "ride-1").status == 201)
            let refused = try await Self.follow(h, app, "b-1", "ride-1")
            #expect(refused.status == 403 && refused.errorFields == ["activity_id"], "\(refused.json)")
            // A creator without a user id: that device alone.
            #expect(try await Self.follow(h, app, "anon-1", "ride-2").status == 201)
            #expect(try await Self.follow(h, app, "anon-2", "ride-2").status == 403)
            #expect(try await Self.follow(h, app, "anon-1", "ride-2").status == 200)
            #expect(try await Self.holders(h, app, "ride-1") == ["a-1", "a-2"])
            #expect(try await Self.holders(h, app, "ride-2") == ["anon-1"])
            let audience = try await h.call("GET", "/v1/apps/\(app.id)/activities/ride-1/audience", key: app.serverKey)
            #expect(audience["created_by"] == "a-1" && audience["creator_user_id"] == "alice" && audience["local_join"] == "user")
        }
    }

    @Test func aBackendStartTakesAnIDADeviceSquatted() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "customer-1")
            try await h.registerDevice(app, "evil-1")
            #expect(try await Self.follow(h, app, "evil-1", "order-99").status == 201)
            let started = try await h.start(app, "order-99", audience: ["device_ids": ["customer-1"]])
            #expect(started.status == 202, "\(started.json)")
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-99", key: app.serverKey)
            #expect(shown["origin"] == "remote" && shown["join"] == "audience", "\(shown.json)")
            #expect(try await Self.holders(h, app, "order-99") == ["customer-1"])
            #expect(try await Self.follow(h, app, "evil-1", "order-99").status == 403)
            // The squatted activity's end says why.
            let events = try await h.call("GET", "/v1/apps/\(app.id)/events?types=activity.ended", key: app.serverKey)
            let ended = (events["items"]?.arrayValue ?? []).filter { $0["data"]?["activity_id"] == "order-99" }
            #expect(ended.count == 1, "\(events.json)")
            #expect(ended.first?["data"]?["cause"] == "replaced" && ended.first?["data"]?["copies"] == 1, "\(events.json)")
            // A scheduled start of a squatted id is taken too, and takes it when it fires.
            #expect(try await Self.follow(h, app, "evil-1", "order-100").status == 201)
            let scheduled = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "order-100", "activity_type": "DeliveryAttributes", "attributes": ["order": "100"],
                "content_state": ["status": "preparing", "eta": 25], "alert": ["title": "Your order", "body": "Preparing"],
                "audience": ["device_ids": ["customer-1"]],
                "send_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(600))),
            ])
            #expect(scheduled.status == 202 && scheduled["status"] == "scheduled", "\(scheduled.json)")
            h.clock.advance(by: 601)
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/activities/order-100", key: app.serverKey)["origin"] == "remote"
            })
            #expect(try await Self.holders(h, app, "order-100") == ["customer-1"])
            // An id the backend started is still its own: a second start is 409.
            #expect(try await h.start(app, "order-99", audience: ["device_ids": ["customer-1"]]).status == 409)
        }
    }
}
