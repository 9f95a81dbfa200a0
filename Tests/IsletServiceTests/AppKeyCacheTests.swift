import Foundation
import IsletCore
@testable import IsletService
import Storage
import Testing

/// The app key cache keeps an app read for its key for its lifetime on the services'
/// clock, and not past it, nor across a clock stepped back, nor across a change.
@Suite("App key cache")
struct AppKeyCacheTests {
    let hash = Data("key hash".utf8)

    func app(_ clock: ManualWallClock) -> AppRecord {
        AppRecord(
            id: "app_1", name: "App", bundleID: "com.example.app", credentials: nil,
            serverKeyHash: hash, deviceKeyHash: Data("device".utf8), createdAt: clock.now(), updatedAt: clock.now())
    }

    @Test func anEntryLastsItsLifetimeOnTheClockAndNoLonger() {
        let clock = ManualWallClock()
        let cache = AppKeyCache(lifetime: .seconds(5), clock: clock)
        cache.store(hash, app: app(clock), kind: .server, readAt: cache.generation)
        #expect(cache.lookup(hash)?.app.id == "app_1")
        clock.advance(by: 4.999)
        #expect(cache.lookup(hash)?.kind == .server)
        clock.advance(by: 0.002)
        #expect(cache.lookup(hash) == nil)
    }

    @Test func aClockSteppedBackPastAnEntrysReadingEndsIt() {
        let clock = ManualWallClock()
        let cache = AppKeyCache(lifetime: .seconds(5), clock: clock)
        cache.store(hash, app: app(clock), kind: .device, readAt: cache.generation)
        clock.set(clock.now().addingTimeInterval(-3_600))
        #expect(cache.lookup(hash) == nil)
    }

    @Test func nothingReadBeforeAnInvalidationIsKept() {
        let clock = ManualWallClock()
        let cache = AppKeyCache(lifetime: .seconds(5), clock: clock)
        let before = cache.generation
        cache.invalidate()
        cache.store(hash, app: app(clock), kind: .server, readAt: before)
        #expect(cache.lookup(hash) == nil)
        cache.store(hash, app: app(clock), kind: .server, readAt: cache.generation)
        #expect(cache.lookup(hash) != nil)
        cache.invalidate()
        #expect(cache.lookup(hash) == nil)
    }
}
