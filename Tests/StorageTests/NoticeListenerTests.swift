import Foundation
import IsletBackground
import IsletCore
import IsletSync
import IsletTesting
@testable import PostgreSQLStorage
import Testing

/// The PostgreSQL notice listener's reconnection: each lost or refused connection is
/// followed by a longer wait on the listener's sleeper, and a stop ends that wait at
/// once through its doorbell. Hermetic: the server it is pointed at is a loopback
/// port that refuses every connection. A stop that no longer ends the wait fails the
/// test at its deadline instead of hanging the suite.
@Suite("PostgreSQL notice listener", .timeLimit(.minutes(1)))
struct NoticeListenerTests {
    @Test func theListenerWaitsLongerAfterEachLostConnectionUpToFiveSeconds() {
        var waits: [TimeInterval] = []
        var backoff = NoticeListener.firstBackoff
        for _ in 0..<8 {
            waits.append(backoff)
            backoff = NoticeListener.backoff(after: backoff)
        }
        #expect(waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 5, 5])
    }

    @Test func aRefusedListenerTriesAgainWhenTheClockPassesItsWaitAndAStopEndsTheWaitAtOnce() async throws {
        let refusing = try ReservedPort()
        let url = try PostgresURL("postgresql://islet@127.0.0.1:\(refusing.port)/islet?sslmode=disable&connect_timeout=5")
        let clock = ManualWallClock()
        let mark = clock.lastWatch
        let listener = NoticeListener(url: url, channel: "islet_listener_test", applicationName: "islet-listener-tests", sleeper: clock)
        // Refused: it waits the first backoff on the clock.
        #expect(await clock.waitForSleepers(after: mark))
        // The clock passes that wait: it tries again, is refused again, and waits again.
        let moved = clock.lastWatch
        clock.advance(by: NoticeListener.firstBackoff)
        #expect(await clock.waitForSleepers(after: moved))
        // The clock never moves again: the stop's doorbell ends the wait.
        let stopped = Lock(false)
        let stopping = Thread {
            listener.stop()
            stopped.withLock { $0 = true }
        }
        stopping.start()
        let end = ContinuousClock.now + .seconds(30)
        while !stopped.withLock({ $0 }), ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(1))
        }
        #expect(stopped.withLock { $0 }, "the stop did not end the listener's wait between two tries")
        #expect(clock.watches(after: mark) == 0)
    }
}
