import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: broadcasts to the activities subscribed to a channel")
struct BroadcastTests {
    static let broadcastPath = "/4/broadcasts/apps/com.example.app"

    /// A channel of `policy`; answers its id.
    private func channel(_ sim: SimulatorHarness, policy: Int = 0) throws -> String {
        let created = sim.manage(
            "POST", "/1/apps/com.example.app/channels",
            body: ["message-storage-policy": .integer(Int64(policy)), "push-type": "LiveActivity"])
        return try #require(created.header("apns-channel-id"))
    }

    /// Broadcasts `payload` on `channelID`; `headers` replace the defaults.
    @discardableResult
    private func broadcast(
        _ sim: SimulatorHarness, _ channelID: String?, payload: JSONValue? = nil, body: Data? = nil,
        headers: [String: String?] = [:]
    ) -> SimulatorResponse {
        var all: [String: String?] = [
            "apns-channel-id": channelID, "apns-expiration": "0", "apns-topic": nil,
        ]
        for (name, value) in headers { all[name] = value }
        return sim.send(
            to: "", payload: payload ?? SimulatorHarness.update(timestamp: sim.now + 1, contentState: ["step": 9]), body: body,
            headers: all, path: Self.broadcastPath)
    }

    @Test func aBroadcastReachesEverySubscriberOnceAndEndsThem() throws {
        let sim = try SimulatorHarness()
        let id = try channel(sim)
        // One activity started by a push-to-start on the channel, one by the app.
        let started = try sim.startActivity(
            payload: SimulatorHarness.start(timestamp: sim.now, inputPushToken: false, extra: ["input-push-channel": .string(id)]))
        #expect(started.channelID == id)
        #expect(started.updateToken == nil)
        let local = try sim.engine.subscribe(channelID: id, token: "device-2")
        #expect(local.channelID == id && local.subscriber == "device-2")
        // A third activity on a token is not on the channel.
        let other = try sim.startActivity(pushToStartToken: SimulatorHarness.token(0x52))

        let answer = broadcast(sim, id, headers: ["apns-request-id": "0b6d3c1e-2f4a-4b5c-8d9e-1a2b3c4d5e6f"])
        #expect(answer.status == 200)
        #expect(answer.body.isEmpty)
        #expect(answer.header("apns-request-id") == "0b6d3c1e-2f4a-4b5c-8d9e-1a2b3c4d5e6f")
        #expect(answer.header("apns-unique-id").map(APNsMessageID.isUUID) == true)
        let record = try #require(sim.lastRecord)
        #expect(record.deviceOutcome == .broadcast)
        #expect(record.deliveries?.map(\.activityID) == [started.id, local.id])
        #expect(record.deliveries?.map(\.outcome) == [.updated, .updated])
        #expect(record.deviceNote == "2 subscriber(s): 2 updated")
        #expect(sim.engine.activity(id: started.id)?.contentState == ["step": 9])
        #expect(sim.engine.activity(id: local.id)?.contentState == ["step": 9])
        #expect(sim.engine.activity(id: other.id)?.contentState != ["step": 9])

        // The same timestamp again is dropped by each, as a token push would be.
        broadcast(sim, id, payload: SimulatorHarness.update(timestamp: sim.now + 1, contentState: ["step": 10]))
        #expect(sim.lastRecord?.deliveries?.map(\.outcome) == [.dropped, .dropped])
        // A payload over a token push's 4,096 bytes but within 5,120 goes.
        let large = SimulatorHarness.update(timestamp: sim.now + 2, contentState: ["text": .string(String(repeating: "x", count: 4_500))])
        #expect(broadcast(sim, id, payload: large).status == 200)
        // An end ends them; a start cannot start anything.
        broadcast(sim, id, payload: SimulatorHarness.update("end", timestamp: sim.now + 3, contentState: ["step": 11]))
        #expect(sim.lastRecord?.deliveries?.map(\.outcome) == [.ended, .ended])
        broadcast(sim, id, payload: SimulatorHarness.start(timestamp: sim.now + 4))
        #expect(sim.lastRecord?.deviceNote == "the channel has no subscriber" || sim.lastRecord?.deliveries?.allSatisfy { $0.outcome == .dropped } == true)
    }

    @Test func eachRefusalIsApplesReason() throws {
        let sim = try SimulatorHarness()
        let id = try channel(sim)
        #expect(broadcast(sim, nil).reason == .missingChannelId)
        #expect(broadcast(sim, "%%%").reason == .badChannelId)
        #expect(broadcast(sim, "c29tZUNoYW5uZWw=").reason == .channelNotRegistered)
        #expect(broadcast(sim, id, headers: ["apns-push-type": nil]).reason == .missingPushType)
        #expect(broadcast(sim, id, headers: ["apns-push-type": "alert"]).reason == .invalidPushType)
        #expect(broadcast(sim, id, headers: ["apns-priority": nil]).reason == .badPriority)
        #expect(broadcast(sim, id, headers: ["apns-expiration": nil]).reason == .badExpirationDate)
        // A channel that stores no message takes only expiration 0.
        #expect(broadcast(sim, id, headers: ["apns-expiration": String(sim.now + 60)]).reason == .badExpirationDate)
        let tooLarge = broadcast(sim, id, body: Data(repeating: 0x20, count: 5_121))
        #expect(tooLarge.status == 413)
        #expect(tooLarge.reason == .payloadTooLarge)
        #expect(broadcast(sim, id, body: Data("[]".utf8)).reason == .payloadEmpty)
        let wrongApp = sim.send(to: "", headers: ["apns-channel-id": id, "apns-expiration": "0"], path: "/4/broadcasts/apps/com.example.other")
        #expect(wrongApp.reason == .channelNotRegistered)
        #expect(sim.send(to: "", headers: ["apns-channel-id": id], method: "GET", path: Self.broadcastPath).reason == .methodNotAllowed)
        // A refused broadcast reaches nobody.
        #expect(sim.lastRecord?.deviceOutcome == .rejected)
    }

    @Test func aStartOnAChannelThatDoesNotExistFailsOnTheDevice() throws {
        let sim = try SimulatorHarness()
        let response = sim.send(
            to: SimulatorHarness.token(0x53),
            payload: SimulatorHarness.start(timestamp: sim.now, inputPushToken: false, extra: ["input-push-channel": "c29tZUNoYW5uZWw="]))
        #expect(response.status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("is not a channel of this app: the Live Activity fails to start") == true)
        #expect(sim.engine.activities().isEmpty)
        #expect(throws: SimulatorError.self) { try sim.engine.subscribe(channelID: "c29tZUNoYW5uZWw=", token: "device-1") }
    }

    @Test func aChannelThatStoresItsMostRecentMessageGivesItToALateSubscriber() throws {
        let sim = try SimulatorHarness()
        let id = try channel(sim, policy: 1)
        let expiration = String(sim.now + 600)
        #expect(broadcast(sim, id, headers: ["apns-expiration": expiration]).status == 200)
        #expect(sim.lastRecord?.deviceNote == "the channel has no subscriber")
        let late = try sim.engine.subscribe(channelID: id, token: "device-1")
        #expect(late.contentState == ["step": 9])
        // Once it expires, a new subscriber gets nothing.
        sim.clock.advance(by: 601)
        #expect(try sim.engine.subscribe(channelID: id, token: "device-2").contentState == nil)
        // A deleted channel keeps nothing.
        #expect(sim.manage("DELETE", "/1/apps/com.example.app/channels", headers: [("apns-channel-id", id)]).status == 204)
        #expect(broadcast(sim, id).reason == .channelNotRegistered)
    }
}
