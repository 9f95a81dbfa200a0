import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

/// One activity on both platforms: started, updated and ended once through the API,
/// it reaches a simulated iPhone through APNs and a simulated Android phone through
/// FCM (data messages, applied in order).
@Suite("Android activities: the same start, update and end over FCM")
struct AndroidActivityTests {
    static let pixelToken = "dQw4w9WgXcQ:APA91bHun4MxP5egoKMwt2KZFBaFUH-1RYqx"

    /// Creates an app with the harness's APNs key (unless `apns` is false) and a
    /// service account the FCM simulator trusts.
    static func createApp(_ h: ServerHarness, apns: Bool = true) async throws -> TestApp {
        let fcm = try #require(h.fcm)
        var body: [String: JSONValue] = [
            "name": "Both", "bundle_id": "com.example.both",
            "fcm": ["service_account": try fcm.makeServiceAccount(projectID: "islet-test")],
        ]
        if apns {
            body["apns"] = [
                "team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(h.signingKey.pemRepresentation),
            ]
        }
        let reply = try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: .object(body))
        try #require(reply.status == 201, "\(reply.json)")
        return TestApp(
            id: try #require(reply["id"]?.stringValue), serverKey: try #require(reply["server_key"]?.stringValue),
            deviceKey: try #require(reply["device_key"]?.stringValue))
    }

    /// Registers an Android device with an FCM token.
    static func registerAndroid(
        _ h: ServerHarness, _ app: TestApp, _ deviceID: String, token: String = pixelToken, userID: String? = nil
    ) async throws {
        var body: [String: JSONValue] = ["platform": "android", "fcm_token": .string(token)]
        if let userID { body["user_id"] = .string(userID) }
        let reply = try await h.call(
            "PUT", "/v1/apps/\(app.id)/devices/\(deviceID)", key: app.deviceKey, json: .object(body),
            headers: h.secretHeader(app, deviceID))
        try #require([200, 201].contains(reply.status), "\(reply.json)")
        if let secret = reply["device_secret"]?.stringValue { h.deviceSecrets[app, deviceID] = secret }
    }

    /// The simulated Android phone's copy of an activity, once `condition` holds.
    static func androidCopy(
        _ h: ServerHarness, token: String = pixelToken, _ activityID: String,
        until condition: @escaping (SimulatedAndroidActivity) -> Bool
    ) async throws -> SimulatedAndroidActivity? {
        var copy: SimulatedAndroidActivity?
        _ = try await h.eventually {
            copy = h.fcm?.engine.devices()[token]?.activities[activityID]
            return copy.map(condition) ?? false
        }
        return copy
    }

    /// Whether FCM took an update of the activity to `status` for the device of
    /// `token` (which the simulated phone drops: it never saw the start, which its
    /// app posted itself, or which an earlier install of it got).
    static func sentUpdate(_ h: ServerHarness, token: String = pixelToken, _ activityID: String, status: String) async throws -> Bool {
        try await h.eventually {
            h.fcm?.engine.records().contains { record in
                record.status == 200 && record.token == token && record.data["islet_event"] == "update"
                    && record.data["islet_activity_id"] == activityID
                    && record.data["content_state"].flatMap { try? JSONValue(parsing: Data($0.utf8)) }?["status"]?.stringValue == status
            } ?? false
        }
    }

    @Test func oneStartUpdateAndEndReachAnIPhoneAndAnAndroidPhone() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")

            let started = try await h.start(app, "order-1", audience: ["user_ids": ["u1"]])
            #expect(started.status == 202, "\(started.json)")
            #expect(started["targets"] == 2)
            #expect(started["android_targets"] == 1)
            let onAndroid = try await Self.androidCopy(h, "order-1") { $0.contentState?["status"] == "preparing" }
            #expect(onAndroid?.activityType == "DeliveryAttributes")
            #expect(onAndroid?.attributes?["order"] == "order-1")
            #expect(onAndroid?.attributes?["islet_activity_id"] == "order-1")
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            #expect(try await h.registerUpdateToken(app, "iphone-1", "order-1", token: token).status == 201)

            let updated = try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10])
            #expect(updated.status == 202, "\(updated.json)")
            #expect(updated["targets"] == 2)
            #expect(updated["android_targets"] == 1)
            let afterUpdate = try await Self.androidCopy(h, "order-1") { $0.contentState?["status"] == "on the way" }
            #expect(afterUpdate?.updates == 1)
            #expect(try await h.eventually {
                h.sandbox.engine.activities().first { $0.updateToken == token }?.contentState?["status"] == "on the way"
            })

            let ended = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey,
                json: ["content_state": ["status": "delivered", "eta": 0]])
            #expect(ended.status == 202, "\(ended.json)")
            #expect(ended["targets"] == 2)
            let afterEnd = try await Self.androidCopy(h, "order-1") { $0.ended }
            #expect(afterEnd?.contentState?["status"] == "delivered")
            #expect(try await h.eventually {
                h.sandbox.engine.activities().first { $0.updateToken == token }?.endedAt != nil
            })

            // Every push settled, each platform's own; the activity lists both copies.
            let pushes = try await h.settledPushes(app, "order-1", count: 6)
            let android = pushes.filter { $0["platform"] == "android" }
            #expect(android.map { $0["event"]?.stringValue } == ["start", "update", "end"])
            for push in android {
                #expect(push["status"] == "sent", "\(push)")
                #expect(push["token_kind"] == "fcm")
                #expect(push["fcm_status"] == 200)
                // Each went in its send's window, with no row to keep FCM's message name.
                #expect(push["fcm_message_name"] == .null, "\(push)")
                #expect(push["environment"] == .null)
            }
            #expect(pushes.filter { $0["platform"] == "ios" }.count == 3)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            let devices = shown["devices"]?.arrayValue ?? []
            #expect(devices.map { $0["device_id"]?.stringValue } == ["iphone-1", "pixel-1"])
            #expect(devices.map { $0["platform"]?.stringValue } == ["ios", "android"])
            #expect(devices.allSatisfy { $0["status"] == "ended" })
            #expect(devices.last?["priority_10_budget"] == .null)

            // What FCM was sent: strings only, a high-priority start and end, a normal
            // update, one collapse key for the activity.
            let records = h.fcm!.engine.records().filter { $0.status == 200 }
            #expect(records.map { $0.data["islet_event"] } == ["start", "update", "end"])
            #expect(records.map { $0.android?["priority"]?.stringValue } == ["high", "normal", "high"])
            #expect(Set(records.compactMap { $0.android?["collapse_key"]?.stringValue }) == ["islet-order-1"])
            let stamps = records.compactMap { $0.data["timestamp"].flatMap { Int64($0) } }
            #expect(stamps == stamps.sorted() && Set(stamps).count == 3)
            #expect(records.first?.data["content_state"].flatMap { try? JSONValue(parsing: Data($0.utf8)) }?["eta"] == 25)
        }
    }

    @Test func anAndroidDeviceJoinsAnActivityWithoutAToken() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await Self.registerAndroid(h, app, "pixel-1")
            #expect(try await h.start(app, "order-2", audience: ["device_ids": ["iphone-1"]]).status == 202)
            // The start targeted iphone-1 alone: the backend lets pixel-1 in.
            let widened = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-2/audience", key: app.serverKey, json: ["device_ids": ["pixel-1"]])
            #expect(widened.status == 200, "\(widened.json)")
            let path = "/v1/apps/\(app.id)/devices/pixel-1/activities/order-2"
            let joined = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["activity_type": "DeliveryAttributes"],
                headers: h.secretHeader(app, "pixel-1"))
            #expect(joined.status == 201, "\(joined.json)")
            let again = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["activity_type": "DeliveryAttributes"],
                headers: h.secretHeader(app, "pixel-1"))
            #expect(again.status == 200, "\(again.json)")
            let wrongType = try await h.call(
                "PUT", path, key: app.deviceKey, json: ["activity_type": "OtherAttributes"],
                headers: h.secretHeader(app, "pixel-1"))
            #expect(wrongType.status == 422 && wrongType.errorFields == ["activity_type"], "\(wrongType.json)")
            // An iOS device joins with its update token only.
            let tokenless = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/iphone-1/activities/order-2", key: app.deviceKey,
                json: ["activity_type": "DeliveryAttributes"], headers: h.secretHeader(app, "iphone-1"))
            #expect(tokenless.status == 422 && tokenless.errorFields == ["token"], "\(tokenless.json)")

            let updated = try await h.update(app, "order-2", state: ["status": "on the way", "eta": 10])
            #expect(updated["android_targets"] == 1, "\(updated.json)")
            #expect(try await Self.sentUpdate(h, "order-2", status: "on the way"))

            // The device ends its copy (the user dismissed it): updates stop reaching it.
            let dismissed = try await h.call(
                "POST", path + "/end", key: app.deviceKey, json: [:], headers: h.secretHeader(app, "pixel-1"))
            #expect(dismissed.status == 200, "\(dismissed.json)")
            #expect(dismissed["device"]?["platform"] == "android")
            let later = try await h.update(app, "order-2", state: ["status": "close", "eta": 2])
            #expect(later["android_targets"] == nil, "\(later.json)")
        }
    }

    @Test func anUnregisteredFCMTokenMakesItsDeviceUnreachableUntilANewOne() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            #expect(try await h.start(app, "order-3", audience: ["user_ids": ["u1"]]).status == 202)
            _ = try await Self.androidCopy(h, "order-3") { _ in true }
            h.fcm!.engine.unregister(Self.pixelToken)
            #expect(try await h.update(app, "order-3", state: ["status": "on the way", "eta": 10])["android_targets"] == 1)
            let pushes = try await h.settledPushes(app, "order-3", count: 2)
            let failed = pushes.last
            #expect(failed?["status"] == "failed", "\(pushes)")
            #expect(failed?["reason"] == "UNREGISTERED")
            #expect(failed?["fcm_status"] == 404)
            #expect(try await h.eventually {
                try h.application.services.store.readNow { try $0.device(appID: app.id, deviceID: "pixel-1") }?.unreachableAt != nil
            })
            // Unreachable: no more pushes to it, until it registers a new token.
            let skipped = try await h.update(app, "order-3", state: ["status": "close", "eta": 2])
            #expect(skipped["targets"] == 0, "\(skipped.json)")
            try await Self.registerAndroid(h, app, "pixel-1", token: "fresh:APA91bAnotherToken-0123456789")
            let reached = try await h.update(app, "order-3", state: ["status": "here", "eta": 0])
            #expect(reached["android_targets"] == 1, "\(reached.json)")
            #expect(try await Self.sentUpdate(h, token: "fresh:APA91bAnotherToken-0123456789", "order-3", status: "here"))
        }
    }

    @Test func anAndroidOnlyAppSendsWithoutAPNsAndFCMsLimitIsCheckedUpFront() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h, apns: false)
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            let big = String(repeating: "x", count: 4_200)
            let refused = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "order-4", "activity_type": "DeliveryAttributes", "attributes": ["order": "4"],
                "content_state": ["status": "preparing", "note": .string(big)], "audience": ["user_ids": ["u1"]],
                "alert": ["title": "Your order", "body": "Preparing"],
            ])
            #expect(refused.status == 422, "\(refused.json)")
            #expect(refused.errorFields.first?.hasPrefix("content_state") == true, "\(refused.json)")
            #expect(refused["detail"]?.stringValue?.contains("FCM takes at most 4,096 in a data message") == true, "\(refused.json)")
            #expect(try h.application.services.store.readNow { try $0.activity(appID: app.id, activityID: "order-4") } == nil)

            let started = try await h.start(app, "order-4", audience: ["user_ids": ["u1"]])
            #expect(started.status == 202, "\(started.json)")
            #expect(started["android_targets"] == 1)
            #expect(try await Self.androidCopy(h, "order-4") { $0.contentState?["status"] == "preparing" } != nil)
        }
    }

    @Test func anAppWithoutAServiceAccountLeavesItsAndroidDevicesOutAndSaysSo() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            let started = try await h.start(app, "order-5", audience: ["user_ids": ["u1"]])
            #expect(started.status == 202, "\(started.json)")
            #expect(started["targets"] == 1)
            #expect(started["android_targets"] == nil)
            let warnings = started["warnings"]?.arrayValue?.compactMap(\.stringValue) ?? []
            #expect(warnings.contains { $0.contains("no FCM service account") }, "\(started.json)")
            // With only Android devices, there is nothing to start.
            let none = try await h.start(app, "order-6", audience: ["device_ids": ["pixel-1"]])
            #expect(none.status == 422, "\(none.json)")
        }
    }

    @Test func credentialsFCMRefusesStopEverySendUntilTheyChange() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            #expect(try await h.start(app, "order-7", audience: ["user_ids": ["u1"]]).status == 202)
            _ = try await Self.androidCopy(h, "order-7") { _ in true }
            let fcm = try #require(h.fcm)
            fcm.engine.inject(.senderIDMismatch)
            _ = try await h.update(app, "order-7", state: ["status": "on the way", "eta": 10])
            var pushes = try await h.settledPushes(app, "order-7", count: 2)
            #expect(pushes.last?["status"] == "failed", "\(pushes)")
            #expect(pushes.last?["reason"] == "SENDER_ID_MISMATCH")
            #expect(pushes.last?["fcm_status"] == 403)
            // No message goes with refused credentials: the next fails at once.
            let seen = fcm.engine.records().count
            _ = try await h.update(app, "order-7", state: ["status": "close", "eta": 2])
            pushes = try await h.settledPushes(app, "order-7", count: 3)
            #expect(pushes.last?["status"] == "failed", "\(pushes)")
            #expect(pushes.last?["reason"] == "SENDER_ID_MISMATCH")
            #expect(pushes.last?["attempts"] == 0)
            #expect(fcm.engine.records().count == seen)
            // Counted by transport.
            let metrics = try #require(try await h.call("GET", "/metrics", key: nil).json.stringValue)
            #expect(metrics.contains(#"islet_pushes_total{node="\#(h.nodeID)",result="failed",reason="SENDER_ID_MISMATCH",transport="fcm"} 2"#), "\(metrics)")
            #expect(metrics.contains(#"result="sent",reason="",transport="fcm"} 1"#))
            // New credentials: messages go again.
            let patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["fcm": ["service_account": try fcm.makeServiceAccount(projectID: "islet-test")]])
            #expect(patched.status == 200, "\(patched.json)")
            _ = try await h.update(app, "order-7", state: ["status": "here", "eta": 0])
            let sent = try await Self.sentUpdate(h, "order-7", status: "here")
            let settled = try await h.settledPushes(app, "order-7")
            #expect(sent, "\(settled.map { "\($0["event"]!.jsonText) \($0["status"]!.jsonText) \($0["reason"]!.jsonText) \($0["attempts"]!.jsonText)" }) \(h.fcm!.engine.records().map(\.summaryLine))")
        }
    }

    @Test func aTimelineRenewalCarriesTheAndroidCopiesToTheSuccessor() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            #expect(try await h.start(app, "order-8", audience: ["user_ids": ["u1"]]).status == 202)
            // Both phones show it before the clock moves on: its starts are not in
            // flight when hours pass at once.
            _ = try await Self.androidCopy(h, "order-8") { _ in true }
            _ = try await h.settledPushes(app, "order-8", count: 2)
            let started = h.clock.now()
            let put = try await h.call("PUT", "/v1/apps/\(app.id)/activities/order-8/timeline", key: app.serverKey, json: [
                "renew": true,
                "entries": [["at": .string(RFC3339.string(started.addingTimeInterval(9 * 3600))), "content_state": ["status": "late", "eta": 1]]],
            ])
            #expect(put.status == 200, "\(put.json)")
            h.clock.set(started.addingTimeInterval(8 * 3600 - 15 * 60))
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/activities/order-8", key: app.serverKey)["renewed_to"]?.stringValue == "order-8~2"
            })
            let original = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-8", key: app.serverKey)
            #expect(original["not_renewed"]?.arrayValue ?? [] == [], "\(original.json)")
            let successor = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-8~2", key: app.serverKey)
            #expect((successor["devices"]?.arrayValue ?? []).map { $0["platform"]?.stringValue } == ["ios", "android"], "\(successor.json)")
            let copy = try await Self.androidCopy(h, "order-8~2") { $0.contentState != nil }
            let pushes = try await h.settledPushes(app, "order-8~2")
            #expect(copy != nil, "\(pushes.map { "\($0["platform"]!.jsonText) \($0["event"]!.jsonText) \($0["status"]!.jsonText) \($0["reason"]!.jsonText)" }) \(h.fcm!.engine.records().map(\.summaryLine))")
        }
    }

    @Test func aScheduledUpdateTooBigForFCMChangesNothingWhenItFires() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await Self.createApp(h)
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await Self.registerAndroid(h, app, "pixel-1", userID: "u1")
            #expect(try await h.start(app, "order-9", audience: ["user_ids": ["u1"]]).status == 202)
            // Fits APNs's payload, not FCM's data (whose keys and activity fields add up).
            let note = String(repeating: "x", count: 3_980)
            let scheduled = try await h.call("POST", "/v1/apps/\(app.id)/activities/order-9/update", key: app.serverKey, json: [
                "content_state": ["status": "big", "eta": 1, "note": .string(note)],
                "send_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(60))),
            ])
            #expect(scheduled.status == 202, "\(scheduled.json)")
            h.clock.advance(by: 61)
            #expect(try await h.eventually {
                let items = try await h.call("GET", "/v1/apps/\(app.id)/schedules?activity_id=order-9", key: app.serverKey)["items"]?.arrayValue ?? []
                return items.first?["status"] == "dropped"
            })
            // Nothing of it went anywhere: no update queued for either platform, the state unchanged.
            let pushes = try await h.settledPushes(app, "order-9")
            #expect(pushes.allSatisfy { $0["event"] == "start" }, "\(pushes)")
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-9", key: app.serverKey)
            #expect(shown["content_state"]?["status"] == "preparing")
        }
    }
}
