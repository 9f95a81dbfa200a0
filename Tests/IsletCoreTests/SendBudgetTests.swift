import Foundation
import IsletCore
import Testing

@Suite("Budgets and rate limits: the figures in force and what they decide")
struct SendBudgetTests {
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)
    private let budget = SendBudget(priority10PerHour: 3, frequentPriority10PerHour: 6, policy: .downgrade, startsPerDevicePerHour: 2)

    @Test func aCopyIsDowngradedOnceItsPriorityTenBudgetIsSpent() {
        #expect(!budget.downgrades(used: 2, frequentUpdates: nil))
        #expect(budget.downgrades(used: 3, frequentUpdates: nil))
        #expect(budget.downgrades(used: 3, frequentUpdates: false))
        // A device that allowed frequent updates has the larger figure.
        #expect(!budget.downgrades(used: 5, frequentUpdates: true))
        #expect(budget.downgrades(used: 6, frequentUpdates: true))
        #expect(budget.priority10Remaining(used: 1, frequentUpdates: nil) == 2)
        #expect(budget.priority10Remaining(used: 9, frequentUpdates: true) == 0)
        #expect(budget.smallestPriority10Limit == 3)
        // Keep: counted, never downgraded.
        var keep = budget
        keep.policy = .keep
        #expect(!keep.downgrades(used: 100, frequentUpdates: nil))
    }

    @Test func aStartPastTheDevicesHourWaitsForTheOldestThatBlocksIt() {
        #expect(budget.nextStart(after: [], now: t0) == t0)
        #expect(budget.nextStart(after: [t0], now: t0) == t0)
        // Two in the hour: the next goes an hour after the older of them.
        let two = [t0.addingTimeInterval(-600), t0.addingTimeInterval(-60)]
        #expect(budget.nextStart(after: two, now: t0) == t0.addingTimeInterval(3000))
        // In any order, with one already held back to later: an hour after the
        // second newest.
        let held = [t0.addingTimeInterval(3000), t0.addingTimeInterval(-600), t0.addingTimeInterval(-60)]
        #expect(budget.nextStart(after: held, now: t0) == t0.addingTimeInterval(3540))
        // An hour old exactly: no longer in the way.
        #expect(budget.nextStart(after: [t0.addingTimeInterval(-3600), t0.addingTimeInterval(-3600)], now: t0) == t0)
    }

    @Test func anAppsOwnFiguresOverrideTheServersAndSurviveStorage() {
        let overrides = BudgetOverrides(priority10PerHour: 30, policy: .keep)
        let applied = overrides.applied(to: budget)
        #expect(applied == SendBudget(priority10PerHour: 30, frequentPriority10PerHour: 6, policy: .keep, startsPerDevicePerHour: 2))
        #expect(BudgetOverrides(json: overrides.json) == overrides)
        #expect(BudgetOverrides().isEmpty && !overrides.isEmpty)
        #expect(BudgetOverrides(json: nil) == BudgetOverrides())
        #expect(BudgetOverrides(json: ["policy": "sometimes", "priority_10_per_hour": 2.5]) == BudgetOverrides())
    }

    @Test func aRateLimitIsTheAppsOwnElseTheServersElseNone() {
        let none = RateLimitOverrides()
        #expect(none.limit(.sends, defaults: .none) == nil)
        let server = RateLimitDefaults(sendsPerSecond: 10, registrationsPerSecond: 2.5, registrationsBurst: 20)
        #expect(none.limit(.sends, defaults: server) == RateLimit(perSecond: 10, burst: 10))
        #expect(none.limit(.registrations, defaults: server) == RateLimit(perSecond: 2.5, burst: 20))
        let own = RateLimitOverrides(sendsPerSecond: 0.5, registrationsBurst: 3)
        // Half a request a second bursts one at a time.
        #expect(own.limit(.sends, defaults: server) == RateLimit(perSecond: 0.5, burst: 1))
        #expect(own.limit(.registrations, defaults: server) == RateLimit(perSecond: 2.5, burst: 3))
        #expect(own.limit(.registrations, defaults: .none) == nil)
        #expect(RateLimitOverrides(json: own.json) == own)
    }
}
