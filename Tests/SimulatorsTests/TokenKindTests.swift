import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: token kinds and environments")
struct TokenKindTests {
    @Test func aTokenFirstSeenAsAStartTargetIsPushToStart() throws {
        let sim = try SimulatorHarness()
        let token = SimulatorHarness.token(0x11)
        #expect(sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.tokenKind == .pushToStart)
        #expect(sim.engine.tokens().first { $0.token == token }?.origin == .firstSeen)
        // An alert to it is refused.
        expectRefusal(sim.sendAlert(to: token), 400, .deviceTokenNotForTopic)
        #expect(sim.lastRecord?.deviceOutcome == .rejected)
        #expect(sim.lastRecord?.answer.note?.hasPrefix("an alert push cannot go to") == true, "\(sim.lastRecord?.answer.note ?? "")")
    }

    @Test func aTokenFirstSeenWithAnAlertIsADeviceToken() throws {
        let sim = try SimulatorHarness()
        let token = SimulatorHarness.token(0x12)
        #expect(sim.sendAlert(to: token).status == 200)
        #expect(sim.lastRecord?.tokenKind == .device)
        #expect(sim.lastRecord?.deviceOutcome == .alertShown)
        expectRefusal(sim.send(to: token, payload: SimulatorHarness.start(timestamp: sim.now)), 400, .deviceTokenNotForTopic)
    }

    @Test func updateTokensAreMintedForAStartWithInputPushToken() throws {
        let first = try SimulatorHarness(seed: 99)
        let activity = try first.startActivity()
        let updateToken = try #require(activity.updateToken)
        #expect(updateToken.count == 64)
        #expect(PushToken.isWellFormed(updateToken))
        let registered = try #require(first.engine.tokens().first { $0.token == updateToken })
        #expect(registered.kind == .liveActivityUpdate)
        #expect(registered.origin == .minted)
        #expect(registered.activityID == activity.id)
        // The same seed mints the same token and id.
        let second = try SimulatorHarness(seed: 99)
        let again = try second.startActivity()
        #expect(again.updateToken == updateToken)
        #expect(again.id == activity.id)
        // A Live Activity update token cannot take an alert.
        expectRefusal(first.sendAlert(to: updateToken), 400, .deviceTokenNotForTopic)
    }

    @Test func withoutInputPushTokenNoUpdateTokenIsMinted() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity(payload: SimulatorHarness.start(timestamp: sim.now, inputPushToken: false))
        #expect(activity.updateToken == nil)
        #expect(sim.lastRecord?.deviceNote?.contains("input-push-token") == true)
        #expect(sim.engine.tokens().count == 1)
    }

    @Test func registeredTokensKeepTheirKind() throws {
        let sim = try SimulatorHarness()
        let device = SimulatorHarness.token(0x13)
        let starter = SimulatorHarness.token(0x14)
        try sim.engine.registerToken(device, kind: .device)
        try sim.engine.registerToken(starter, kind: .pushToStart)
        expectRefusal(sim.send(to: device, payload: SimulatorHarness.start(timestamp: sim.now)), 400, .deviceTokenNotForTopic)
        expectRefusal(sim.sendAlert(to: starter), 400, .deviceTokenNotForTopic)
        #expect(sim.send(to: starter, payload: SimulatorHarness.start(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .started)
        // Registering again with the same kind is a no-op; with another kind, refused.
        #expect(try sim.engine.registerToken(device, kind: .device).origin == .registered)
        let conflict = #expect(throws: SimulatorError.self) { try sim.engine.registerToken(device, kind: .pushToStart) }
        #expect(conflict?.code == .tokenKindConflict)
        let malformed = #expect(throws: SimulatorError.self) { try sim.engine.registerToken("xyz", kind: .device) }
        #expect(malformed?.code == .malformedToken)
    }

    @Test func aRegisteredUpdateTokenStandsForALocallyStartedActivity() throws {
        let sim = try SimulatorHarness()
        let token = SimulatorHarness.token(0x15, bytes: 80)
        let registered = try sim.engine.registerToken(token, kind: .liveActivityUpdate)
        let activityID = try #require(registered.activityID)
        let activity = try #require(sim.engine.activity(id: activityID))
        #expect(activity.origin == .local)
        #expect(activity.updateToken == token)
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .updated)
        #expect(sim.engine.activity(id: activity.id)?.contentState == ["eta": "12:40", "step": 2])
    }

    @Test func aTokenOfTheOtherEnvironmentIsBadDeviceToken() throws {
        let sim = try SimulatorHarness(environment: .sandbox)
        let token = SimulatorHarness.token(0x16)
        try sim.engine.registerToken(token, kind: .device, environment: .production)
        expectRefusal(sim.sendAlert(to: token), 400, .badDeviceToken)
        #expect(sim.lastRecord?.answer.note?.contains("production") == true)
        let production = try SimulatorHarness(environment: .production)
        try production.engine.registerToken(token, kind: .device, environment: .production)
        #expect(production.sendAlert(to: token).status == 200)
    }

    @Test func anUpdateToAnUnknownTokenIsDropped() throws {
        let sim = try SimulatorHarness()
        let token = SimulatorHarness.token(0x17)
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("no activity holds") == true)
        #expect(sim.engine.tokens().isEmpty)
    }

    @Test func theUpdateTokenOfADismissedActivityIsUnregistered() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let updateToken = try #require(activity.updateToken)
        sim.clock.advance(by: 10)
        let end = SimulatorHarness.update("end", timestamp: sim.now, extra: ["dismissal-date": .integer(sim.now)])
        #expect(sim.send(to: updateToken, payload: end).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .ended)
        let endedAt = sim.now
        sim.clock.advance(by: 5)
        let response = sim.send(to: updateToken, payload: SimulatorHarness.update(timestamp: sim.now))
        expectRefusal(response, 410, .unregistered)
        #expect(try parsedBody(response) == ["reason": "Unregistered", "timestamp": .integer(endedAt * 1000)])
        #expect(sim.lastRecord?.answer.timestamp == endedAt * 1000)
    }
}
