import Foundation
import Storage
import Testing

/// The store's times in whole milliseconds: a date read from the store, and that
/// date a millisecond later, read as the milliseconds they are.
@Suite("Unix milliseconds")
struct UnixMillisecondsTests {
    @Test func aStoredDateAndTheMillisecondAfterItReadAsThemselves() {
        let base: Int64 = 1_796_478_525_000
        for milliseconds in base..<(base + 100_000) {
            let stored = Date(unixMilliseconds: milliseconds)
            #expect(stored.unixMilliseconds == milliseconds)
            // The app's version moves a millisecond ahead (a cached copy is then stale).
            let next = stored.addingTimeInterval(0.001)
            if next.unixMilliseconds != milliseconds + 1 {
                Issue.record("\(milliseconds) + 1 ms reads as \(next.unixMilliseconds)")
                return
            }
        }
    }

    @Test func aDateWithinAMillisecondRoundsDown() {
        let date = Date(unixMilliseconds: 1_796_478_525_416).addingTimeInterval(0.000_7)
        #expect(date.unixMilliseconds == 1_796_478_525_416)
        #expect(Date(timeIntervalSince1970: -0.0004).unixMilliseconds == -1)
    }

    @Test func aDateBeyondWhatMillisecondsHoldIsTheNearestTheyHold() {
        #expect(Date(unixMilliseconds: .max).unixMilliseconds == .max)
        #expect(Date(unixMilliseconds: .min).unixMilliseconds == .min)
        #expect(Date(timeIntervalSince1970: 1e300).unixMilliseconds == .max)
        #expect(Date(timeIntervalSince1970: -1e300).unixMilliseconds == .min)
        #expect(Date(timeIntervalSince1970: .greatestFiniteMagnitude).unixMilliseconds == .max)
        #expect(Date(timeIntervalSince1970: .leastNonzeroMagnitude).unixMilliseconds == 0)
        #expect(Date(timeIntervalSince1970: -0.0).unixMilliseconds == 0)
    }
}
