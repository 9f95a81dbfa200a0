import Foundation
import IsletCore
import Testing

/// `GET /v1/apps/{app_id}/devices` and `GET /v1/apps/{app_id}/devices/{device_id}`:
/// the app's devices as its backend reads them, tokens shortened.
@Suite("Devices read through the API")
struct DeviceHistoryAPITests {
    @Test func aDevicesPageShowsItsTokensShortenedItsCopiesAndItsPushes() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await AndroidActivityTests.createApp(h)
            let startToken = try await h.registerStartable(app, "iphone-1", userID: "u1")
            _ = try await h.registerDevice(app, "iphone-1", apnsToken: ServerHarness.token(), userID: "u1")
            try await AndroidActivityTests.registerAndroid(h, app, "pixel-1", userID: "u1")
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["u1"]]).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            #expect(try await h.registerUpdateToken(app, "iphone-1", "order-1", token: token).status == 201)
            let alert = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["device_ids": ["iphone-1"]], "alert": ["title": "Hello", "body": "World"],
            ])
            #expect(alert.status == 202, "\(alert.json)")
            _ = try await h.settledPushes(app, "order-1", count: 2)

            let path = "/v1/apps/\(app.id)/devices/iphone-1"
            // The alert's row, once APNs answered it.
            #expect(try await h.eventually {
                try await h.call("GET", path, key: app.serverKey)["pushes"]?.arrayValue?.first?["status"] == "sent"
            })
            let page = try await h.call("GET", path, key: app.serverKey)
            #expect(page.status == 200, "\(page.json)")
            #expect(page["device_id"] == "iphone-1" && page["platform"] == "ios" && page["user_id"] == "u1")
            #expect(page["has_secret"] == true && page["reachable"] == true && page["unreachable_at"] == .null)
            // Tokens shortened: enough to tell apart, never enough to send with.
            let apnsPrefix = try #require(page["apns_token_prefix"]?.stringValue)
            #expect(apnsPrefix.count == 9 && apnsPrefix.hasSuffix("…"))
            let tokens = page["push_to_start"]?.arrayValue ?? []
            #expect(tokens.map { $0["activity_type"] } == ["DeliveryAttributes"])
            #expect(tokens.first?["token_prefix"]?.stringValue == String(startToken.prefix(8)) + "…")
            #expect(!page.json.jsonText.contains(startToken) && !page.json.jsonText.contains(token))
            let copies = page["copies"]?.arrayValue ?? []
            #expect(copies.map { $0["activity_id"] } == ["order-1"] && copies.first?["activity_type"] == "DeliveryAttributes")
            #expect(copies.first?["update_token_prefix"]?.stringValue == String(token.prefix(8)) + "…")
            // The alert has a row of its own; the start went in its send's window.
            let pushes = page["pushes"]?.arrayValue ?? []
            #expect(pushes.map { $0["event"] } == ["alert"] && pushes.first?["activity_id"] == .null, "\(pushes)")

            let android = try await h.call("GET", "/v1/apps/\(app.id)/devices/pixel-1", key: app.serverKey)
            #expect(android["platform"] == "android" && android["environment"] == .null)
            #expect(android["fcm_token_prefix"]?.stringValue == String(AndroidActivityTests.pixelToken.prefix(8)) + "…")
            #expect(android["copies"]?.arrayValue?.first?["platform"] == "android")

            // The list, by id, a page at a time.
            var seen: [String] = []
            var cursor: String?
            repeat {
                let list = try await h.call(
                    "GET", "/v1/apps/\(app.id)/devices?limit=1" + (cursor.map { "&cursor=\($0)" } ?? ""), key: app.serverKey)
                #expect(list.status == 200, "\(list.json)")
                seen += (list["items"]?.arrayValue ?? []).compactMap { $0["device_id"]?.stringValue }
                cursor = list["next_cursor"]?.stringValue
            } while cursor != nil && seen.count < 10
            #expect(seen == ["iphone-1", "pixel-1"])
            let all = try await h.call("GET", "/v1/apps/\(app.id)/devices", key: app.serverKey)
            #expect(all["items"]?.arrayValue?.first?["apns_token_prefix"] == .string(apnsPrefix))
            #expect(!all.json.jsonText.contains(startToken))

            // The app's backend only: a device key (which every app ships) reads no
            // device, its own included; another app's key finds nothing here.
            #expect(try await h.call("GET", path, key: app.deviceKey, headers: h.secretHeader(app, "iphone-1")).status == 403)
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/devices", key: app.deviceKey).status == 403)
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/devices/phone-9", key: app.serverKey).status == 404)
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await h.call("GET", path, key: other.serverKey).status == 404)
            for query in ["limit=0", "limit=501", "limit=-0", "limit=1e3", "cursor="] {
                let refused = try await h.call("GET", "/v1/apps/\(app.id)/devices?" + query, key: app.serverKey)
                #expect(refused.status == 422, "\(query): \(refused.json)")
                #expect(refused.errorFields == [String(query.prefix { $0 != "=" })], "\(query)")
            }
        }
    }
}
