import Foundation
import IsletBackground
import IsletCore
import IsletSync
import Testing

/// The shape every loop takes: sleeps on a manual clock end when the test moves it,
/// a doorbell ends them early, cancellation ends them, and the runner stops services
/// in the reverse of their start. Sleeps that no longer end (an hour on the system's
/// time) fail the suite at its time limit instead of hanging it. The limits are
/// generous: in a whole-suite run on two cores a test's tasks wait their turn
/// behind hundreds of others (the concurrent-stops test took 35–58 s of a one-minute
/// limit in CI runs, for a few milliseconds of work).
@Suite("Background services", .timeLimit(.minutes(3)))
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

    /// A wall clock stepped back an hour after its first read, as a system clock set
    /// right in the middle of a sleep would be.
    final class SteppedBackClock: WallClock {
        let start = Date(timeIntervalSince1970: 1_800_000_000)
        let reads = Lock(0)

        func now() -> Date {
            let read = reads.withLock { reads -> Int in
                reads += 1
                return reads
            }
            return read == 1 ? start : start.addingTimeInterval(-3600)
        }
    }

    @Test func aDeadlineBecomesAMonotonicInstantOnce() {
        let wall = Date(timeIntervalSince1970: 1_800_000_000)
        let instant = ContinuousClock.now
        #expect(SystemSleeper.monotonicDeadline(for: wall.addingTimeInterval(5), wallNow: wall, monotonicNow: instant)
            == instant + .seconds(5))
        // Passed already: now.
        #expect(SystemSleeper.monotonicDeadline(for: wall.addingTimeInterval(-5), wallNow: wall, monotonicNow: instant) == instant)
        // Far away: far away, and no overflow.
        #expect(SystemSleeper.monotonicDeadline(for: .distantFuture, wallNow: wall, monotonicNow: instant)
            > instant + .seconds(50 * 365 * 86_400))
    }

    /// A sleep of 50 ms on the system's sleeper ends in time although the wall clock
    /// is stepped back an hour as soon as the sleep has read it: the sleep waits on
    /// the monotonic clock. The bound is generous (a busy machine); a sleep that
    /// read the wall clock again would take an hour.
    @Test func aSystemSleepIsNotStretchedByTheWallClockSteppedBack() async throws {
        let limit = Duration.seconds(30)
        // On a thread.
        let wall = SteppedBackClock()
        let done = Lock(false)
        let sleeper = SystemSleeper(wallClock: wall)
        let deadline = wall.start.addingTimeInterval(0.05)
        Thread {
            sleeper.block(until: deadline, doorbell: Doorbell())
            done.withLock { $0 = true }
        }.start()
        #expect(await waitUntil(within: limit) { done.withLock { $0 } }, "blocked past the stepped-back wall clock")
        #expect(wall.reads.withLock { $0 } >= 1)
        // In a task.
        let wall2 = SteppedBackClock()
        let slept = Lock(false)
        let sleeping = Task {
            await SystemSleeper(wallClock: wall2).sleep(until: wall2.start.addingTimeInterval(0.05), doorbell: Doorbell())
            slept.withLock { $0 = true }
        }
        #expect(await waitUntil(within: limit) { slept.withLock { $0 } }, "slept past the stepped-back wall clock")
        sleeping.cancel()
        #expect(wall2.reads.withLock { $0 } >= 1)
    }

    /// Records its start and its stop in a shared log: "stopping" once it sees the
    /// cancellation, "stopped" when its `run` returns, a few turns of the executor
    /// later (time for another stop, if one ran beside it, to log its own). A service
    /// with a `gate` waits for it to open between the two.
    struct Recorder: BackgroundService {
        let name: String
        let log: Lock<[String]>
        var refuses = false
        var gate: Gate?

        struct Refused: Error {}

        func prepare() throws {
            if refuses { throw Refused() }
            log.withLock { $0.append("prepare \(name)") }
        }

        func run() async {
            await waitForCancellation()
            log.withLock { $0.append("stopping \(name)") }
            await gate?.wait()
            for _ in 0..<10 { await Task.yield() }
            log.withLock { $0.append("stopped \(name)") }
        }

        func stopUnstarted() async {
            log.withLock { $0.append("released \(name)") }
        }
    }

    /// Holds whoever waits on it until opened.
    final class Gate: Sendable {
        private let state = Lock<(open: Bool, waiting: [CheckedContinuation<Void, Never>])>((false, []))

        func wait() async {
            await withCheckedContinuation { continuation in
                let open = state.withLock { state -> Bool in
                    if !state.open { state.waiting.append(continuation) }
                    return state.open
                }
                if open { continuation.resume() }
            }
        }

        func open() {
            let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.open = true
                defer { state.waiting = [] }
                return state.waiting
            }
            for continuation in waiting { continuation.resume() }
        }
    }

    /// The stop of each service, from "stopping" to "stopped", in reverse.
    static func stops(_ names: [String]) -> [String] {
        names.reversed().flatMap { ["stopping \($0)", "stopped \($0)"] }
    }

    static let names = ["database", "client", "worker", "api"]

    @Test func theRunnerStartsInOrderAndStopsInReverse() async throws {
        let log = Lock<[String]>([])
        let runner = ServiceRunner(Self.names.map { Recorder(name: $0, log: log) })
        try runner.start()
        await runner.stop()
        #expect(log.withLock { $0 } == Self.names.map { "prepare \($0)" } + Self.stops(Self.names))
    }

    @Test func aFailedPreparationStopsTheStartAndStopStopsWhatStarted() async throws {
        let log = Lock<[String]>([])
        let runner = ServiceRunner([
            Recorder(name: "database", log: log), Recorder(name: "api", log: log, refuses: true), Recorder(name: "late", log: log),
        ])
        #expect(throws: Recorder.Refused.self) { try runner.start() }
        await runner.stop()
        #expect(log.withLock { $0 } == ["prepare database", "released late", "released api"] + Self.stops(["database"]))
    }

    /// Nothing runs before `start`: a runner stopped without one releases every
    /// service in reverse, and one started part way stops what started and releases
    /// the rest, all in one reverse order.
    @Test func aStopReleasesWhatNeverStartedInItsTurn() async throws {
        let log = Lock<[String]>([])
        let idle = ServiceRunner(Self.names.map { Recorder(name: $0, log: log) })
        await idle.stop()
        #expect(log.withLock { $0 } == Self.names.reversed().map { "released \($0)" })

        log.withLock { $0 = [] }
        let half = ServiceRunner(Self.names.map { Recorder(name: $0, log: log) })
        try half.start(upTo: 2)
        await half.stop()
        #expect(log.withLock { $0 } == ["prepare database", "prepare client", "released api", "released worker"]
            + Self.stops(["database", "client"]))
        // A stopped runner starts nothing.
        #expect(throws: ServiceRunner.Stopped.self) { try half.start() }
    }

    /// A count beyond the services starts them all, once; a later start starts
    /// nothing more.
    @Test func aStartUpToMoreThanThereAreStartsThemAll() async throws {
        let log = Lock<[String]>([])
        let runner = ServiceRunner(Self.names.map { Recorder(name: $0, log: log) })
        try runner.start(upTo: 1)
        try runner.start(upTo: Self.names.count + 5)
        try runner.start()
        await runner.stop()
        #expect(log.withLock { $0 } == Self.names.map { "prepare \($0)" } + Self.stops(Self.names))
    }

    /// Two stops at once are one: each service is stopped once, in reverse, and
    /// neither caller returns before the last service stopped.
    @Test func concurrentStopsAreOneStopThatBothAwait() async throws {
        let log = Lock<[String]>([])
        let gate = Gate()
        let runner = ServiceRunner(
            [Recorder(name: "database", log: log, gate: gate)] + Self.names.dropFirst().map { Recorder(name: $0, log: log) })
        try runner.start()
        log.withLock { $0 = [] }
        let first = Task {
            await runner.stop()
            log.withLock { $0.append("first returned") }
        }
        let second = Task {
            await runner.stop()
            log.withLock { $0.append("second returned") }
        }
        // The database holds the stop at its end: neither caller returned.
        #expect(await waitUntil { log.withLock { $0.contains("stopping database") } })
        #expect(!log.withLock { $0.contains { $0.hasSuffix("returned") } })
        gate.open()
        await first.value
        await second.value
        let entries = log.withLock { $0 }
        #expect(Array(entries.prefix(8)) == Self.stops(Self.names))
        #expect(Set(entries.dropFirst(8)) == ["first returned", "second returned"])
        // A later call returns at once, and stops nothing again.
        await runner.stop()
        #expect(log.withLock { $0.count } == 10)
    }

    /// Waits for `condition` on real time, up to `limit` (a thread's wake-up).
    func waitUntil(within limit: Duration = .seconds(120), _ condition: () -> Bool) async -> Bool {
        let end = ContinuousClock.now + limit
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
