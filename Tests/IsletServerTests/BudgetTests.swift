import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

/// The budgets Islet keeps to for the devices, end to end through the API against a
/// simulator that keeps Apple's: priority-10 updates per copy of an activity in any
/// hour, and push-to-starts per device in any hour. Time moves on the harness's
/// clock, never by sleeping.
@Suite("Budgets: priority-10 updates and push-to-start spacing, against the simulator's own")
struct BudgetTests {
    /// Starts `activityID` on `deviceID` and registers the update token the
    /// simulated device minted; answers it.
    private static func startedCopy(
        _ h: ServerHarness, _ app: TestApp, _ deviceID: String, _ activityID: String
    ) async throws -> String {
        let started = try await h.start(app, activityID, audience: ["device_ids": [.string(deviceID)]])
        try #require(started.status == 202, "\(started.json)")
        let token = try await h.simulatedUpdateToken(activityID: activityID)
        try #require(try await h.registerUpdateToken(app, deviceID, activityID, token: token).status == 201)
        return token
    }

    /// An update without an alert at priority 10 (a quiet update goes at 5 unless
    /// it asks for 10, and only those spend the device's budget).
    private static func update(
        _ h: ServerHarness, _ app: TestApp, _ activityID: String, state: JSONValue
    ) async throws -> Reply {
        try await h.call(
            "POST", "/v1/apps/\(app.id)/activities/\(activityID)/update", key: app.serverKey,
            json: ["content_state": state, "priority": 10])
    }

    /// Sends `count` updates one after the other, each settled before the next (a
    /// queued update would be replaced by the next one); answers their pushes.
    private static func burst(
        _ h: ServerHarness, _ app: TestApp, _ activityID: String, count: Int
    ) async throws -> [JSONValue] {
        var answers: [JSONValue] = []
        for n in 1...count {
            let updated = try await Self.update(h, app, activityID, state: ["status": .string("step \(n)"), "eta": .integer(Int64(n))])
            try #require(updated.status == 202, "\(updated.json)")
            answers.append(updated.json)
            _ = try await h.settledPushes(app, activityID, count: n + 1)
        }
        let pushes = try await h.settledPushes(app, activityID, count: count + 1)
        return pushes.filter { $0["event"]?.stringValue == "update" }
    }

    /// The simulator's records of the updates that reached `token`.
    private static func simulated(_ h: ServerHarness, token: String) -> [PushRecord] {
        h.sandbox.engine.pushes().filter { $0.token == token && $0.event == "update" }
    }

    @Test func aBurstPastTheDevicesBudgetIsThrottledWithoutIsletsBudgetAndAllAppliedWithIt() async throws {
        try await ServerHarness.with(simulators: { $0.engine.priority10BudgetPerHour = 3 }) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")

            // Without Islet's budget (the app keeps priority 10 whatever happens):
            // the device holds back every priority-10 update past its own budget.
            var patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["priority_10_per_hour": 3, "policy": "keep"]])
            #expect(patched.status == 200, "\(patched.json)")
            #expect(patched["budget"]?["policy"]?.stringValue == "keep")
            let kept = try await Self.startedCopy(h, app, "phone-1", "game-1")
            let keptPushes = try await Self.burst(h, app, "game-1", count: 6)
            #expect(keptPushes.allSatisfy { $0["priority_downgraded"] == false && $0["status"]?.stringValue == "sent" })
            let keptRecords = Self.simulated(h, token: kept)
            #expect(keptRecords.map(\.deviceOutcome) == [.updated, .updated, .updated, .throttled, .throttled, .throttled])
            #expect(keptRecords.allSatisfy { $0.headers["apns-priority"] == "10" })
            #expect(keptRecords.last?.deviceNote?.contains("priority-10 budget spent") == true)
            _ = try await h.call("POST", "/v1/apps/\(app.id)/activities/game-1/end", key: app.serverKey, json: [:])

            // With it: the same burst, every update applied, the late ones at 5.
            patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["budget": ["policy": "downgrade"]])
            #expect(patched["budget"]?["priority_10_per_hour"]?.int64Value == 3)
            let managed = try await Self.startedCopy(h, app, "phone-1", "game-2")
            var shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/game-2", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["priority_10_budget"] == ["per_hour": 3, "remaining": 3])
            let managedPushes = try await Self.burst(h, app, "game-2", count: 6)
            #expect(managedPushes.map { $0["priority_downgraded"]?.boolValue } == [false, false, false, true, true, true])
            let managedRecords = Self.simulated(h, token: managed)
            #expect(managedRecords.map(\.deviceOutcome) == Array(repeating: .updated, count: 6))
            #expect(managedRecords.map { $0.headers["apns-priority"] } == ["10", "10", "10", "5", "5", "5"])
            #expect(h.sandbox.engine.activities().last?.contentState == ["status": "step 6", "eta": 6])
            shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/game-2", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["priority_10_budget"] == ["per_hour": 3, "remaining": 0])

            // The update's answer counts them, and /metrics by app.
            let late = try await Self.update(h, app, "game-2", state: ["status": "step 7", "eta": 7])
            #expect(late["priority_downgraded"]?.int64Value == 1)
            _ = try await h.settledPushes(app, "game-2", count: 8)
            let metrics = try await h.call("GET", "/metrics", key: nil)
            let line = "islet_priority_downgrades_total{node=\"\(h.nodeID)\",app=\"\(app.id)\"} 4"
            #expect(metrics.json.stringValue?.contains(line) == true, "\(metrics.json.stringValue ?? "")")

            // An update with an alert is never downgraded, and counts.
            let alerted = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/game-2/update", key: app.serverKey,
                json: ["content_state": ["status": "goal", "eta": 8], "alert": ["title": "Goal", "body": "1-0"]])
            #expect(alerted["priority_downgraded"]?.int64Value == 0)
            let all = try await h.settledPushes(app, "game-2", count: 9)
            #expect(all.last?["priority_downgraded"] == false)

            // An hour after the first three, the copy has its budget back.
            h.clock.advance(by: 3600)
            shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/game-2", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["priority_10_budget"] == ["per_hour": 3, "remaining": 3])
            let fresh = try await Self.update(h, app, "game-2", state: ["status": "second half", "eta": 9])
            #expect(fresh["priority_downgraded"]?.int64Value == 0)
            let after = try await h.settledPushes(app, "game-2", count: 10)
            #expect(after.last?["priority_downgraded"] == false)
            #expect(Self.simulated(h, token: managed).last?.deviceOutcome == .updated)
        }
    }

    @Test func aDeviceThatAllowedFrequentUpdatesGetsTheLargerBudget() async throws {
        try await ServerHarness.with(simulators: {
            $0.engine.priority10BudgetPerHour = 1
            $0.engine.frequentPriority10BudgetPerHour = 3
        }) { h in
            let app = try await h.createApp()
            let patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["priority_10_per_hour": 1, "frequent_priority_10_per_hour": 3]])
            #expect(patched.status == 200, "\(patched.json)")
            let startToken = try await h.registerStartable(app, "phone-1")
            // The device says the user allowed frequent updates; the simulated
            // device knows it from its push-to-start token.
            let device = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox", "frequent_updates": true],
                headers: h.secretHeader(app, "phone-1"))
            #expect(device["frequent_updates"] == true)
            _ = try h.sandbox.engine.registerToken(startToken, kind: .pushToStart, frequentUpdates: true)
            let token = try await Self.startedCopy(h, app, "phone-1", "game-1")
            let pushes = try await Self.burst(h, app, "game-1", count: 4)
            #expect(pushes.map { $0["priority_downgraded"]?.boolValue } == [false, false, false, true])
            #expect(Self.simulated(h, token: token).map(\.deviceOutcome) == Array(repeating: .updated, count: 4))

            // Absent keeps what the device said; null forgets it.
            var again = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox"], headers: h.secretHeader(app, "phone-1"))
            #expect(again["frequent_updates"] == true)
            again = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1", key: app.deviceKey,
                json: ["platform": "ios", "environment": "sandbox", "frequent_updates": .null],
                headers: h.secretHeader(app, "phone-1"))
            #expect(again["frequent_updates"] == .null)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/game-1", key: app.serverKey)
            #expect(shown["devices"]?.arrayValue?.first?["priority_10_budget"] == ["per_hour": 1, "remaining": 0])
        }
    }

    @Test func theAppsBudgetIsCheckedAndNullTakesTheServersFigureAgain() async throws {
        try await ServerHarness.with(configure: { $0.priority10PerHour = 20 }) { h in
            let app = try await h.createApp()
            var shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
            #expect(shown["budget"] == [
                "priority_10_per_hour": 20, "frequent_priority_10_per_hour": 60, "policy": "downgrade",
                "starts_per_device_per_hour": 10,
            ])
            #expect(shown["rate_limits"] == [
                "sends_per_second": .null, "sends_burst": .null, "registrations_per_second": .null,
                "registrations_burst": .null,
            ])
            let refused = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["priority_10_per_hour": 0, "policy": "sometimes"]])
            #expect(refused.status == 422)
            let fields = refused["errors"]?.arrayValue?.compactMap { $0["field"]?.stringValue } ?? []
            #expect(Set(fields) == ["budget.priority_10_per_hour", "budget.policy"], "\(refused.json)")

            var patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["priority_10_per_hour": 5, "starts_per_device_per_hour": 2]])
            #expect(patched["budget"]?["priority_10_per_hour"]?.int64Value == 5)
            #expect(patched["budget"]?["starts_per_device_per_hour"]?.int64Value == 2)
            // A figure left out is kept; null takes the server's again.
            patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["priority_10_per_hour": .null]])
            #expect(patched["budget"]?["priority_10_per_hour"]?.int64Value == 20)
            #expect(patched["budget"]?["starts_per_device_per_hour"]?.int64Value == 2)
            patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["budget": .null])
            #expect(patched["budget"]?["starts_per_device_per_hour"]?.int64Value == 10)
            shown = try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)
            #expect(shown["budget"] == patched["budget"])
        }
    }

    @Test func startsPastTheDevicesHourWaitInsteadOfBeingRefusedByTheDevice() async throws {
        try await ServerHarness.with(simulators: { $0.engine.startBudgetPerHour = 2 }) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1")

            // Without spacing, the device refuses the third start of the hour.
            var patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["starts_per_device_per_hour": 100]])
            #expect(patched.status == 200)
            for n in 1...3 {
                let started = try await h.start(app, "unspaced-\(n)", audience: ["device_ids": ["phone-1"]])
                #expect(started["deferred"]?.int64Value == 0)
                _ = try await h.settledPushes(app, "unspaced-\(n)", count: 1)
            }
            let starts = h.sandbox.engine.pushes().filter { $0.event == "start" }
            #expect(starts.map(\.deviceOutcome) == [.started, .started, .throttled])
            #expect(starts.last?.deviceNote?.contains("Push-to-start budget exceeded") == true)

            // An hour later, with Islet spacing the starts at two an hour: the third
            // waits, and goes when the first is an hour old.
            h.clock.advance(by: 3600)
            patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken,
                json: ["budget": ["starts_per_device_per_hour": 2]])
            let firstAt = h.clock.now()
            for n in 1...2 {
                let started = try await h.start(app, "spaced-\(n)", audience: ["device_ids": ["phone-1"]])
                #expect(started["deferred"]?.int64Value == 0)
                _ = try await h.settledPushes(app, "spaced-\(n)", count: 1)
                h.clock.advance(by: 60)
            }
            let third = try await h.start(app, "spaced-3", audience: ["device_ids": ["phone-1"]])
            #expect(third.status == 202)
            #expect(third["targets"]?.int64Value == 1)
            #expect(third["deferred"]?.int64Value == 1)
            var pushes = try await h.call("GET", "/v1/apps/\(app.id)/activities/spaced-3/pushes", key: app.serverKey)
            let waiting = try #require(pushes["items"]?.arrayValue?.first)
            #expect(waiting["status"]?.stringValue == "deferred")
            let goesAt = try #require(waiting["deferred_until"]?.stringValue.flatMap(SchemaCheck.parseDate))
            #expect(abs(goesAt.timeIntervalSince(firstAt.addingTimeInterval(3600))) < 0.01)

            // A fourth start of another activity waits for the second one's hour.
            let fourth = try await h.start(app, "spaced-4", audience: ["device_ids": ["phone-1"]])
            #expect(fourth["deferred"]?.int64Value == 1)
            // Ended meanwhile, it never goes.
            _ = try await h.call("POST", "/v1/apps/\(app.id)/activities/spaced-4/end", key: app.serverKey, json: [:])

            h.clock.advance(by: 3600 - 120 - 1)
            pushes = try await h.call("GET", "/v1/apps/\(app.id)/activities/spaced-3/pushes", key: app.serverKey)
            #expect(pushes["items"]?.arrayValue?.first?["status"]?.stringValue == "deferred")
            h.clock.advance(by: 1)
            let sent = try await h.settledPushes(app, "spaced-3", count: 1)
            #expect(sent.first?["status"]?.stringValue == "sent")
            let spaced = h.sandbox.engine.pushes().filter { $0.event == "start" }.suffix(3)
            #expect(spaced.map(\.deviceOutcome) == [.started, .started, .started])
            h.clock.advance(by: 3600)
            let dropped = try await h.settledPushes(app, "spaced-4", count: 1)
            #expect(dropped.first?["status"]?.stringValue == "dropped")
            #expect(dropped.first?["reason"]?.stringValue == "ActivityEnded")
            #expect(h.sandbox.engine.pushes().filter { $0.event == "start" }.count == 6)

            let metrics = try await h.call("GET", "/metrics", key: nil)
            let line = "islet_starts_deferred_total{node=\"\(h.nodeID)\",app=\"\(app.id)\"} 2"
            #expect(metrics.json.stringValue?.contains(line) == true)
        }
    }
}
