import Foundation
import IsletCore
import IsletSync
import Simulators
import Testing

@Suite("Simulator: answers and inspection")
struct InspectionTests {
    let token = SimulatorHarness.token(0x41)

    @Test func sandboxAnswersCarryAUniqueID() throws {
        let sandbox = try SimulatorHarness(environment: .sandbox)
        let accepted = sandbox.sendAlert(to: token)
        #expect(accepted.status == 200)
        #expect(accepted.body.isEmpty)
        #expect(accepted.header("apns-unique-id").map(APNsMessageID.isCanonical) == true)
        #expect(accepted.header("apns-unique-id") != accepted.header("apns-id"))
        #expect(accepted.header("content-type") == nil)
        let production = try SimulatorHarness(environment: .production)
        let answer = production.sendAlert(to: token)
        #expect(answer.status == 200)
        #expect(answer.header("apns-unique-id") == nil)
        #expect(answer.header("apns-id") != nil)
    }

    @Test func recordsHoldTheWholeExchange() throws {
        let sim = try SimulatorHarness()
        let id = "0d8e7f6a-1b2c-4d3e-8f9a-0b1c2d3e4f5a"
        let payload = SimulatorHarness.start(timestamp: sim.now, alert: nil)
        let response = sim.send(to: token, payload: payload, headers: ["apns-id": id])
        let record = try #require(sim.engine.pushes().first)
        #expect(record.sequence == response.sequence)
        #expect(record.sequence == 1)
        #expect(record.receivedAt == sim.clock.now())
        #expect(record.connection == ConnectionID(1))
        #expect(record.method == "POST")
        #expect(record.path == "/3/device/\(token)")
        #expect(record.token == token)
        #expect(record.pushType == "liveactivity")
        #expect(record.event == "start")
        #expect(record.payload == payload)
        #expect(record.payloadBytes == payload.jsonText.utf8.count)
        #expect(record.headers["apns-topic"] == SimulatorHarness.liveActivityTopic)
        #expect(record.headers["apns-id"] == id)
        #expect(record.answer.status == 200)
        #expect(record.answer.reason == nil)
        #expect(record.answer.apnsID == id)
        #expect(record.deviceOutcome == .dropped)
        #expect(record.deviceNote == "start without alert: the device never shows it")
        // The provider token is never kept whole.
        let authorization = try #require(record.headers["authorization"])
        #expect(authorization.hasPrefix("bearer "))
        #expect(!authorization.contains(sim.providerToken))
    }

    @Test func recordsEncodeAsSnakeCaseJSON() throws {
        let sim = try SimulatorHarness()
        _ = try sim.startActivity(pushToStartToken: token)
        sim.clock.advance(by: 1)
        let refused = sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now), headers: ["apns-priority": "7"])
        #expect(refused.status == 400)

        let encoded = try JSONEncoder().encode(sim.engine.pushes())
        let json = try JSONValue(parsing: encoded)
        let records = try #require(json.arrayValue)
        #expect(records.count == 2)
        let started = records[0]
        #expect(started["sequence"] == 1)
        #expect(started["received_at"] == "2027-01-15T08:00:00.000Z")
        #expect(started["device_outcome"] == "started")
        #expect(started["token_kind"] == "push_to_start")
        #expect(started["push_type"] == "liveactivity")
        #expect(started["payload_bytes"]?.int64Value.map { $0 > 0 } == true)
        #expect(started["injected_fault"] == false)
        #expect(started["activity_id"]?.stringValue != nil)
        #expect(started["payload"]?["aps"]?["event"] == "start")
        #expect(started["answer"]?["status"] == 200)
        #expect(started["answer"]?["apns_id"]?.stringValue.map(APNsMessageID.isCanonical) == true)
        #expect(started["answer"]?["apns_unique_id"] != nil)
        let rejected = records[1]
        #expect(rejected["answer"]?["reason"] == "BadPriority")
        #expect(rejected["answer"]?["note"] == "apns-priority must be 1, 5 or 10, not \"7\"")
        #expect(rejected["device_outcome"] == "rejected")
        #expect(rejected["received_at"] == "2027-01-15T08:00:01.000Z")

        let decoded = try JSONDecoder().decode([PushRecord].self, from: encoded)
        #expect(decoded == sim.engine.pushes())
    }

    @Test func activitiesAndTokensEncodeAsSnakeCaseJSON() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity(payload: SimulatorHarness.start(
            timestamp: sim.now, extra: ["stale-date": .integer(sim.now + 60), "relevance-score": 1]))
        let json = try JSONValue(parsing: try JSONEncoder().encode(sim.engine.activities()))
        let first = try #require(json.arrayValue?.first)
        #expect(first["id"] == .string(activity.id))
        #expect(first["attributes_type"] == "DeliveryAttributes")
        #expect(first["attributes"] == ["orderID": "A-1"])
        #expect(first["content_state"] == ["eta": "12:30", "step": 1])
        #expect(first["status"] == "active")
        #expect(first["origin"] == "push_to_start")
        #expect(first["stale_date"] == "2027-01-15T08:01:00.000Z")
        #expect(first["started_at"] == "2027-01-15T08:00:00.000Z")
        #expect(first["relevance_score"]?.doubleValue == 1)
        #expect(first["last_timestamp"] == .integer(sim.now))
        #expect(first["update_token"] == activity.updateToken.map(JSONValue.string))
        #expect(first["update_count"] == 0)
        #expect(first["ended_at"] == nil)
        let decoded = try JSONDecoder().decode([SimulatedActivity].self, from: try JSONEncoder().encode(sim.engine.activities()))
        #expect(decoded == sim.engine.activities())

        let tokens = try JSONValue(parsing: try JSONEncoder().encode(sim.engine.tokens()))
        let kinds = Set(try #require(tokens.arrayValue).compactMap { $0["kind"]?.stringValue })
        #expect(kinds == ["push_to_start", "live_activity_update"])
        let minted = try #require(tokens.arrayValue?.first { $0["origin"] == "minted" })
        #expect(minted["activity_id"] == .string(activity.id))
        #expect(minted["registered_at"] == "2027-01-15T08:00:00.000Z")
        #expect(minted["environment"] == "sandbox")
    }

    @Test func summaryLinesAreReadable() throws {
        let sim = try SimulatorHarness()
        sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now, alert: nil))
        let dropped = try #require(sim.lastRecord).summaryLine
        #expect(dropped == "#1 200 liveactivity/start 414141…(64) → dropped: start without alert: the device never shows it")
        expectRefusal(sim.sendAlert(to: token), 400, .deviceTokenNotForTopic)
        let refused = try #require(sim.lastRecord).summaryLine
        #expect(refused.hasPrefix("#2 400 DeviceTokenNotForTopic alert 414141…(64) → rejected: "))
        #expect(!refused.contains(token))
        let activity = try sim.startActivity()
        let started = try #require(sim.lastRecord).summaryLine
        #expect(started.contains("→ started [activity \(activity.id.prefix(8))]"))
    }

    @Test func resetForgetsEverything() throws {
        let sim = try SimulatorHarness()
        _ = try sim.startActivity()
        sim.sendAlert(to: token)
        sim.engine.reset()
        #expect(sim.engine.pushes().isEmpty)
        #expect(sim.engine.activities().isEmpty)
        #expect(sim.engine.tokens().isEmpty)
        #expect(sim.engine.isAuthenticated(ConnectionID(1)))
        // A fresh provider token is welcome on the same connection right away,
        // though the old one was first used only a minute ago.
        sim.clock.advance(by: 60)
        let response = sim.send(to: token, pushType: "alert", topic: SimulatorHarness.appTopic, providerToken: try sim.freshToken())
        #expect(response.status == 200)
        #expect(response.sequence == 1)
    }

    @Test func historyKeepsTheNewestRecords() throws {
        let sim = try SimulatorHarness(pushHistoryLimit: 3)
        for _ in 0..<5 { sim.sendAlert(to: token) }
        #expect(sim.engine.pushes().map(\.sequence) == [3, 4, 5])
        #expect(sim.engine.pushes(after: 4).map(\.sequence) == [5])
        #expect(sim.engine.pushes(after: 5).isEmpty)
    }

    @Test func theObserverSeesEveryPush() throws {
        let seen = Lock<[Int]>([])
        let sim = try SimulatorHarness(observer: { record in seen.withLock { $0.append(record.sequence) } })
        sim.sendAlert(to: token)
        sim.send(to: token, method: "GET")
        #expect(seen.withLock { $0 } == [1, 2])
    }

    @Test func concurrentRequestsAreAllRecorded() async throws {
        let sim = try SimulatorHarness()
        await withTaskGroup(of: Void.self) { group in
            for connection in 1...8 {
                group.addTask {
                    for index in 0..<25 {
                        sim.send(to: SimulatorHarness.token(UInt8(index)), pushType: "alert", topic: SimulatorHarness.appTopic,
                                 connection: UInt64(connection))
                    }
                }
            }
        }
        let records = sim.engine.pushes()
        #expect(records.count == 200)
        #expect(Set(records.map(\.sequence)) == Set(1...200))
        #expect(records.allSatisfy { $0.answer.status == 200 })
        #expect(sim.engine.tokens().count == 25)
    }
}
