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
