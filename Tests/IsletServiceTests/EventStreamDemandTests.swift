import Foundation
import IsletService
import Testing

/// Whether an app's pushes are wanted as events: a stream open here, or one another
/// node said it holds, for as long as its word lasts.
@Suite struct EventStreamDemandTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aStreamOpenHereIsWantedUntilItCloses() throws {
        let slots = EventStreamSlots(maxPerApp: 2)
        #expect(!slots.wanted(appID: "app_1", now: now))
        let slot = try slots.take(appID: "app_1")
        #expect(slots.wanted(appID: "app_1", now: now))
        #expect(!slots.wanted(appID: "app_2", now: now))
        slot.release()
        #expect(!slots.wanted(appID: "app_1", now: now))
    }

    @Test(arguments: [0, 1, EventStreamSlots.elsewhereLifetime - 0.001, EventStreamSlots.elsewhereLifetime])
    func anotherNodesStreamIsWantedWhileItsWordLasts(_ seconds: TimeInterval) {
        let slots = EventStreamSlots()
        slots.openElsewhere(appID: "app_1", now: now)
        #expect(slots.wanted(appID: "app_1", now: now.addingTimeInterval(seconds)))
        #expect(!slots.wanted(appID: "app_2", now: now.addingTimeInterval(seconds)))
    }

    @Test(arguments: [EventStreamSlots.elsewhereLifetime + 0.001, 3600, .greatestFiniteMagnitude])
    func anotherNodesWordRunsOut(_ seconds: TimeInterval) {
        let slots = EventStreamSlots()
        slots.openElsewhere(appID: "app_1", now: now)
        #expect(!slots.wanted(appID: "app_1", now: now.addingTimeInterval(seconds)))
        // Said again, it counts again.
        slots.openElsewhere(appID: "app_1", now: now.addingTimeInterval(seconds))
        #expect(slots.wanted(appID: "app_1", now: now.addingTimeInterval(seconds)))
    }

    @Test func theWordIsSaidMoreOftenThanItLasts() {
        #expect(EventStreamSlots.announceInterval * 2 < EventStreamSlots.elsewhereLifetime)
    }
}
