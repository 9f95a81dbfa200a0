import Foundation
import IsletCore
import IsletTesting
import Storage
import Testing

/// 1e-320, a subnormal number, read from text: a literal of it warns that it loses
/// precision.
private let subnormal = Double("1e-320")!

/// The bounds of each rate-limit and budget figure through the API: a figure past
/// either end is a 422 naming it and giving the bounds, the bounds themselves are
/// taken, and whatever was accepted (or stored out of bounds, bypassing the API)
/// the server goes on answering device requests and sends.
@Suite("Limits: the bounds of every figure, and no figure stops the server")
struct LimitBoundsTests {
    /// Rates outside `RateLimit.perSecondRange`.
    static let ratesOutside: [JSONValue] = [
        0, .double(-0.0), .double(1e-12), .double(subnormal), .double(.leastNonzeroMagnitude), -1,
        .double((1.0 / 3_600).nextDown), .double(1_000_000.0.nextUp), .double(1e300),
        .double(.greatestFiniteMagnitude), .integer(.max), .integer(.min), "1",
    ]
    /// Whole numbers outside a range from 1 to `upper`, and numbers that are not whole.
    static func countsOutside(upper: Int64) -> [JSONValue] {
        [
            0, -1, .integer(upper + 1), .integer(.max), .integer(.min), .double(1e300), .double(.leastNonzeroMagnitude),
            .double(-0.0), 1.5,
        ]
    }

    private func patch(_ h: ServerHarness, _ app: TestApp, _ body: JSONValue) async throws -> Reply {
        try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: body)
    }

    /// A device request and a send, answered (admitted or limited, never a failure).
    private func expectAnswering(_ h: ServerHarness, _ app: TestApp, _ context: String) async throws {
        let device = try await h.call(
            "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
            json: ["platform": "ios", "environment": "sandbox"], headers: h.secretHeader(app, "phone-1"))
        #expect([200, 201, 429].contains(device.status), "\(context): \(device.json)")
        if let secret = device["device_secret"]?.stringValue { h.deviceSecrets[app, "phone-1"] = secret }
        let update = try await h.update(app, "order-1", state: ["status": "on its way"])
        #expect([202, 404, 429].contains(update.status), "\(context): \(update.json)")
        let health = try await h.call("GET", "/healthz", key: nil)
        #expect(health.status == 200, "\(context)")
    }

    /// Checks that `reply` refuses `field` alone, giving `bounds` in its message.
    private func expectRefused(_ reply: Reply, _ field: String, bounds: [String], _ context: String) {
        #expect(reply.status == 422, "\(context): \(reply.json)")
        #expect(reply.headers["content-type"] == "application/problem+json", "\(context)")
        #expect(reply.errorFields == [field], "\(context): \(reply.json)")
        let message = reply["errors"]?.arrayValue?.first?["message"]?.stringValue ?? ""
        for bound in bounds { #expect(message.contains(bound), "\(context): \(message)") }
    }

    @Test func aRateOrBurstOutsideItsRangeIs422NamingItAndTheBoundsAreTaken() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for family in ["sends", "registrations"] {
                let rate = "\(family)_per_second"
                for value in Self.ratesOutside {
                    let reply = try await patch(h, app, ["rate_limits": [rate: value]])
                    expectRefused(reply, "rate_limits.\(rate)", bounds: ["0.0002777777777777778", "1000000"], "\(rate) \(value)")
                }
                let burst = "\(family)_burst"
                for value in Self.countsOutside(upper: 10_000_000) {
                    let reply = try await patch(h, app, ["rate_limits": [burst: value]])
                    expectRefused(reply, "rate_limits.\(burst)", bounds: ["1", "10000000"], "\(burst) \(value)")
                }
                // Nothing refused was kept.
                let shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
                #expect(shown["rate_limits"]?[rate] == .null && shown["rate_limits"]?[burst] == .null)
                // The bounds are taken, in every pairing, and the server answers under each.
                for (perSecond, size) in [(1.0 / 3_600, 1), (1.0 / 3_600, 10_000_000), (1_000_000, 1), (1_000_000, 10_000_000)] {
                    let accepted = try await patch(h, app, ["rate_limits": [rate: .double(perSecond), burst: .integer(Int64(size))]])
                    #expect(accepted.status == 200, "\(perSecond) \(size): \(accepted.json)")
                    #expect(accepted["rate_limits"]?[rate]?.doubleValue == perSecond)
                    #expect(accepted["rate_limits"]?[burst]?.int64Value == Int64(size))
                    try await expectAnswering(h, app, "\(rate) \(perSecond), \(burst) \(size)")
                }
                _ = try await patch(h, app, ["rate_limits": .null])
            }
            // Creating an app takes no limits at all.
            let created = try await h.call(
                "POST", "/v1/apps", key: ServerHarness.adminToken,
                json: [
                    "name": "Other", "bundle_id": "com.example.other", "rate_limits": ["sends_per_second": .double(subnormal)],
                ])
            #expect(created.status == 422 && created.errorFields == ["rate_limits"], "\(created.json)")
        }
    }

    @Test func aBudgetFigureOutsideItsRangeIs422NamingItAndTheBoundsAreTaken() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            for figure in ["priority_10_per_hour", "frequent_priority_10_per_hour", "starts_per_device_per_hour"] {
                for value in Self.countsOutside(upper: 100_000) {
                    let reply = try await patch(h, app, ["budget": [figure: value]])
                    expectRefused(reply, "budget.\(figure)", bounds: ["1", "100000"], "\(figure) \(value)")
                }
                for value in [1, 100_000] {
                    let accepted = try await patch(h, app, ["budget": [figure: .integer(Int64(value))]])
                    #expect(accepted.status == 200 && accepted["budget"]?[figure]?.int64Value == Int64(value), "\(accepted.json)")
                    try await expectAnswering(h, app, "\(figure) \(value)")
                }
            }
        }
    }

    /// The two cases: the slowest rate for the device routes, and the
    /// slowest with the largest burst for sends, each then used at once.
    @Test func theSlowestRatesAnswerDeviceRequestsAndSendsWithTheirFields() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")
            _ = try await patch(h, app, ["rate_limits": ["registrations_per_second": .double(1.0 / 3_600)]])
            func register(_ device: String) async throws -> Reply {
                try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/\(device)", key: app.deviceKey,
                    json: ["platform": "ios", "environment": "sandbox"])
            }
            // One second's worth of a rate of one an hour is a burst of one.
            let first = try await register("phone-2")
            #expect(first.status == 201, "\(first.json)")
            #expect(first.headers["ratelimit-policy"] == "\"registrations\";q=1;w=3600")
            #expect(first.headers["ratelimit"] == "\"registrations\";r=0;t=3600")
            let second = try await register("phone-3")
            #expect(second.status == 429, "\(second.json)")
            #expect(second.headers["retry-after"] == "3600")

            _ = try await patch(h, app, ["rate_limits": ["sends_per_second": .double(1.0 / 3_600), "sends_burst": 10_000_000]])
            let started = try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]])
            #expect(started.status == 202, "\(started.json)")
            #expect(started.headers["ratelimit-policy"] == "\"sends\";q=10000000;w=36000000000")
            let updated = try await h.update(app, "order-1", state: ["status": "on its way"])
            #expect(updated.status == 202, "\(updated.json)")
        }
    }

    /// Figures written straight into the store, out of every bound (as an older
    /// version, or a hand, may have left them): each request answers, under the
    /// nearest figures the bounds hold.
    @Test func figuresStoredOutOfBoundsAreHeldToTheBoundsAndNeverStopTheServer() async throws {
        let stored: [(RateLimitOverrides, BudgetOverrides)] = [
            (
                RateLimitOverrides(
                    sendsPerSecond: subnormal, sendsBurst: .max, registrationsPerSecond: .leastNonzeroMagnitude,
                    registrationsBurst: 0),
                BudgetOverrides(priority10PerHour: .min, frequentPriority10PerHour: .max, startsPerDevicePerHour: 0)
            ),
            (
                RateLimitOverrides(sendsPerSecond: 1e-12, sendsBurst: 10_000_000, registrationsPerSecond: 1e300),
                BudgetOverrides(priority10PerHour: -1, frequentPriority10PerHour: 0, startsPerDevicePerHour: .max)
            ),
            (
                RateLimitOverrides(
                    sendsPerSecond: .greatestFiniteMagnitude, sendsBurst: .min, registrationsPerSecond: -0.0,
                    registrationsBurst: .max),
                BudgetOverrides(priority10PerHour: .max)
            ),
        ]
        try await ServerHarness.with { h in
            for (index, (limits, budget)) in stored.enumerated() {
                let app = try await h.createApp(name: "Stored \(index)")
                // Before the app's keys are first used: nothing cached holds the old figures.
                try h.application.services.store.writeNow { session in
                    var record = try #require(try session.app(id: app.id))
                    record.rateLimits = limits
                    record.budget = budget
                    try session.updateAppSettings(record)
                }
                let shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
                #expect(shown.status == 200, "\(shown.json)")
                for family in ["sends", "registrations"] {
                    if let rate = shown["rate_limits"]?["\(family)_per_second"]?.doubleValue {
                        #expect(RateLimit.perSecondRange.contains(rate), "\(shown.json)")
                        let burst = shown["rate_limits"]?["\(family)_burst"]?.int64Value.map(Int.init)
                        #expect(burst.map(RateLimit.burstRange.contains) == true, "\(shown.json)")
                    }
                }
                for figure in ["priority_10_per_hour", "frequent_priority_10_per_hour", "starts_per_device_per_hour"] {
                    let value = shown["budget"]?[figure]?.int64Value.map(Int.init)
                    #expect(value.map(SendBudget.range.contains) == true, "\(shown.json)")
                }
                try await expectAnswering(h, app, "stored \(index)")
                let device = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/phone-1/push-to-start/DeliveryAttributes", key: app.deviceKey,
                    json: ["token": .string(ServerHarness.token())], headers: h.secretHeader(app, "phone-1"))
                #expect([200, 201, 429].contains(device.status), "\(device.json)")
                let started = try await h.start(app, "order-\(index)", audience: ["device_ids": ["phone-1"]])
                #expect([202, 422, 429].contains(started.status), "\(started.json)")
                // A change through the API still works, and the server answers after it.
                let fixed = try await patch(h, app, ["rate_limits": .null, "budget": .null])
                #expect(fixed.status == 200, "\(fixed.json)")
                try await expectAnswering(h, app, "stored \(index), then restored")
            }
        }
    }

    /// A shared bucket (PostgreSQL) stored in any state, written straight into the
    /// store: the next request answers.
    @Test func aBucketStoredInAnyStateNeverStopsTheServer() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            _ = try await patch(h, app, ["rate_limits": ["registrations_per_second": 2, "registrations_burst": 4]])
            let states: [(Double, Date)] = [
                (-.greatestFiniteMagnitude, Date(timeIntervalSince1970: 1e300)),
                (.greatestFiniteMagnitude, Date(timeIntervalSince1970: -1e300)),
                (1e300, Date(timeIntervalSince1970: 0)), (-subnormal, h.clock.now()), (.leastNonzeroMagnitude, .distantFuture),
            ]
            for (index, (tokens, updatedAt)) in states.enumerated() {
                try h.application.services.store.writeNow { session in
                    try session.saveRateBucket(appID: app.id, family: "registrations", tokens: tokens, updatedAt: updatedAt)
                }
                h.clock.advance(by: 2)
                let device = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/phone-\(index)", key: app.deviceKey,
                    json: ["platform": "ios", "environment": "sandbox"])
                #expect([201, 429].contains(device.status), "\(tokens) at \(updatedAt): \(device.json)")
            }
        }
    }
}
