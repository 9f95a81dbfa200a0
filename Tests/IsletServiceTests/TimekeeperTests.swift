import Foundation
import IsletBackground
import IsletCore
import IsletService
import Storage
import Testing

/// The timekeeper's loop on a manual clock: it acts when the test moves the clock,
/// never by waiting for real time, and sleeps until its next due moment rather than
/// looking on a fixed beat. A stop that no longer ends the loop fails the test at its
/// time limit instead of hanging the suite.
@Suite("Timekeeper", .timeLimit(.minutes(1)))
struct TimekeeperTests {
    @Test func anEndTimeIsActedOnWhenTheClockReachesItAndCancellationStopsTheLoop() async throws {
        try await ServiceTests().withRig { rig in
            let app = try await rig.appWithDevice()
            _ = try await rig.start(app, endAt: rig.clock.now().addingTimeInterval(60))
            let timekeeper = Timekeeper(services: rig.services, sleeper: rig.clock)
            func status() async throws -> ActivityStatus {
                try await rig.services.activities.show(appID: app.id, activityID: "order-1").activity.status
            }
            // Moves the clock and waits until the look it started is over.
            func advance(by seconds: TimeInterval) async -> Bool {
                let mark = rig.clock.lastWatch
                rig.clock.advance(by: seconds)
                return await rig.clock.waitForSleepers(after: mark)
            }
            let mark = rig.clock.lastWatch
            let running = Task { await timekeeper.run() }
            #expect(await rig.clock.waitForSleepers(after: mark))  // The first look is over.
            #expect(try await status() != .ended)
            #expect(await advance(by: 30))
            #expect(try await status() != .ended)
            #expect(await advance(by: 31))
            #expect(try await status() == .ended)
            running.cancel()
            await running.value
        }
    }

    @Test func itSleepsUntilTheNextDueItemAndNoLookHappensBefore() async throws {
        try await ServiceTests().withRig { rig in
            let app = try await rig.appWithDevice()
            // Due sooner than any periodic job (the first, unconfirmed starts, is 5 s away).
            _ = try await rig.start(app, endAt: rig.clock.now().addingTimeInterval(3))
            let timekeeper = Timekeeper(services: rig.services, sleeper: rig.clock, doorbell: rig.timers)
            let mark = rig.clock.lastWatch
            let running = Task { await timekeeper.run() }
            #expect(await rig.clock.waitForSleepers(after: mark))
            let asleep = timekeeper.looks
            #expect(asleep >= 1)
            // Short of the end time, a move of the clock wakes nothing.
            rig.clock.advance(by: 2.999)
            #expect(timekeeper.looks == asleep)
            let moved = rig.clock.lastWatch
            rig.clock.advance(by: 0.001)
            #expect(await rig.clock.waitForSleepers(after: moved))
            #expect(timekeeper.looks == asleep + 1)
            #expect(try await rig.services.activities.show(appID: app.id, activityID: "order-1").activity.status == .ended)
            running.cancel()
            await running.value
        }
    }

    @Test func timedWorkAddedWhileItSleepsWakesItAtOnce() async throws {
        try await ServiceTests().withRig { rig in
            let app = try await rig.appWithDevice()
            let timekeeper = Timekeeper(services: rig.services, sleeper: rig.clock, doorbell: rig.timers)
            let mark = rig.clock.lastWatch
            let running = Task { await timekeeper.run() }
            #expect(await rig.clock.waitForSleepers(after: mark))
            let asleep = timekeeper.looks
            // A start with an end time rings the doorbell: one look, with no move of the
            // clock, after which it sleeps until that end time.
            let woken = rig.clock.lastWatch
            _ = try await rig.start(app, endAt: rig.clock.now().addingTimeInterval(2))
            #expect(await rig.clock.waitForSleepers(after: woken))
            #expect(timekeeper.looks == asleep + 1)
            rig.clock.advance(by: 1.5)
            #expect(timekeeper.looks == asleep + 1)
            let moved = rig.clock.lastWatch
            rig.clock.advance(by: 0.5)
            #expect(await rig.clock.waitForSleepers(after: moved))
            #expect(try await rig.services.activities.show(appID: app.id, activityID: "order-1").activity.status == .ended)
            running.cancel()
            await running.value
        }
    }

    @Test func anActivityPastItsWindowsIsEndedByTheClockInTheShapeEveryEndHas() async throws {
        try await ServiceTests().withRig { rig in
            let app = try await rig.appWithDevice()
            _ = try await rig.start(app)
            let timekeeper = Timekeeper(services: rig.services, sleeper: rig.clock, doorbell: rig.timers)
            let mark = rig.clock.lastWatch
            let running = Task { await timekeeper.run() }
            #expect(await rig.clock.waitForSleepers(after: mark))
            let moved = rig.clock.lastWatch
            rig.clock.advance(by: LifecycleWindows.activityKit.total + 1)
            #expect(await rig.clock.waitForSleepers(after: moved))
            running.cancel()
            await running.value
            let shown = try await rig.services.activities.show(appID: app.id, activityID: "order-1")
            #expect(shown.activity.status == .ended)
            let ended = try rig.store.readNow { try $0.events(appID: app.id, after: 0, patterns: [EventPattern("activity.ended")!], limit: 10) }
            #expect(ended.count == 1)
            #expect(ended.first?.data == ["activity_id": "order-1", "cause": "expired", "targets": 0])
        }
    }

    /// When it looks next: the earliest due moment, within the longest sleep, and the
    /// shortest sleep when that moment has come already (another node is at it).
    @Test func itsWakeTimeOverExtremes() {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        let longest = now.addingTimeInterval(Timekeeper.longestSleep)
        let shortest = now.addingTimeInterval(Timekeeper.shortestSleep)
        #expect(Timekeeper.wakeTime(due: nil, jobs: nil, now: now) == longest)
        #expect(Timekeeper.wakeTime(due: now.addingTimeInterval(3), jobs: now.addingTimeInterval(5), now: now) == now.addingTimeInterval(3))
        #expect(Timekeeper.wakeTime(due: now.addingTimeInterval(9), jobs: now.addingTimeInterval(5), now: now) == now.addingTimeInterval(5))
        #expect(Timekeeper.wakeTime(due: .distantFuture, jobs: nil, now: now) == longest)
        for past in [now, now.addingTimeInterval(-0.0), now.addingTimeInterval(-1), .distantPast, now.addingTimeInterval(-.leastNonzeroMagnitude)] {
            #expect(Timekeeper.wakeTime(due: past, jobs: nil, now: now) == shortest)
            #expect(Timekeeper.wakeTime(due: nil, jobs: past, now: now) == shortest)
        }
        // The tiniest step ahead is waited for as it is.
        let next = now.addingTimeInterval(1e-6)
        #expect(Timekeeper.wakeTime(due: next, jobs: nil, now: now) == next)
        // At the edges of the representable dates, it still answers a time ahead.
        for edge in [Date.distantPast, Date.distantFuture] {
            #expect(Timekeeper.wakeTime(due: nil, jobs: nil, now: edge) > edge)
        }
    }
}

/// What only time makes stale is forgotten: a node silent longer than a node is
/// remembered, and an `Idempotency-Key` answer older than the replay window (a
/// request with that key is then new again).
@Suite("Forgetting stale records")
struct ForgetStaleTests {
    @Test func silentNodesAndOldIdempotencyAnswersAreForgottenAndNothingYounger() async throws {
        try await ServiceTests().withRig { rig in
            let app = try await rig.appWithDevice()
            let key = IdempotencyKey(key: "k-stale", fingerprint: Data("one".utf8))
            _ = try await rig.start(app, key: key)
            let start = rig.clock.now()
            try rig.store.writeNow { try $0.recordHeartbeat(nodeID: "gone", startedAt: start, now: start) }
            // Younger than the window (the rig's, an hour) and than a node's memory: kept.
            rig.clock.advance(by: 3_599)
            #expect(await rig.services.nodes.forgetStale() == (nodes: 0, answers: 0))
            #expect(try await rig.start(app, key: key).replayed)
            // Past the window, the answer goes; past a day, the node too.
            rig.clock.advance(by: 2)
            #expect(await rig.services.nodes.forgetStale() == (nodes: 0, answers: 1))
            rig.clock.advance(by: NodeRecord.memory)
            #expect(await rig.services.nodes.forgetStale() == (nodes: 1, answers: 0))
            #expect(try rig.store.readNow { try $0.nodes(seenSince: .distantPast) }.isEmpty)
        }
    }
}
