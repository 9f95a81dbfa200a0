import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: ActivityKit on the device")
struct ActivityKitTests {
    let starter = SimulatorHarness.token(0x21)

    /// Sends `payload` to the push-to-start token and expects APNs to accept it and
    /// the device to drop it with a note containing `note`.
    func expectDroppedStart(_ sim: SimulatorHarness, _ payload: JSONValue, note: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let response = sim.send(to: starter, payload: payload)
        #expect(response.status == 200, sourceLocation: sourceLocation)
        #expect(response.body.isEmpty, sourceLocation: sourceLocation)
        #expect(sim.lastRecord?.deviceOutcome == .dropped, sourceLocation: sourceLocation)
        #expect(sim.lastRecord?.deviceNote?.contains(note) == true, "\(sim.lastRecord?.deviceNote ?? "no note")", sourceLocation: sourceLocation)
        #expect(sim.engine.activities().isEmpty, sourceLocation: sourceLocation)
    }

    @Test func aStartWithoutAlertIsAcceptedButNeverShown() throws {
        let sim = try SimulatorHarness()
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, alert: nil), note: "start without alert: the device never shows it")
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, alert: [:]), note: "start with an empty alert")
    }

    @Test func aStartNeedsAttributesTypeAttributesAndContentState() throws {
        let sim = try SimulatorHarness()
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, attributes: [:]), note: "start with empty attributes")
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, attributes: nil), note: "start without attributes")
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, attributesType: nil), note: "start without attributes-type")
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, attributesType: ""), note: "start without attributes-type")
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now, contentState: nil), note: "start without content-state")
        expectDroppedStart(sim, ["aps": ["timestamp": .integer(sim.now), "content-state": [:]]], note: "without aps.event")
        expectDroppedStart(sim, ["aps": ["event": "begin"]], note: "not start, update or end")
    }

    @Test func aStartCreatesAnActivity() throws {
        let sim = try SimulatorHarness()
        let stale = sim.now + 3600
        let payload = SimulatorHarness.start(
            timestamp: sim.now, extra: ["stale-date": .integer(stale), "relevance-score": 0.75])
        let activity = try sim.startActivity(pushToStartToken: starter, payload: payload)
        #expect(activity.status == .active)
        #expect(activity.origin == .pushToStart)
        #expect(activity.attributesType == "DeliveryAttributes")
        #expect(activity.attributes == ["orderID": "A-1"])
        #expect(activity.contentState == ["eta": "12:30", "step": 1])
        #expect(activity.staleDate == Date(timeIntervalSince1970: Double(stale)))
        #expect(activity.relevanceScore == 0.75)
        #expect(activity.lastTimestamp == sim.now)
        #expect(activity.pushToStartToken == starter)
        #expect(activity.startedAt == sim.clock.now())
        #expect(APNsMessageID.isCanonical(activity.id))
        #expect(sim.lastRecord?.activityID == activity.id)
        #expect(sim.lastRecord?.event == "start")
        // The same push-to-start token may start another activity.
        _ = try sim.startActivity(pushToStartToken: starter)
        #expect(sim.engine.activities().count == 2)
    }

    @Test func anUpdateAppliesOnlyWhenItsTimestampIsNewer() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        let start = sim.now
        sim.clock.advance(by: 30)
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: start + 30, contentState: ["step": 2])).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .updated)
        // Same timestamp: dropped. Older: dropped.
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: start + 30, contentState: ["step": 3])).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("timestamp not newer than the last update") == true)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: start + 10, contentState: ["step": 4]))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        let current = try #require(sim.engine.activity(id: activity.id))
        #expect(current.contentState == ["step": 2])
        #expect(current.updateCount == 1)
        #expect(current.lastTimestamp == start + 30)
        // Newer again: applied.
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: start + 31, contentState: ["step": 5]))
        #expect(sim.engine.activity(id: activity.id)?.contentState == ["step": 5])
    }

    @Test func anUpdateWithoutTimestampOrContentStateIsDropped() throws {
        let sim = try SimulatorHarness()
        let token = try #require(try sim.startActivity().updateToken)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: nil))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("without aps.timestamp") == true)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now + 1, contentState: nil))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("update without content-state") == true)
    }

    @Test func anUpdateOrEndForAnEndedActivityIsDropped() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        sim.send(to: token, payload: SimulatorHarness.update("end", timestamp: sim.now + 1))
        #expect(sim.lastRecord?.deviceOutcome == .ended)
        let response = sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now + 2))
        #expect(response.status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote == "update for an ended activity")
        sim.send(to: token, payload: SimulatorHarness.update("end", timestamp: sim.now + 3))
        #expect(sim.lastRecord?.deviceNote == "end for an ended activity")
        // An end is final: nothing changed after it.
        let ended = try #require(sim.engine.activity(id: activity.id))
        #expect(ended.status == .ended)
        #expect(ended.lastTimestamp == sim.now + 1)
        #expect(ended.endedBy == .push)
    }

    @Test func anEndKeepsTheActivityUntilItsDismissalDate() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        let dismissal = sim.now + 600
        sim.send(to: token, payload: SimulatorHarness.update(
            "end", timestamp: sim.now + 1, contentState: ["step": 9], extra: ["dismissal-date": .integer(dismissal)]))
        let ended = try #require(sim.engine.activity(id: activity.id))
        #expect(ended.status == .ended)
        #expect(ended.contentState == ["step": 9])
        #expect(ended.dismissalDate == Date(timeIntervalSince1970: Double(dismissal)))
        sim.clock.advance(by: 599)
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now)).status == 200)
        sim.clock.advance(by: 1)
        #expect(sim.engine.activity(id: activity.id)?.status == .dismissed)
        expectRefusal(sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now)), 410, .unregistered)
    }

    @Test func anEndWithoutDismissalDateLingersFourHours() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        sim.send(to: token, payload: SimulatorHarness.update("end", timestamp: sim.now + 1))
        let expected = sim.clock.now().addingTimeInterval(4 * 3600)
        #expect(sim.engine.activity(id: activity.id)?.dismissalDate == expected)
        sim.clock.advance(by: 4 * 3600 - 1)
        #expect(sim.engine.activity(id: activity.id)?.status == .ended)
        sim.clock.advance(by: 1)
        #expect(sim.engine.activity(id: activity.id)?.status == .dismissed)
    }

    @Test func aDismissalDateOnAnUpdateOrStartIsDropped() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now + 1, extra: ["dismissal-date": .integer(sim.now + 60)]))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("dismissal-date on an update") == true)
        #expect(sim.engine.activity(id: activity.id)?.updateCount == 0)
        expectDroppedStart(
            try SimulatorHarness(), SimulatorHarness.start(timestamp: sim.now, extra: ["dismissal-date": .integer(sim.now + 60)]),
            note: "dismissal-date on a start")
    }

    @Test func staleDatesAreHonoured() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity(payload: SimulatorHarness.start(timestamp: sim.now, extra: ["stale-date": .integer(sim.now + 60)]))
        let token = try #require(activity.updateToken)
        #expect(activity.status == .active)
        sim.clock.advance(by: 60)
        #expect(sim.engine.activity(id: activity.id)?.status == .stale)
        // A stale activity still takes updates; a later stale date makes it active again.
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now, extra: ["stale-date": .integer(sim.now + 60)]))
        #expect(sim.lastRecord?.deviceOutcome == .updated)
        #expect(sim.engine.activity(id: activity.id)?.status == .active)
        // An update without a stale date clears it.
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now + 1))
        sim.clock.advance(by: 3600)
        let current = try #require(sim.engine.activity(id: activity.id))
        #expect(current.staleDate == nil)
        #expect(current.status == .active)
    }

    @Test func datesInMillisecondsAreDropped() throws {
        let sim = try SimulatorHarness()
        expectDroppedStart(sim, SimulatorHarness.start(timestamp: sim.now * 1000), note: "aps.timestamp \(sim.now * 1000) looks like milliseconds")
        expectDroppedStart(
            sim, SimulatorHarness.start(timestamp: sim.now, extra: ["stale-date": .integer(sim.now * 1000)]), note: "stale-date")
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now * 1000))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("milliseconds") == true)
        sim.send(to: token, payload: SimulatorHarness.update(
            "end", timestamp: sim.now + 1, extra: ["dismissal-date": .integer((sim.now + 60) * 1000)]))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("aps.dismissal-date") == true)
        #expect(sim.engine.activity(id: activity.id)?.status == .active)
        // Just below the threshold is still seconds (the year 5138).
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: 99_999_999_999))
        #expect(sim.lastRecord?.deviceOutcome == .updated)
    }

    @Test func pushesGoOnlyToTheRightTokenOfAnActivity() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity(pushToStartToken: starter)
        sim.send(to: starter, payload: SimulatorHarness.update(timestamp: sim.now + 1))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("push-to-start token") == true)
        sim.send(to: try #require(activity.updateToken), payload: SimulatorHarness.start(timestamp: sim.now + 1))
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("update token") == true)
        #expect(sim.engine.activities().count == 1)
    }

    @Test func theSystemEndsAnActivityAfterEightHours() throws {
        let sim = try SimulatorHarness()
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        // Provider tokens last an hour: each step signs a fresh one.
        sim.clock.advance(by: 8 * 3600 - 1)
        let late = try sim.freshToken()
        #expect(sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now), providerToken: late).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .updated)
        sim.clock.advance(by: 1)
        sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now), providerToken: late)
        #expect(sim.lastRecord?.deviceOutcome == .dropped)
        #expect(sim.lastRecord?.deviceNote?.contains("eight hours") == true)
        let ended = try #require(sim.engine.activity(id: activity.id))
        #expect(ended.endedBy == .system)
        #expect(ended.endedAt == activity.startedAt.addingTimeInterval(8 * 3600))
        sim.clock.advance(by: 4 * 3600)
        expectRefusal(
            sim.send(to: token, payload: SimulatorHarness.update(timestamp: sim.now), providerToken: try sim.freshToken()),
            410, .unregistered)
    }
}
