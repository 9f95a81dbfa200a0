import IsletSync
import Testing

/// A clock whose time moves only when something sleeps on it: each sleep ends at
/// once, with the clock at the sleep's deadline. Waits that poll run through in no
/// real time, and every figure they read is exact.
final class LeapingClock: Clock, Sendable {
    struct Instant: InstantProtocol {
        var offset: Duration
        func advanced(by duration: Duration) -> Instant { Instant(offset: offset + duration) }
        func duration(to other: Instant) -> Duration { other.offset - offset }
        static func < (left: Instant, right: Instant) -> Bool { left.offset < right.offset }
    }

    private let time = Lock(Duration.zero)
    private let sleeps = Lock(0)

    var now: Instant { Instant(offset: time.withLock { $0 }) }
    var minimumResolution: Duration { .zero }
    /// How many sleeps began.
    var sleepCount: Int { sleeps.withLock { $0 } }

    func sleep(until deadline: Instant, tolerance: Duration?) async throws {
        sleeps.withLock { $0 += 1 }
        time.withLock { $0 = max($0, deadline.offset) }
    }

    /// Moves the clock on by `duration`, as if that much time had passed.
    func move(by duration: Duration) { time.withLock { $0 += duration } }
}

@Suite("Waits on a given clock")
struct ClockWaitsTests {
    @Test func aStopwatchReadsTheTimeItsClockMoved() {
        let clock = LeapingClock()
        let given: any Clock<Duration> = clock
        let elapsed = given.stopwatch()
        #expect(elapsed() == .zero)
        clock.move(by: .milliseconds(1_500))
        #expect(elapsed() == .milliseconds(1_500))
    }

    @Test func aDeadlinePassesWhenItsClockReachesIt() {
        let clock = LeapingClock()
        let passed = (clock as any Clock<Duration>).deadline(after: .seconds(2))
        #expect(!passed())
        clock.move(by: .milliseconds(1_999))
        #expect(!passed())
        clock.move(by: .milliseconds(1))
        #expect(passed())
    }

    @Test func aPollThatNeverHoldsEndsAtItsLimitOnItsClock() async {
        let clock = LeapingClock()
        let given: any Clock<Duration> = clock
        let elapsed = given.stopwatch()
        let held = await given.poll(every: .milliseconds(5), upTo: .seconds(1)) { false }
        #expect(!held)
        // 200 sleeps of 5 ms reach the limit, and no more are taken.
        #expect(clock.sleepCount == 200)
        #expect(elapsed() == .seconds(1))
    }

    @Test func aPollEndsAtTheFirstLookThatHolds() async {
        let clock = LeapingClock()
        let looks = Lock(0)
        let held = await (clock as any Clock<Duration>).poll(every: .milliseconds(5), upTo: .seconds(10)) {
            looks.withLock { count in
                count += 1
                return count == 4
            }
        }
        #expect(held)
        #expect(clock.sleepCount == 3)
        let now = clock.now.offset
        #expect(now == .milliseconds(15))
    }

    @Test func aPollThatHoldsAtOnceNeverSleeps() async {
        let clock = LeapingClock()
        let held = await (clock as any Clock<Duration>).poll(every: .seconds(1), upTo: .zero) { true }
        #expect(held)
        #expect(clock.sleepCount == 0)
    }
}
