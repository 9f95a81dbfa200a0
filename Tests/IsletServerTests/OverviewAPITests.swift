import Foundation
import IsletCore
import Testing

/// `GET /v1/apps/{app_id}/overview`: an app's sends over a period, in buckets and
/// in all, with failures by reason and the figures in force.
@Suite("An app's overview through the API")
struct OverviewAPITests {
    @Test func anActivitysSendsTapsAndReceiptsShowInTheCurrentBucket() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let type = try await h.call(
                "PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey,
                json: ["attributes": ["order": ["type": "string"]],
                       "content_state": ["status": ["type": "string"], "eta": ["type": "int"]], "receipts": true])
            try #require(type.status == 201, "\(type.json)")
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            #expect(try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10]).status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 2)
            let sendID = try #require(h.sandbox.engine.activities().first?.contentState?["islet"]?["send_id"]?.stringValue)
            let device = h.secretHeader(app, "phone-1")
            let receipt = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/order-1/receipts", key: app.deviceKey,
                json: ["send_id": .string(sendID)], headers: device)
            #expect(receipt.status == 201, "\(receipt.json)")
            let tap = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/phone-1/activities/order-1/taps", key: app.deviceKey, json: [:], headers: device)
            #expect(tap.status == 201, "\(tap.json)")

            for period in ["hour", "day", "week"] {
                let overview = try await h.call("GET", "/v1/apps/\(app.id)/overview?period=\(period)", key: app.serverKey)
                #expect(overview.status == 200, "\(overview.json)")
                #expect(overview["period"]?.stringValue == period && overview["name"] == "Deliveries")
                let totals = try #require(overview["totals"])
                #expect(totals["sends"] == 2 && totals["pushes"] == 2 && totals["delivered"] == 2, "\(totals)")
                #expect(totals["failed"] == 0 && totals["received"] == 1 && totals["taps"] == 1, "\(totals)")
                let series = overview["series"]?.arrayValue ?? []
                let buckets = ["hour": 12, "day": 24, "week": 28][period]!
                #expect(series.count == buckets, "\(period): \(series.count)")
                // Everything happened in the newest bucket, the one that holds now.
                #expect(series.last?["sends"] == 2 && series.dropLast().allSatisfy { $0["sends"] == 0 })
                #expect(overview["budget"]?["priority_10_per_hour"]?.int64Value != nil, "\(overview.json)")
                #expect(overview["rate_limits"]?.objectValue != nil)
                let dates = ISO8601DateFormatter()
                dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
                func date(_ key: String) -> Date? {
                    overview[key]?.stringValue.flatMap { dates.date(from: $0) ?? ISO8601DateFormatter().date(from: $0) }
                }
                let from = try #require(date("from"))
                let to = try #require(date("to"))
                #expect(to.timeIntervalSince(from) == ["hour": 3_600, "day": 86_400, "week": 604_800][period]!)
                #expect(to > h.clock.now() && overview["bucket_seconds"]?.int64Value.map { Double($0) } == to.timeIntervalSince(from) / Double(buckets))
            }
            // The default period is the day; anything else is named.
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/overview", key: app.serverKey)["period"] == "day")
            let refused = try await h.call("GET", "/v1/apps/\(app.id)/overview?period=month", key: app.serverKey)
            #expect(refused.status == 422 && refused.errorFields == ["period"], "\(refused.json)")
            // The app's backend only: not the device key, not another app.
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/overview", key: app.deviceKey).status == 403)
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/overview", key: other.serverKey).status == 404)
        }
    }
}

extension OverviewAPITests {
    @Test func requestsRefusedByARateLimitAndDeadTokensAreCountedAcrossTheNodesStore() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let limited = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["rate_limits": ["registrations_per_second": 0.01, "registrations_burst": 1]])
            #expect(limited.status == 200, "\(limited.json)")
            var refused = 0
            for index in 0..<4 {
                let reply = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/phone-\(index)", key: app.deviceKey,
                    json: ["platform": "ios", "environment": "sandbox"])
                if reply.status == 429 { refused += 1 }
            }
            #expect(refused == 3)
            // Each node stores its count every few seconds.
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/overview?period=hour", key: app.serverKey)["totals"]?["rate_limited"] == .integer(Int64(refused))
            })
            let overview = try await h.call("GET", "/v1/apps/\(app.id)/overview?period=hour", key: app.serverKey)
            #expect(overview["series"]?.arrayValue?.last?["rate_limited"] == .integer(Int64(refused)))
            #expect(overview["totals"]?["dead_tokens"] == 0 && overview["webhooks_failing"] == [])
        }
    }
}

/// `GET /v1/apps/{app_id}/lookup`: one box for an app's records.
@Suite("Lookup through the API")
struct LookupAPITests {
    @Test func anIdAUserAnApnsIDAndATokensFirstDigitsEachFindWhatTheyName() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let token = ServerHarness.token()
            let registered = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox", "apns_token": .string(token), "user_id": "user-1"])
            #expect(registered.status == 201, "\(registered.json)")
            let alert = try await h.call(
                "POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey,
                json: ["audience": ["user_ids": ["user-1"]], "alert": ["title": "Hello", "body": "World"]])
            #expect(alert.status == 202, "\(alert.json)")
            var apnsID: String?
            _ = try await h.eventually {
                apnsID = h.sandbox.engine.pushes().first?.headers["apns-id"]
                return apnsID != nil
            }
            let pushID = try #require(apnsID)
            func find(_ text: String) async throws -> Reply {
                let query = text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? text
                return try await h.call("GET", "/v1/apps/\(app.id)/lookup?q=\(query)", key: app.serverKey)
            }
            let byUser = try await find("user-1")
            #expect(byUser.status == 200 && byUser["devices"]?.arrayValue?.first?["device_id"] == "phone-1", "\(byUser.json)")
            #expect(byUser["devices"]?.arrayValue?.first?["matched"] == "user_id")
            let byToken = try await find(String(token.prefix(10)).uppercased())
            #expect(byToken["devices"]?.arrayValue?.first?["matched"] == "apns_token", "\(byToken.json)")
            var byPush: Reply?
            _ = try await h.eventually {
                byPush = try await find(pushID)
                return byPush?["pushes"]?.arrayValue?.first?["status"] == "sent"
            }
            let push = try #require(byPush?["pushes"]?.arrayValue?.first, "\(byPush?.json ?? .null)")
            #expect(push["apns_id"]?.stringValue == pushID && push["device_id"] == "phone-1" && push["matched"] == "apns_id")
            let nothing = try await find("no-such-thing")
            #expect(nothing.status == 200 && nothing["activities"]?.arrayValue?.isEmpty == true)
            #expect(nothing["devices"]?.arrayValue?.isEmpty == true && nothing["pushes"]?.arrayValue?.isEmpty == true)
            // Bad input is named; the device key and another app find nothing of it.
            // (A NUL never reaches a route: any target holding %00 is 400.)
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/lookup?q=a%00b", key: app.serverKey).status == 400)
            for bad in ["", String(repeating: "x", count: 513)] {
                let refused = try await h.call("GET", "/v1/apps/\(app.id)/lookup?q=\(bad)", key: app.serverKey)
                #expect(refused.status == 422 && refused.errorFields == ["q"], "\(bad.prefix(20)): \(refused.json)")
            }
            // Without q, or with spaces alone, there is nothing to look for: nothing found.
            for empty in ["", "?q=%20%20"] {
                let none = try await h.call("GET", "/v1/apps/\(app.id)/lookup\(empty)", key: app.serverKey)
                #expect(none.status == 200 && none["devices"]?.arrayValue?.isEmpty == true, "\(none.json)")
            }
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/lookup?q=user-1", key: app.deviceKey).status == 403)
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await h.call("GET", "/v1/apps/\(other.id)/lookup?q=user-1", key: other.serverKey)["devices"]?.arrayValue?.isEmpty == true)
        }
    }
}
