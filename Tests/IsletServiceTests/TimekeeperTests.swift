import Foundation
import IsletBackground
import IsletCore
import IsletService
import Testing

/// The timekeeper's loop on a manual clock: it acts when the test moves the clock,
/// never by waiting for real time. A stop that no longer ends the loop fails the test
/// at its time limit instead of hanging the suite.
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
}
