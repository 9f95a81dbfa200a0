import Foundation
import IsletBackground
import IsletCore
import IsletSync
import IsletTesting
@testable import PostgreSQLStorage
import Storage
import Testing

/// A transaction PostgreSQL rolled back on a deadlock or a serialization failure is
/// run again after a pause that grows with each attempt, timed by the store's
/// sleeper: on a manual clock, the next attempt waits for the test to move it.
@Suite("PostgreSQL busy retries")
struct PostgresBusyRetryTests {
    @Test func eachAttemptWaitsTwoMillisecondsLongerThanTheOneBefore() {
        #expect(PostgreSQLStore.attempts == 3)
        #expect((1..<PostgreSQLStore.attempts).map(PostgreSQLStore.busyBackoff(afterAttempt:)) == [0.002, 0.004])
    }

    @Test(.requires(.postgres), .timeLimit(.minutes(2)))
    func aBusyTransactionRunsAgainOnlyOnceTheClockMovesPastItsPause() async throws {
        try await TestPostgres.withSchema { url in
            let clock = ManualWallClock()
            let store = try PostgreSQLStore(url: url, poolSize: 2, applicationName: "islet-busy-tests", sleeper: clock)
            // However the test ends, the clock is moved past every pause first, so that
            // a writer still asleep on it finishes before the store closes.
            defer {
                clock.advance(by: 3600)
                store.close()
            }
            // Rolled back as busy twice, then committed.
            let attempts = Lock(0)
            let mark = clock.lastWatch
            let writing = Task {
                try await runBlocking {
                    try store.writeNow(durable: true) { session -> Int in
                        let attempt = attempts.withLock { count -> Int in
                            count += 1
                            return count
                        }
                        guard attempt == PostgreSQLStore.attempts else {
                            throw StoreError(.busy, "could not serialize access due to concurrent update")
                        }
                        return try session.nextDueTime() == nil ? attempt : 0
                    }
                }
            }
            // The first attempt failed; the store sleeps on the clock, which stands still.
            try #require(await clock.waitForSleepers(after: mark))
            #expect(attempts.withLock { $0 } == 1)
            let second = clock.lastWatch
            clock.advance(by: PostgreSQLStore.busyBackoff(afterAttempt: 1))
            try #require(await clock.waitForSleepers(after: second))
            #expect(attempts.withLock { $0 } == 2)
            clock.advance(by: PostgreSQLStore.busyBackoff(afterAttempt: 2))
            #expect(try await writing.value == PostgreSQLStore.attempts)
        }
    }
}
