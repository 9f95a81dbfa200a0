import Foundation
import IsletCore
import Testing

@Suite("Activity lifecycle windows")
struct ActivityLifecycleTests {
    let start = Date(timeIntervalSince1970: 1_800_000_000)
    let lifecycle = ActivityLifecycle()

    func at(hours: Double) -> Date { start.addingTimeInterval(hours * 3600) }

    @Test func updatesForEightHoursEndsForFourMore() {
        #expect(lifecycle.check(.update, status: .started, startedAt: start, now: at(hours: 7.99)) == .allowed)
        #expect(lifecycle.check(.update, status: .updated, startedAt: start, now: at(hours: 8))
            == .pastUpdateWindow(since: at(hours: 8)))
        #expect(lifecycle.check(.registerToken, status: .started, startedAt: start, now: at(hours: 9))
            == .pastUpdateWindow(since: at(hours: 8)))
        #expect(lifecycle.check(.end, status: .updated, startedAt: start, now: at(hours: 11.99)) == .allowed)
        #expect(lifecycle.check(.end, status: .updated, startedAt: start, now: at(hours: 12)) == .expired(at: at(hours: 12)))
    }

    @Test func endedIsFinal() {
        for action in [ActivityLifecycle.Action.update, .end, .registerToken] {
            #expect(lifecycle.check(action, status: .ended, startedAt: start, now: at(hours: 0)) == .ended)
        }
    }

    @Test func statusReadsEndedOnceEveryWindowHasPassed() {
        #expect(lifecycle.effectiveStatus(.updated, startedAt: start, now: at(hours: 11)) == .updated)
        #expect(lifecycle.effectiveStatus(.updated, startedAt: start, now: at(hours: 12)) == .ended)
    }

    @Test func windowsAreConfigurable() {
        let short = ActivityLifecycle(windows: LifecycleWindows(update: 60, end: 30))
        #expect(short.check(.update, status: .started, startedAt: start, now: start.addingTimeInterval(61))
            == .pastUpdateWindow(since: start.addingTimeInterval(60)))
        #expect(short.expiry(startedAt: start) == start.addingTimeInterval(90))
    }
}
