import Foundation
import IsletBackground
import IsletCore
import IsletSync
import Testing

/// The shape every loop takes: sleeps on a manual clock end when the test moves it,
/// a doorbell ends them early, cancellation ends them, and the runner stops services
/// in the reverse of their start.
@Suite("Background services")
struct BackgroundTests {
    @Test func aSleepOnAManualClockEndsWhenAMoveReachesItsDeadline() async throws {
        let clock = ManualWallClock()
        let woke = Lock(false)
        let mark = clock.lastWatch
        let sleeping = Task {
            await clock.sleep(for: 10)
            woke.withLock { $0 = true }
        }
        #expect(await clock.waitForSleepers(after: mark))
        clock.advance(by: 9)
        // Still asleep: the watch is still there and it did not wake.
        #expect(clock.watches(after: mark) == 1 && !woke.withLock { $0 })
        clock.advance(by: 1)
        await sleeping.value
        #expect(woke.withLock { $0 })
        #expect(clock.watches(after: mark) == 0)
    }

    @Test func aDoorbellEndsASleepAndARingWhileAwakeIsKeptForTheNextSleep() async throws {
        let clock = ManualWallClock()
        let bell = Doorbell()
        let mark = clock.lastWatch
        let sleeping = Task { await clock.sleep(for: 3600, doorbell: bell) }
        #expect(await clock.waitForSleepers(after: mark))
        bell.ring()
        await sleeping.value
        #expect(!bell.isRung)  // The sleep took the ring.
        // Rung while nobody sleeps: the next sleep ends at once, the clock unmoved.
        bell.ring()
        await clock.sleep(for: 3600, doorbell: bell)
        #expect(!bell.isRung)
        // On the system's time too, and on a thread.
        bell.ring()
        await SystemSleeper().sleep(for: 3600, doorbell: bell)
        bell.ring()
        SystemSleeper().block(for: 3600, doorbell: bell)
        let blocked = Lock(false)
        let mark2 = clock.lastWatch
        let thread = Thread {
            clock.block(for: 60, doorbell: nil)
            blocked.withLock { $0 = true }
        }
        thread.start()
        #expect(await clock.waitForSleepers(after: mark2))
        #expect(!blocked.withLock { $0 })
        clock.advance(by: 60)
        let done = await waitUntil { blocked.withLock { $0 } }
        #expect(done)
    }

    @Test func cancellationEndsASleep() async {
        let clock = ManualWallClock()
        let mark = clock.lastWatch
        let sleeping = Task { await clock.sleep(for: 3600, doorbell: Doorbell()) }
        #expect(await clock.waitForSleepers(after: mark))
        sleeping.cancel()
        await sleeping.value
        let system = Task { await SystemSleeper().sleep(for: 3600, doorbell: Doorbell()) }
        system.cancel()
        await system.value
        #expect(clock.watches(after: mark) == 0)
    }

    /// Records its start and its stop in a shared log.
    struct Recorder: BackgroundService {
        let name: String
        let log: Lock<[String]>
        var refuses = false

        struct Refused: Error {}

        func prepare() throws {
            if refuses { throw Refused() }
            log.withLock { $0.append("prepare \(name)") }
        }

        func run() async {
            await waitForCancellation()
            // Stopping takes a moment: the next stops only after this returns.
            try? await Task.sleep(for: .milliseconds(5))
            log.withLock { $0.append("stop \(name)") }
        }
    }

    @Test func theRunnerStartsInOrderAndStopsInReverse() async throws {
        let log = Lock<[String]>([])
        let runner = ServiceRunner(["database", "client", "worker", "api"].map { Recorder(name: $0, log: log) })
        try runner.start()
        await runner.stop()
        #expect(log.withLock { $0 } == [
            "prepare database", "prepare client", "prepare worker", "prepare api",
            "stop api", "stop worker", "stop client", "stop database",
        ])
    }

    @Test func aFailedPreparationStopsTheStartAndStopStopsWhatStarted() async throws {
        let log = Lock<[String]>([])
        let runner = ServiceRunner([
            Recorder(name: "database", log: log), Recorder(name: "api", log: log, refuses: true), Recorder(name: "late", log: log),
        ])
        #expect(throws: Recorder.Refused.self) { try runner.start() }
        await runner.stop()
        #expect(log.withLock { $0 } == ["prepare database", "stop database"])
    }

    /// Waits for `condition` on real time, up to 30 s (a thread's wake-up).
    func waitUntil(_ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + .seconds(30)
        while !condition() {
            guard ContinuousClock.now < end else { return false }
            try? await Task.sleep(for: .milliseconds(1))
        }
        return true
    }
}

@Suite("Periodic jobs")
struct PeriodicTests {
    @Test func dueAtTheFirstLookThenOnceAnIntervalPassed() {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        var purge = Periodic(every: 60)
        let looks: [(TimeInterval, Bool)] = [
            (0, true), (0, false), (59.9, false), (60, true),
            // Away for long: one run, not one per missed interval.
            (600, true), (601, false),
        ]
        for (seconds, due) in looks {
            let taken = purge.take(at: start.addingTimeInterval(seconds))
            #expect(taken == due, "at \(seconds) s")
        }
        #expect(purge.next == start.addingTimeInterval(660))
    }
}
