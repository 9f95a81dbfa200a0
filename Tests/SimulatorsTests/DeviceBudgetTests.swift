import Foundation
import IsletCore
import Simulators
import Testing

@Suite("Simulator: the device's budgets of priority-10 updates and of starts")
struct DeviceBudgetTests {
    /// Sends update `step` at `priority` (its timestamp `step` seconds ahead of now,
    /// so each is newer); answers the device's outcome and note.
    private func update(
        _ sim: SimulatorHarness, _ token: String, step: Int, priority: String = "10"
    ) -> (DeviceOutcome?, String?) {
        let response = sim.send(
            to: token, payload: SimulatorHarness.update(timestamp: sim.now + Int64(step), contentState: ["step": .integer(Int64(step))]),
            headers: ["apns-priority": priority])
        #expect(response.status == 200)
        return (sim.lastRecord?.deviceOutcome, sim.lastRecord?.deviceNote)
    }

    @Test func priorityTenUpdatesPastTheHoursBudgetAreThrottledAndPriorityFiveOnesApply() throws {
        let sim = try SimulatorHarness(budgets: (2, nil, nil))
        let activity = try sim.startActivity()
        let token = try #require(activity.updateToken)
        #expect(update(sim, token, step: 1).0 == .updated)
        sim.clock.advance(by: 60)
        #expect(update(sim, token, step: 2).0 == .updated)
        let (outcome, note) = update(sim, token, step: 3)
        #expect(outcome == .throttled)
        #expect(note?.contains("2 priority-10 updates in the last hour (budget 2)") == true, "\(note ?? "")")
        #expect(sim.engine.activity(id: activity.id)?.contentState == ["step": 2])
        // Priority 5 is not counted against the budget, and applies.
        #expect(update(sim, token, step: 4, priority: "5").0 == .updated)
        #expect(sim.engine.activity(id: activity.id)?.contentState == ["step": 4])
        // An hour after the first, one more goes through.
        sim.clock.advance(by: 3539)
        #expect(update(sim, token, step: 5).0 == .throttled)
        sim.clock.advance(by: 1)
        #expect(update(sim, token, step: 6).0 == .updated)
        #expect(update(sim, token, step: 7).0 == .throttled)
    }

    @Test func aDeviceThatAllowedFrequentUpdatesHasTheLargerBudget() throws {
        let sim = try SimulatorHarness(budgets: (1, 3, nil))
        let starter = SimulatorHarness.token(0x61)
        let registered = try sim.engine.registerToken(starter, kind: .pushToStart, frequentUpdates: true)
        #expect(registered.frequentUpdates == true)
        let token = try #require(try sim.startActivity(pushToStartToken: starter).updateToken)
        #expect((1...3).map { update(sim, token, step: $0).0 } == [.updated, .updated, .updated])
        let (outcome, note) = update(sim, token, step: 4)
        #expect(outcome == .throttled)
        #expect(note?.contains("frequent-updates budget") == true)
        // Without the flag: the smaller figure.
        let plain = try #require(try sim.startActivity(pushToStartToken: SimulatorHarness.token(0x62)).updateToken)
        #expect((1...2).map { update(sim, plain, step: $0).0 } == [.updated, .throttled])
    }

    @Test func startsPastTheHoursBudgetAreRefusedByTheDevice() throws {
        let sim = try SimulatorHarness(budgets: (nil, nil, 2))
        let starter = SimulatorHarness.token(0x71)
        _ = try sim.startActivity(pushToStartToken: starter)
        sim.clock.advance(by: 60)
        _ = try sim.startActivity(pushToStartToken: starter)
        #expect(sim.send(to: starter, payload: SimulatorHarness.start(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .throttled)
        #expect(sim.lastRecord?.deviceNote?.contains("Push-to-start budget exceeded") == true)
        #expect(sim.engine.activities().count == 2)
        // Another device's token has its own budget.
        _ = try sim.startActivity(pushToStartToken: SimulatorHarness.token(0x72))
        // An hour after the first start, one more is taken.
        sim.clock.advance(by: 3540)
        _ = try sim.startActivity(pushToStartToken: starter)
        #expect(sim.send(to: starter, payload: SimulatorHarness.start(timestamp: sim.now)).status == 200)
        #expect(sim.lastRecord?.deviceOutcome == .throttled)
    }

    @Test func theCommandLineSetsTheBudgets() throws {
        let parsed = try SimulatorCommandLine.parse([
            "--priority-10-budget-per-hour", "12", "--frequent-priority-10-budget-per-hour=40", "--start-budget", "10",
        ])
        #expect(parsed.options.engine.priority10BudgetPerHour == 12)
        #expect(parsed.options.engine.frequentPriority10BudgetPerHour == 40)
        #expect(parsed.options.engine.startBudgetPerHour == 10)
        #expect(try SimulatorCommandLine.parse([]).options.engine.priority10BudgetPerHour == nil)
        #expect(throws: ConfigurationError.self) { try SimulatorCommandLine.parse(["--start-budget", "0"]) }
    }
}
