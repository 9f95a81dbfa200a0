import Foundation
import IsletCore
import Testing

/// The token bucket on a clock the test moves: a burst is admitted at once, then
/// one request per `1 / rate` seconds; the fields a 429 carries follow from it.
@Suite("Token bucket")
struct TokenBucketTests {
    let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    @Test func aFullBucketAdmitsItsBurstThenOneRequestPerTokenEarned() {
        var bucket = TokenBucket(rate: 2, burst: 3, now: t0)
        let burst = (0..<3).map { _ in bucket.take(now: t0) }
        #expect(burst.map(\.admitted) == [true, true, true])
        #expect(burst.map(\.remaining) == [2, 1, 0])
        let refused = bucket.take(now: t0)
        #expect(!refused.admitted && refused.remaining == 0)
        // One token comes every half second: Retry-After rounds up to a second.
        // (Times a power of two apart, which a Date holds exactly.)
        #expect(refused.retryAfterSeconds == 1)
        #expect(!bucket.take(now: t0.addingTimeInterval(0.25)).admitted)
        #expect(bucket.take(now: t0.addingTimeInterval(0.5)).admitted)
        #expect(!bucket.take(now: t0.addingTimeInterval(0.75)).admitted)
        // Idle for long, it holds its burst and no more.
        let later = t0.addingTimeInterval(3_600)
        #expect(bucket.state(now: later).remaining == 3)
        #expect((0..<4).map { _ in bucket.take(now: later).admitted } == [true, true, true, false])
    }

    @Test func theFieldsDescribeTheBucketAsTheDraftNamesThem() {
        var bucket = TokenBucket(rate: 10, burst: 50, now: t0)
        let first = bucket.take(now: t0)
        // A quota of 50 in the 5 s an empty bucket takes to fill; 49 left, full
        // again within 0.1 s, which rounds up to 1.
        #expect(first.policyField("sends") == "\"sends\";q=50;w=5")
        #expect(first.limitField("sends") == "\"sends\";r=49;t=1")
        #expect(first.retryAfterSeconds == nil)
        for _ in 0..<49 { _ = bucket.take(now: t0) }
        let refused = bucket.take(now: t0)
        #expect(!refused.admitted && refused.limitField("sends") == "\"sends\";r=0;t=5")
        #expect(refused.retryAfterSeconds == 1)
        // A slow bucket: one request every 4 s.
        var slow = TokenBucket(rate: 0.25, burst: 1, now: t0)
        #expect(slow.take(now: t0).admitted)
        let wait = slow.take(now: t0.addingTimeInterval(1))
        #expect(!wait.admitted && wait.retryAfterSeconds == 3 && wait.resetSeconds == 3)
        #expect(wait.policyField("registrations") == "\"registrations\";q=1;w=4")
    }

    @Test func aClockThatGoesBackEarnsNothing() {
        var bucket = TokenBucket(rate: 1, burst: 1, now: t0)
        #expect(bucket.take(now: t0.addingTimeInterval(10)).admitted)
        #expect(!bucket.take(now: t0).admitted)
        #expect(!bucket.take(now: t0.addingTimeInterval(10.5)).admitted)
        #expect(bucket.take(now: t0.addingTimeInterval(11)).admitted)
    }
}

@Suite("Token bucket: batches and a stored state")
struct TokenBucketBatchTests {
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aBatchTakesWhatIsThereUpToItsSize() {
        var bucket = TokenBucket(rate: 4, burst: 8, now: t0)
        let first = bucket.take(upTo: 5, now: t0)
        #expect(first.granted == 5 && first.decision.admitted && first.decision.remaining == 3)
        let second = bucket.take(upTo: 5, now: t0)
        #expect(second.granted == 3 && second.decision.remaining == 0)
        let third = bucket.take(upTo: 5, now: t0)
        #expect(third.granted == 0 && !third.decision.admitted)
        #expect(third.decision.retryAfterSeconds == 1)
        // A quarter of a second earns one token.
        #expect(bucket.take(upTo: 5, now: t0.addingTimeInterval(0.25)).granted == 1)
    }

    @Test func aStoredBucketResumesUnderItsFiguresNow() {
        // Stored with 6 tokens two seconds ago; the burst has since dropped to 4.
        var bucket = TokenBucket(rate: 1, burst: 4, tokens: 6, updatedAt: t0)
        #expect(bucket.tokens == 4)
        #expect(bucket.take(upTo: 10, now: t0.addingTimeInterval(2)).granted == 4)
        var empty = TokenBucket(rate: 2, burst: 10, tokens: 0.5, updatedAt: t0)
        #expect(empty.take(upTo: 1, now: t0.addingTimeInterval(0.25)).granted == 1)
        #expect(empty.take(upTo: 1, now: t0.addingTimeInterval(0.25)).granted == 0)
    }
}

@Suite("Token bucket: stored in whole milliseconds")
struct TokenBucketStorageTests {
    @Test func aBucketReadBackFromWholeMillisecondsEarnsNothingTwice() {
        // A clock with a fraction of a millisecond, as a real one has.
        let t0 = Date(timeIntervalSince1970: 1_800_000_000.0004)
        var bucket = TokenBucket(rate: 1_000, burst: 10, now: t0)
        var admitted = 0
        // Read back and written again, as a shared bucket is for every batch: the
        // fraction dropped each time must not be earned again.
        for _ in 0..<50 {
            let state = bucket.storedAtWholeMilliseconds
            var restored = TokenBucket(rate: 1_000, burst: 10, tokens: state.tokens, updatedAt: state.updatedAt)
            admitted += restored.take(upTo: 1, now: t0).granted
            bucket = restored
        }
        #expect(admitted == 10)
        #expect(bucket.storedAtWholeMilliseconds.updatedAt.timeIntervalSince1970 * 1000 == (t0.timeIntervalSince1970 * 1000).rounded(.down))
    }
}
