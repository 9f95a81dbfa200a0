import Delivery
import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

@Suite("Dead tokens and environments, through the API and the simulators")
struct DeadTokenTests {
    @Test func rejectedPushToStartTokenIsDeleted() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let token = ServerHarness.token()
            // The token belongs to neither simulator's environment: BadDeviceToken in
            // both, so it is dead, not mixed up.
            try h.sandbox.engine.registerToken(token, kind: .pushToStart, environment: .production)
            try h.production.engine.registerToken(token, kind: .pushToStart, environment: .sandbox)
            try await h.registerStartable(app, "phone-1", token: token)
            #expect(try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]]).status == 202)
            let pushes = try await h.settledPushes(app, "order-1", count: 1)
            #expect(pushes.first?["status"]?.stringValue == "failed")
            #expect(pushes.first?["reason"]?.stringValue == "BadDeviceToken")
            #expect(pushes.first?["environment_switched"] == true)
            // The device's copy of the activity will never start: it is ended.
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["end_cause"]?.stringValue == "token_rejected")
            // Deleted: the same start now finds no startable device, and the DELETE
            // route has nothing to delete.
            let again = try await h.start(app, "order-2", audience: ["device_ids": ["phone-1"]])
            #expect(again.status == 422)
            let delete = try await h.call(
                "DELETE", "/v1/apps/\(app.id)/devices/phone-1/push-to-start/DeliveryAttributes", key: app.deviceKey,
                headers: h.secretHeader(app, "phone-1"))
            #expect(delete.status == 404)
            // The device itself is untouched.
            let device = try await h.registerDevice(app, "phone-1")
            #expect(device["reachable"] == true)
        }
    }

    @Test func rejectedUpdateTokenEndsOnlyThatCopy() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            #expect(try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]]).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            // The same token also registered for a second activity (as a confused app
            // might); then order-1 ends and is dismissed at once on the device.
            try await h.registerUpdateToken(app, "phone-1", "order-2", token: token)
            h.clock.advance(by: 1)
            let end = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey,
                json: ["dismissal_date": .integer(Int64(h.clock.now().timeIntervalSince1970))])
            #expect(end.status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 2)
            h.clock.advance(by: 1)
            // APNs now answers 410 for the token: order-2's copy on the phone ends.
            #expect(try await h.update(app, "order-2", state: ["status": "late"]).status == 202)
            let pushes = try await h.settledPushes(app, "order-2", count: 1)
            #expect(pushes.first?["apns_status"]?.int64Value == 410)
            #expect(pushes.first?["reason"]?.stringValue == "Unregistered")
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-2", key: app.serverKey)
            let copy = try #require(shown["devices"]?.arrayValue?.first)
            #expect(copy["status"]?.stringValue == "ended")
            #expect(copy["end_cause"]?.stringValue == "token_rejected")
            // The device and its push-to-start token are left alone.
            let device = try await h.registerDevice(app, "phone-1")
            #expect(device["reachable"] == true)
            #expect(try await h.start(app, "order-3", audience: ["device_ids": ["phone-1"]]).status == 202)
        }
    }

    @Test func refusalOlderThanTheLatestRegistrationKeepsTheToken() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            #expect(try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]]).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            h.clock.advance(by: 1)
            let end = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey,
                json: ["dismissal_date": .integer(Int64(h.clock.now().timeIntervalSince1970))])
            #expect(end.status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 2)
            // Registered after APNs learned the token was gone: the 410's timestamp
            // predates the registration, so the token is kept.
            h.clock.advance(by: 60)
            try await h.registerUpdateToken(app, "phone-1", "order-2", token: token)
            #expect(try await h.update(app, "order-2", state: ["status": "late"]).status == 202)
            let pushes = try await h.settledPushes(app, "order-2", count: 1)
            #expect(pushes.first?["apns_status"]?.int64Value == 410)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-2", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["status"]?.stringValue == "active")
        }
    }

    @Test func rejectedDeviceTokenMarksTheDeviceUnreachable() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let token = ServerHarness.token()
            try h.sandbox.engine.registerToken(token, kind: .device, environment: .production)
            try h.production.engine.registerToken(token, kind: .device, environment: .sandbox)
            try await h.registerDevice(app, "phone-1", apnsToken: token, userID: "user-1")
            try await h.registerDevice(app, "phone-2", apnsToken: ServerHarness.token(), userID: "user-1")
            let sent = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["user_ids": ["user-1"]], "alert": ["title": "Hello", "body": "World"],
            ])
            #expect(sent.status == 202)
            #expect(sent["targets"]?.int64Value == 2)
            var device = try await h.registerDevice(app, "phone-1")
            _ = try await h.eventually {
                device = try await h.registerDevice(app, "phone-1")
                return device["reachable"] == false
            }
            #expect(device["reachable"] == false)
            #expect(try await h.registerDevice(app, "phone-2")["reachable"] == true)
            // Unreachable devices are skipped; registering a token again makes the
            // device reachable.
            let again = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["user_ids": ["user-1"]], "alert": ["title": "Hello", "body": "Again"],
            ])
            #expect(again["targets"]?.int64Value == 1)
            #expect(try await h.registerDevice(app, "phone-1", apnsToken: ServerHarness.token())["reachable"] == true)
        }
    }

    @Test func environmentMixUpIsRecoveredAndRecorded() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let token = ServerHarness.token()
            // A production token that the app registered as sandbox.
            try h.sandbox.engine.registerToken(token, kind: .pushToStart, environment: .production)
            try await h.registerStartable(app, "phone-1", environment: .sandbox, token: token)
            #expect(try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]]).status == 202)
            let pushes = try await h.settledPushes(app, "order-1", count: 1)
            let push = try #require(pushes.first)
            #expect(push["status"]?.stringValue == "sent")
            #expect(push["environment"]?.stringValue == "production")
            #expect(push["environment_switched"] == true)
            #expect(push["attempts"]?.int64Value == 2)
            // The same apns-id reached both hosts.
            let apnsID = try #require(push["apns_id"]?.stringValue)
            #expect(h.sandbox.engine.pushes().map { $0.headers["apns-id"] } == [apnsID])
            #expect(h.production.engine.pushes().map { $0.headers["apns-id"] } == [apnsID])
            // The next start goes straight to production.
            #expect(try await h.start(app, "order-2", audience: ["device_ids": ["phone-1"]]).status == 202)
            let next = try await h.settledPushes(app, "order-2", count: 1)
            #expect(next.first?["environment"]?.stringValue == "production")
            #expect(next.first?["environment_switched"] == false)
            #expect(h.production.engine.pushes().count == 2)
            #expect(h.sandbox.engine.pushes().count == 1)
        }
    }

    @Test func alertsNeverGoToLiveActivityTokens() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            // A device with only a push-to-start token has nothing an alert may use.
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let reply = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["user_ids": ["user-1"]], "alert": ["title": "Hello", "body": "World"],
            ])
            #expect(reply.status == 422)
            #expect(reply["detail"]?.stringValue?.contains("reachable device token") == true)
            // A Live Activity token cannot be registered as a device token, or the reverse.
            let startToken = try await h.registerStartable(app, "phone-2")
            let crossed = try await h.registerDevice(app, "phone-3", apnsToken: nil)
            #expect(crossed.status == 201)
            let mixed = try await h.call("PUT", "/v1/apps/\(app.id)/devices/phone-3", key: app.deviceKey, json: [
                "platform": "ios", "environment": "sandbox", "apns_token": .string(startToken),
            ], headers: h.secretHeader(app, "phone-3"))
            #expect(mixed.status == 422)
            #expect(mixed.errorFields == ["apns_token"])
            let deviceToken = ServerHarness.token()
            try await h.registerDevice(app, "phone-4", apnsToken: deviceToken)
            let asUpdate = try await h.registerUpdateToken(app, "phone-4", "ride-1", token: deviceToken)
            #expect(asUpdate.status == 422)
            #expect(asUpdate.errorFields == ["token"])
        }
    }

    /// Rounds a push makes before it is given up (the delivery default).
    static let rounds = DeliveryConfiguration(shutdownGrace: 1).maxRounds

    @Test func passingFaultsAreRetriedWithTheSameApnsID() async throws {
        try await ServerHarness.with(simulators: { options in
            options.engine.faultInjection = try! FaultInjection(failRate: 0.5, failStatus: .serviceUnavailable)
        }) { h in
            let app = try await h.createApp()
            for index in 0..<20 {
                try await h.registerStartable(app, "phone-\(index)", userID: "fan")
            }
            #expect(try await h.start(app, "final", audience: ["user_ids": ["fan"]])["targets"]?.int64Value == 20)
            // Backoffs and the circuit breaker follow the shared clock: move it on
            // while waiting.
            var pushes: [JSONValue] = []
            #expect(try await h.eventually {
                h.clock.advance(by: 2)
                pushes = try await h.call("GET", "/v1/apps/\(app.id)/activities/final/pushes", key: app.serverKey)["items"]?.arrayValue ?? []
                // Each push is sent, or (one time in thousands, every round refused)
                // failed once its rounds ran out: never left behind, never lost.
                return pushes.count == 20 && pushes.allSatisfy {
                    $0["status"]?.stringValue == "sent"
                        || ($0["status"]?.stringValue == "failed" && $0["attempts"]?.int64Value == Int64(Self.rounds))
                }
            })
            #expect(pushes.count == 20)
            #expect(pushes.contains { $0["status"]?.stringValue == "sent" })
            let attempts = pushes.compactMap { $0["attempts"]?.int64Value }.reduce(0, +)
            #expect(attempts > 20)
            let received = h.sandbox.engine.pushes()
            #expect(received.count == Int(attempts))
            #expect(Set(received.compactMap { $0.headers["apns-id"] }) == Set(pushes.compactMap { $0["apns_id"]?.stringValue }))
        }
    }

    @Test func aRegistrationWithoutATokenNeverErasesOne() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let token = ServerHarness.token()
            #expect(try await h.registerDevice(app, "phone-1", apnsToken: token, userID: "user-1").status == 201)
            for empty: JSONValue in [.null, ""] {
                let again = try await h.call("PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey, json: [
                    "platform": "ios", "environment": "sandbox", "apns_token": empty,
                ], headers: h.secretHeader(app, "phone-1"))
                #expect(again.status == 200)
                #expect(again["has_apns_token"] == true)
            }
            let omitted = try await h.registerDevice(app, "phone-1")
            #expect(omitted["has_apns_token"] == true)
            #expect(omitted["user_id"] == "user-1")
            // The stored token still gets the alert.
            let sent = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["device_ids": ["phone-1"]], "alert": ["title": "Hello", "body": "World"],
            ])
            #expect(sent["targets"]?.int64Value == 1)
            _ = try await h.eventually { h.sandbox.engine.pushes().count == 1 }
            #expect(h.sandbox.engine.pushes().first?.token == token)
            // The same push-to-start token again changes nothing: 200, not 201.
            let startToken = try await h.registerStartable(app, "phone-1")
            let repeated = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1/push-to-start/DeliveryAttributes", key: app.deviceKey,
                json: ["token": .string(startToken)], headers: h.secretHeader(app, "phone-1"))
            #expect(repeated.status == 200)
        }
    }
}
