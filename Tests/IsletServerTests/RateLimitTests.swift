import Foundation
import IsletCore
import IsletTesting
import Testing

/// Each app's rate limits through the API, on the harness's clock: the families'
/// buckets, the 429 and its fields, the headers on every answer of a limited family,
/// and what a refusal leaves alone.
@Suite("Rate limits: sends and registrations per app")
struct RateLimitTests {
    private func limit(_ h: ServerHarness, _ app: TestApp, _ limits: JSONValue) async throws -> Reply {
        try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["rate_limits": limits])
    }

    @Test func aSendPastTheAppsLimitIs429WithTheDraftsFieldsAndQueuesNothing() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            // No limit: no fields.
            let free = try await h.start(app, "order-0", audience: ["device_ids": ["phone-1"]])
            #expect(free.status == 202)
            #expect(free.headers["ratelimit"] == nil && free.headers["ratelimit-policy"] == nil)

            let patched = try await limit(h, app, ["sends_per_second": 0.5, "sends_burst": 2])
            #expect(patched["rate_limits"]?["sends_per_second"] == 0.5)
            #expect(patched["rate_limits"]?["sends_burst"] == 2)
            #expect(patched["rate_limits"]?["registrations_per_second"] == .null)

            let first = try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]])
            #expect(first.status == 202)
            #expect(first.headers["ratelimit-policy"] == "\"sends\";q=2;w=4")
            #expect(first.headers["ratelimit"] == "\"sends\";r=1;t=2")
            // An error answer of the family carries the fields too, and spends a token.
            let missing = try await h.update(app, "no-such-activity", state: ["status": "x"])
            #expect(missing.status == 404)
            #expect(missing.headers["ratelimit"] == "\"sends\";r=0;t=4")

            _ = try await h.settledPushes(app, "order-0", count: 1)
            _ = try await h.settledPushes(app, "order-1", count: 1)
            let pushesBefore = h.sandbox.engine.pushes().count
            let refused = try await h.start(app, "order-2", audience: ["device_ids": ["phone-1"]])
            #expect(refused.status == 429)
            #expect(refused.headers["content-type"] == "application/problem+json")
            #expect(refused["type"]?.stringValue == "https://iana.org/assignments/http-problem-types#quota-exceeded")
            #expect(refused["violated-policies"] == ["sends"])
            #expect(refused["detail"]?.stringValue?.contains("sends") == true)
            #expect(refused.headers["retry-after"] == "2")
            #expect(refused.headers["ratelimit-policy"] == "\"sends\";q=2;w=4")
            #expect(refused.headers["ratelimit"] == "\"sends\";r=0;t=4")
            // Nothing of it was recorded or queued.
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-2", key: app.serverKey)
            #expect(shown.status == 404)
            #expect(h.sandbox.engine.pushes().count == pushesBefore)

            // Reads are not limited, nor another family.
            let list = try await h.call("GET", "/v1/apps/\(app.id)/activities", key: app.serverKey)
            #expect(list.status == 200 && list.headers["ratelimit"] == nil)
            let device = try await h.registerDevice(app, "phone-2")
            #expect(device.headers["ratelimit"] == nil)

            let metrics = try await h.call("GET", "/metrics", key: nil)
            let line = "islet_rate_limited_total{node=\"\(h.nodeID)\",app=\"\(app.id)\",family=\"sends\"} 1"
            #expect(metrics.json.stringValue?.contains(line) == true, "\(metrics.json.stringValue ?? "")")

            // Two seconds give one token back.
            h.clock.advance(by: 2)
            let again = try await h.start(app, "order-2", audience: ["device_ids": ["phone-1"]])
            #expect(again.status == 202)
            #expect(again.headers["ratelimit"] == "\"sends\";r=0;t=4")

            // null takes the server's figure again: none.
            let cleared = try await limit(h, app, .null)
            #expect(cleared["rate_limits"]?["sends_per_second"] == .null)
            let unlimited = try await h.update(app, "order-2", state: ["status": "y"])
            #expect(unlimited.status == 202 && unlimited.headers["ratelimit"] == nil)
        }
    }

    @Test func aRetryOfAnAcceptedRequestReplaysPastTheLimit() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            _ = try await limit(h, app, ["sends_per_second": 0.1, "sends_burst": 1])
            let key = ["Idempotency-Key": "start-order-1"]
            let first = try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]], headers: key)
            #expect(first.status == 202)
            // The bucket is empty: a new request is refused, the retry replays.
            let other = try await h.start(app, "order-9", audience: ["device_ids": ["phone-1"]], headers: ["Idempotency-Key": "other"])
            #expect(other.status == 429)
            let retry = try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]], headers: key)
            #expect(retry.status == 202)
            #expect(retry.headers["idempotent-replayed"] == "true")
            #expect(retry.json == first.json)
            #expect(retry.headers["ratelimit"] == "\"sends\";r=0;t=10")
            let pushes = try await h.settledPushes(app, "order-1", count: 1)
            #expect(pushes.count == 1)
        }
    }

    @Test func registrationsHaveABucketOfTheirOwnAndTheServersDefaultApplies() async throws {
        try await ServerHarness.with(configure: {
            $0.registrationsPerSecond = 1
            $0.registrationsBurst = 2
        }) { h in
            let app = try await h.createApp()
            var shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
            #expect(shown["rate_limits"]?["registrations_per_second"]?.doubleValue == 1)
            #expect(shown["rate_limits"]?["registrations_burst"] == 2)
            let body: JSONValue = ["platform": "ios", "environment": "sandbox"]
            func register(_ device: String) async throws -> Reply {
                try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/\(device)", key: app.deviceKey, json: body,
                    headers: h.secretHeader(app, device))
            }
            #expect(try await register("phone-1").status == 201)
            let second = try await register("phone-2")
            #expect(second.status == 201)
            #expect(second.headers["ratelimit-policy"] == "\"registrations\";q=2;w=2")
            let third = try await register("phone-3")
            #expect(third.status == 429)
            #expect(third["violated-policies"] == ["registrations"])
            // The device was not created.
            h.clock.advance(by: 1)
            #expect(try await register("phone-3").status == 201)
            // Sends are not limited by it.
            let sent = try await h.call(
                "POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey,
                json: ["audience": ["device_ids": ["phone-1"]], "alert": ["title": "a", "body": "b"]])
            #expect(sent.headers["ratelimit"] == nil)
            // The app's own figure replaces the server's; null restores it.
            _ = try await limit(h, app, ["registrations_per_second": 100])
            shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
            #expect(shown["rate_limits"]?["registrations_per_second"]?.doubleValue == 100)
            #expect(shown["rate_limits"]?["registrations_burst"] == 2)
            let refused = try await limit(h, app, ["registrations_per_second": 0, "sends_burst": 0])
            #expect(refused.status == 422)
            #expect(Set(refused.errorFields) == ["rate_limits.registrations_per_second", "rate_limits.sends_burst"])
            _ = try await limit(h, app, ["registrations_per_second": .null])
            shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
            #expect(shown["rate_limits"]?["registrations_per_second"]?.doubleValue == 1)
        }
    }
}
