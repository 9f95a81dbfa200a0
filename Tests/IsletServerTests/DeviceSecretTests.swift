import Foundation
import IsletCore
import IsletTesting
import Testing

/// Device secrets over HTTP: the device key ships inside the app, so it is public;
/// a registered device's routes also need the secret its registration answered.
@Suite("Device secrets through the API")
struct DeviceSecretTests {
    static let header = "Islet-Device-Secret"

    /// Whether `reply` is the refusal of a missing or wrong secret.
    func refusesTheSecret(_ reply: Reply) -> Bool {
        reply.status == 403 && reply.errorFields == [Self.header]
            && reply["detail"]?.stringValue?.contains(Self.header) == true
            && reply.headers["content-type"]?.hasPrefix("application/problem+json") == true
    }

    func patch(_ h: ServerHarness, _ app: TestApp, _ policy: String) async throws -> Reply {
        try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["device_secrets": .string(policy)])
    }

    @Test func theCreatingRegistrationAnswersTheSecretOnceAndUncached() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let device = "/v1/apps/\(app.id)/devices/phone-1"
            let created = try await h.call("PUT", device, key: app.deviceKey, json: ["platform": "ios", "environment": "sandbox"])
            #expect(created.status == 201)
            #expect(created.headers["cache-control"] == "no-store")
            let secret = try #require(created["device_secret"]?.stringValue)
            #expect(secret.hasPrefix("islet_ds_"))
            #expect(created["has_secret"] == true)
            let again = try await h.call(
                "PUT", device, key: app.deviceKey, json: ["platform": "ios", "environment": "sandbox"], headers: [Self.header: secret])
            #expect(again.status == 200)
            #expect(again["device_secret"] == nil)
            #expect(again["has_secret"] == true)
            #expect(again.headers["cache-control"] == nil)
        }
    }

    @Test func aRegistrationRetriedWithItsIdempotencyKeyGetsTheSameSecret() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            _ = try await patch(h, app, "required")
            let device = "/v1/apps/\(app.id)/devices/phone-1"
            let body: JSONValue = ["platform": "ios", "environment": "sandbox", "user_id": "u-1"]
            let key = ["Idempotency-Key": "reg-7f3a"]
            let first = try await h.call("PUT", device, key: app.deviceKey, json: body, headers: key)
            #expect(first.status == 201)
            let secret = try #require(first["device_secret"]?.stringValue)
            #expect(first.headers["idempotent-replayed"] == nil)
            // The answer was lost on the way: the retry, without a secret, gets it again.
            let retried = try await h.call("PUT", device, key: app.deviceKey, json: body, headers: key)
            #expect(retried.status == 201, "\(retried.json)")
            #expect(retried["device_secret"]?.stringValue == secret)
            #expect(retried.headers["idempotent-replayed"] == "true")
            #expect(retried.headers["cache-control"] == "no-store")
            // The secret works; without the key, the same retry is refused as ever.
            let token = try await h.call(
                "PUT", "\(device)/push-to-start/DeliveryAttributes", key: app.deviceKey,
                json: ["token": .string(String(repeating: "ab", count: 32))], headers: [Self.header: secret])
            #expect(token.status == 201, "\(token.json)")
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: body)))
            // The same key with another body is refused, naming the header.
            let other = try await h.call(
                "PUT", device, key: app.deviceKey, json: ["platform": "ios", "environment": "production"], headers: key)
            #expect(other.status == 422 && other.errorFields == ["Idempotency-Key"], "\(other.json)")
            // A key is one device's: another device's registration with it is its own.
            let second = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-2", key: app.deviceKey, json: body, headers: key)
            #expect(second.status == 201 && second.headers["idempotent-replayed"] == nil)
            #expect(second["device_secret"]?.stringValue != secret)
            // Malformed, the key is refused before anything is written.
            let bad = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-3", key: app.deviceKey, json: body,
                headers: ["Idempotency-Key": String(repeating: "k", count: 256)])
            #expect(bad.status == 422 && bad.errorFields == ["Idempotency-Key"], "\(bad.json)")
            #expect(try await h.call("PUT", "/v1/apps/\(app.id)/devices/phone-3", key: app.deviceKey, json: body).status == 201)
        }
    }

    @Test func everyLaterRouteForTheDeviceNeedsTheSecret() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            let secret = try #require(h.deviceSecrets[app, "phone-1"])
            let base = "/v1/apps/\(app.id)/devices/phone-1"
            let routes: [(String, String, JSONValue?, Int)] = [
                ("PUT", base, ["platform": "ios", "environment": "sandbox"], 200),
                ("PUT", base + "/push-to-start/DeliveryAttributes", ["token": .string(ServerHarness.token())], 201),
                ("DELETE", base + "/push-to-start/DeliveryAttributes", nil, 204),
                ("PUT", base + "/activities/ride-1", ["activity_type": "DeliveryAttributes", "token": .string(ServerHarness.token())], 201),
                ("POST", base + "/activities/ride-1/end", [:], 200),
                ("POST", base + "/secret/rotate", [:], 200),
            ]
            var current = secret
            for (method, path, body, success) in routes {
                func send(_ headers: [String: String]) async throws -> Reply {
                    if let body { return try await h.call(method, path, key: app.deviceKey, json: body, headers: headers) }
                    return try await h.call(method, path, key: app.deviceKey, headers: headers)
                }
                for headers in [[:], [Self.header: ""], [Self.header: "islet_ds_guessed"], [Self.header: app.deviceKey]] {
                    let refused = try await send(headers)
                    #expect(refusesTheSecret(refused), "\(method) \(path) with \(headers): \(refused.status) \(refused.json)")
                }
                let accepted = try await send([Self.header: current])
                #expect(accepted.status == success, "\(method) \(path): \(accepted.json)")
                if let rotated = accepted["device_secret"]?.stringValue { current = rotated }
            }
            #expect(current != secret)
        }
    }

    @Test func aRouteForADeviceThatDoesNotExistAnswersAsBefore() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let base = "/v1/apps/\(app.id)/devices/ghost"
            #expect(try await h.call(
                "PUT", base + "/push-to-start/DeliveryAttributes", key: app.deviceKey, json: ["token": .string(ServerHarness.token())]
            ).status == 404)
            #expect(try await h.call("DELETE", base + "/push-to-start/DeliveryAttributes", key: app.deviceKey).status == 404)
            #expect(try await h.call(
                "PUT", base + "/activities/a", key: app.deviceKey,
                json: ["activity_type": "DeliveryAttributes", "token": .string(ServerHarness.token())]
            ).status == 404)
            #expect(try await h.call("POST", base + "/activities/a/end", key: app.deviceKey, body: "").status == 404)
            #expect(try await h.call("POST", base + "/secret/rotate", key: app.deviceKey, headers: [Self.header: "islet_ds_x"]).status == 404)
            #expect(try await h.call("POST", base + "/secret/reset", key: app.serverKey).status == 404)
            #expect(try await h.call(
                "PUT", base, key: app.deviceKey, json: ["platform": "ios", "environment": "sandbox"], headers: [Self.header: "islet_ds_x"]
            ).status == 201)
        }
    }

    /// The attack the secret stops: with the device key alone, registering one's own
    /// update token for a device's activity (the next update would have gone to it).
    @Test func anAttackerWithTheDeviceKeyCannotTakeTheNextUpdate() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            #expect(try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]]).status == 202)
            let real = try await h.simulatedUpdateToken(activityID: "order-1")
            #expect(try await h.registerUpdateToken(app, "phone-1", "order-1", token: real).status == 201)

            let attacker = ServerHarness.token()
            _ = try h.sandbox.engine.registerToken(attacker, kind: .liveActivityUpdate)
            let path = "/v1/apps/\(app.id)/devices/phone-1/activities/order-1"
            for headers in [[:], [Self.header: "islet_ds_guessed"]] {
                let taken = try await h.call(
                    "PUT", path, key: app.deviceKey, json: ["activity_type": "DeliveryAttributes", "token": .string(attacker)],
                    headers: headers)
                #expect(refusesTheSecret(taken), "\(taken.status) \(taken.json)")
            }
            // Nor can it move the device to its own user, or end the device's copy.
            let moved = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox", "user_id": "attacker"])
            #expect(refusesTheSecret(moved))
            #expect(refusesTheSecret(try await h.call("POST", path + "/end", key: app.deviceKey, body: "")))

            let before = h.sandbox.engine.pushes().count
            #expect(try await h.update(app, "order-1", state: ["status": "on the way", "eta": 5])["targets"]?.int64Value == 1)
            let pushes = try await h.settledPushes(app, "order-1", count: 2)
            #expect(pushes.allSatisfy { $0["status"]?.stringValue == "sent" })
            _ = try await h.eventually { h.sandbox.engine.pushes().count > before }
            let update = try #require(h.sandbox.engine.pushes().dropFirst(before).first)
            #expect(update.token == real)
            #expect(!h.sandbox.engine.pushes().contains { $0.token == attacker })
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["status"]?.stringValue != "ended")
        }
    }

    @Test func aRotationNeedsTheOldSecretAndAResetTheServerKey() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerDevice(app, "phone-1")
            let old = try #require(h.deviceSecrets[app, "phone-1"])
            let device = "/v1/apps/\(app.id)/devices/phone-1"
            let registration: JSONValue = ["platform": "ios", "environment": "sandbox"]

            let rotated = try await h.call("POST", device + "/secret/rotate", key: app.deviceKey, headers: [Self.header: old])
            #expect(rotated.status == 200)
            #expect(rotated.headers["cache-control"] == "no-store")
            #expect(rotated["device_id"] == "phone-1")
            let new = try #require(rotated["device_secret"]?.stringValue)
            #expect(new.hasPrefix("islet_ds_") && new != old)
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: old])))
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: new]).status == 200)
            // A rotation with the server key is the wrong key; with no secret, refused.
            #expect(try await h.call("POST", device + "/secret/rotate", key: app.serverKey, headers: [Self.header: new]).status == 403)
            #expect(refusesTheSecret(try await h.call("POST", device + "/secret/rotate", key: app.deviceKey)))

            // Support: the server key resets it without the old one; the device key cannot.
            #expect(try await h.call("POST", device + "/secret/reset", key: app.deviceKey, headers: [Self.header: new]).status == 403)
            let reset = try await h.call("POST", device + "/secret/reset", key: app.serverKey, body: "{}")
            #expect(reset.status == 200)
            #expect(reset.headers["cache-control"] == "no-store")
            let given = try #require(reset["device_secret"]?.stringValue)
            #expect(given != new)
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: new])))
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: given]).status == 200)
        }
    }

    @Test func theAppSettingIsShownAndChangedAndOffChecksNothing() async throws {
        try await ServerHarness.with { h in
            let created = try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                "name": "Shop", "bundle_id": "com.example.shop",
            ])
            #expect(created["device_secrets"] == "required")
            let app = TestApp(
                id: try #require(created["id"]?.stringValue), serverKey: try #require(created["server_key"]?.stringValue),
                deviceKey: try #require(created["device_key"]?.stringValue))
            #expect(try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)["device_secrets"] == "required")
            let listed = try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken)
            #expect(listed["items"]?.arrayValue?.first?["device_secrets"] == "required")

            let bad = try await patch(h, app, "sometimes")
            #expect(bad.status == 422)
            #expect(bad.errorFields == ["device_secrets"])

            let off = try await patch(h, app, "off")
            #expect(off.status == 200)
            #expect(off["device_secrets"] == "off")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)["device_secrets"] == "off")
            // Off: a secret is still issued, and nothing is checked.
            let device = "/v1/apps/\(app.id)/devices/phone-1"
            let registration: JSONValue = ["platform": "ios", "environment": "sandbox"]
            let first = try await h.call("PUT", device, key: app.deviceKey, json: registration)
            #expect(first.status == 201)
            let secret = try #require(first["device_secret"]?.stringValue)
            #expect(try await h.call(
                "PUT", device + "/push-to-start/DeliveryAttributes", key: app.deviceKey, json: ["token": .string(ServerHarness.token())],
                headers: [Self.header: "islet_ds_wrong"]
            ).status == 201)
            // Before any request carried the secret, a registration without it is
            // answered a new one.
            let renewed = try await h.call("PUT", device, key: app.deviceKey, json: registration)
            #expect(renewed.status == 200)
            #expect(renewed.headers["cache-control"] == "no-store")
            let current = try #require(renewed["device_secret"]?.stringValue)
            // A registration with the secret keeps it; from then on one without it is
            // still accepted, and keeps it too.
            let kept = try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: current])
            #expect(kept.status == 200 && kept["device_secret"] == nil)
            let without = try await h.call("PUT", device, key: app.deviceKey, json: registration)
            #expect(without.status == 200 && without["device_secret"] == nil && without.headers["cache-control"] == nil)

            // Required again: at once, on this node.
            #expect(try await patch(h, app, "required")["device_secrets"] == "required")
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: registration)))
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: secret])))
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: current]).status == 200)
        }
    }

    /// Under `off`, a secret the device has sent once is never replaced by a
    /// registration without it: an attacker with the device key gets no secret, and
    /// once the app requires secrets the device's own still works and nothing else
    /// does. A reset (the server key) gives a new one that has not been sent yet.
    @Test func aSecretTheDeviceHasUsedIsNeverReplacedUnderOff() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            #expect(try await patch(h, app, "off").status == 200)
            let device = "/v1/apps/\(app.id)/devices/phone-1"
            let registration: JSONValue = ["platform": "ios", "environment": "sandbox"]
            let created = try await h.call("PUT", device, key: app.deviceKey, json: registration)
            let secret = try #require(created["device_secret"]?.stringValue)
            // The device sends it, on any of its routes.
            #expect(try await h.call(
                "PUT", device + "/push-to-start/DeliveryAttributes", key: app.deviceKey,
                json: ["token": .string(ServerHarness.token())], headers: [Self.header: secret]
            ).status == 201)
            // Registrations without it (or with another) are accepted, and answer none.
            for headers in [[:], [Self.header: "islet_ds_attacker"]] {
                let attacker = try await h.call("PUT", device, key: app.deviceKey, json: ["platform": "ios", "environment": "production"], headers: headers)
                #expect(attacker.status == 200 && attacker["device_secret"] == nil, "\(attacker.json)")
                #expect(attacker["environment"] == "production" && attacker["has_secret"] == true)
            }
            #expect(try await patch(h, app, "required").status == 200)
            #expect(refusesTheSecret(try await h.call("PUT", device, key: app.deviceKey, json: registration)))
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: secret]).status == 200)

            // A reset's secret has not been sent yet: under off, a registration
            // without it is answered another.
            let reset = try await h.call("POST", device + "/secret/reset", key: app.serverKey, json: [:])
            let given = try #require(reset["device_secret"]?.stringValue)
            #expect(try await patch(h, app, "off").status == 200)
            let renewed = try await h.call("PUT", device, key: app.deviceKey, json: registration)
            let another = try #require(renewed["device_secret"]?.stringValue, "\(renewed.json)")
            #expect(another != given && another != secret)
            // Sent once, it is kept.
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration, headers: [Self.header: another]).status == 200)
            #expect(try await h.call("PUT", device, key: app.deviceKey, json: registration)["device_secret"] == nil)
        }
    }

    @Test func theDocumentDeclaresTheRoutesTheFieldAndTheHeader() async throws {
        try await ServerHarness.with { h in
            let document = try await h.call("GET", "/openapi.json", key: nil)
            let paths = try #require(document["paths"])
            let rotate = try #require(paths["/v1/apps/{app_id}/devices/{device_id}/secret/rotate"]?["post"])
            #expect(rotate["security"] == [["deviceKey": []]])
            #expect(rotate["responses"]?["403"]?["description"]?.stringValue?.contains(Self.header) == true)
            let reset = try #require(paths["/v1/apps/{app_id}/devices/{device_id}/secret/reset"]?["post"])
            #expect(reset["security"] == [["serverKey": []]])
            for (path, method) in [
                ("/v1/apps/{app_id}/devices/{device_id}", "put"),
                ("/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}", "put"),
                ("/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}", "delete"),
                ("/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}", "put"),
                ("/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/end", "post"),
            ] {
                let operation = try #require(paths[path]?[method])
                #expect(operation["summary"]?.stringValue?.contains(Self.header) == true, "\(method) \(path)")
                #expect(operation["responses"]?["403"]?["description"]?.stringValue?.contains(Self.header) == true, "\(method) \(path)")
            }
            let patch = try #require(paths["/v1/apps/{app_id}"]?["patch"])
            let field = patch["requestBody"]?["content"]?["application/json"]?["schema"]?["properties"]?["device_secrets"]
            #expect(field?["enum"] == ["required", "off", .null])
        }
    }
}
