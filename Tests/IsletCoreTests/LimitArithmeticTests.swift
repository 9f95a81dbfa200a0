import Foundation
import IsletCore
import Testing

/// 1e-320, a subnormal number, read from text: a literal of it warns that it loses
/// precision.
private let subnormal = Double("1e-320")!

/// The limits' arithmetic over figures at and past every edge (0, -0, subnormals,
/// the largest finite number, infinities, NaN, Int64.max): whatever a figure is,
/// the bucket answers and never traps. A figure stored by an older version, or by
/// hand, must not stop the server on the next request.
@Suite("Limits: arithmetic that holds for any figure")
struct LimitArithmeticTests {
    private let t0 = Date(timeIntervalSince1970: 1_800_000_000)

    /// Numbers at and past every edge a figure may reach.
    static let extremes: [Double] = [
        0, -0.0, 1e-12, subnormal, .leastNonzeroMagnitude, .leastNormalMagnitude, 1.0 / 3_600, 0.5, 1, 1_000_000,
        10_000_000, 1e300, .greatestFiniteMagnitude, .infinity, -1, -1e300, -.greatestFiniteMagnitude, -.infinity, .nan,
        Double(Int64.max), -Double(Int64.max),
    ]
    /// Whole numbers at and past every edge a count may reach.
    static let extremeCounts: [Int] = [.min, -1, 0, 1, 10_000_000, 10_000_001, 100_000, 100_001, .max]

    /// Checks that a decision is one a response can carry.
    private func expectSane(_ decision: RateDecision, _ context: String) {
        #expect(decision.quota >= 1, "\(context)")
        #expect(decision.windowSeconds >= 1, "\(context)")
        #expect(decision.remaining >= 0 && decision.remaining <= decision.quota, "\(context)")
        #expect(decision.resetSeconds >= 0, "\(context)")
        if let retry = decision.retryAfterSeconds { #expect(retry >= 1 && !decision.admitted, "\(context)") }
        _ = decision.policyField("sends") + decision.limitField("sends")
    }

    @Test func aBucketOfAnyRateAndBurstAnswersEveryRequest() {
        let moments = [
            t0, t0.addingTimeInterval(-1), t0.addingTimeInterval(0.001), t0.addingTimeInterval(3_600),
            t0.addingTimeInterval(1e12), .distantFuture, .distantPast, t0,
        ]
        for rate in Self.extremes {
            for burst in Self.extremes {
                let context = "rate \(rate), burst \(burst)"
                var bucket = TokenBucket(rate: rate, burst: burst, now: t0)
                #expect(bucket.rate > 0 && bucket.rate.isFinite && bucket.burst >= 1 && bucket.burst.isFinite, "\(context)")
                for now in moments {
                    expectSane(bucket.take(now: now), context)
                    expectSane(bucket.state(now: now), context)
                    for count in [1, 8, Int.max] {
                        let taken = bucket.take(upTo: count, now: now)
                        #expect(taken.granted >= 0 && taken.granted <= count, "\(context)")
                        expectSane(taken.decision, context)
                    }
                    let stored = bucket.storedAtWholeMilliseconds
                    #expect(!stored.tokens.isNaN, "\(context)")
                    bucket = TokenBucket(rate: rate, burst: burst, tokens: stored.tokens, updatedAt: stored.updatedAt)
                }
            }
        }
    }

    @Test func aStoredBucketOfAnyStateAnswers() {
        let dates = [
            t0, Date(unixMillisecondsForTest: .max), Date(unixMillisecondsForTest: .min), .distantFuture, .distantPast,
            Date(timeIntervalSince1970: 1e300), Date(timeIntervalSince1970: -1e300),
        ]
        for tokens in Self.extremes {
            for updatedAt in dates {
                for (rate, burst) in [(1.0 / 3_600, 10_000_000.0), (1_000_000, 1), (2, 4)] {
                    let context = "tokens \(tokens) at \(updatedAt.timeIntervalSince1970), rate \(rate), burst \(burst)"
                    var bucket = TokenBucket(rate: rate, burst: burst, tokens: tokens, updatedAt: updatedAt)
                    #expect(bucket.tokens <= burst && bucket.tokens >= -(rate + burst), "\(context)")
                    expectSane(bucket.take(now: t0), context)
                    expectSane(bucket.take(upTo: .max, now: t0).decision, context)
                    _ = bucket.storedAtWholeMilliseconds
                }
            }
        }
    }

    @Test func theSlowestRateAndLargestBurstAllowedGiveExactFields() {
        var bucket = TokenBucket(
            rate: RateLimit.perSecondRange.lowerBound, burst: Double(RateLimit.burstRange.upperBound), now: t0)
        let first = bucket.take(now: t0)
        // Ten million requests in the 36 billion seconds an empty bucket takes to fill.
        #expect(first.policyField("registrations") == "\"registrations\";q=10000000;w=36000000000")
        #expect(first.limitField("registrations") == "\"registrations\";r=9999999;t=3600")
        var slow = TokenBucket(rate: RateLimit.perSecondRange.lowerBound, burst: 1, now: t0)
        #expect(slow.take(now: t0).admitted)
        let refused = slow.take(now: t0)
        #expect(!refused.admitted && refused.retryAfterSeconds == 3_600 && refused.windowSeconds == 3_600)
    }

    @Test func anAppsLimitIsAlwaysWithinTheRangesWhateverWasStored() {
        for rate in Self.extremes {
            for burst in Self.extremeCounts + [nil] {
                let context = "rate \(rate), burst \(String(describing: burst))"
                for overrides in [
                    RateLimitOverrides(sendsPerSecond: rate, sendsBurst: burst),
                    RateLimitOverrides(registrationsPerSecond: rate, registrationsBurst: burst),
                ] {
                    // Read back from the JSON it is stored as, too.
                    for stored in [overrides, RateLimitOverrides(json: overrides.json)] {
                        for family in RateFamily.allCases {
                            guard let limit = stored.limit(family, defaults: .none) else { continue }
                            #expect(RateLimit.perSecondRange.contains(limit.perSecond), "\(context)")
                            #expect(RateLimit.burstRange.contains(limit.burst), "\(context)")
                        }
                    }
                    // A rate not above 0 is no limit.
                    let family: RateFamily = overrides.sendsPerSecond != nil ? .sends : .registrations
                    #expect((overrides.limit(family, defaults: .none) == nil) == !(rate > 0), "\(context)")
                }
            }
            let burst = RateLimit.defaultBurst(perSecond: rate)
            #expect(RateLimit.burstRange.contains(burst), "rate \(rate)")
        }
        // Server defaults out of range are brought within too.
        let defaults = RateLimitDefaults(sendsPerSecond: subnormal, sendsBurst: .max)
        #expect(RateLimitOverrides.none.limit(.sends, defaults: defaults) == RateLimit(perSecond: 1.0 / 3_600, burst: 10_000_000))
        #expect(RateLimit(perSecond: .nan, burst: .min).bounded == RateLimit(perSecond: 1.0 / 3_600, burst: 1))
        #expect(RateLimit(perSecond: 1e300, burst: 0).bounded == RateLimit(perSecond: 1_000_000, burst: 1))
        // Within the ranges, a figure is kept as it is.
        #expect(RateLimit(perSecond: 0.5, burst: 3).bounded == RateLimit(perSecond: 0.5, burst: 3))
    }

    @Test func aBudgetIsAlwaysWithinItsRangeWhateverWasStored() {
        let t0 = self.t0
        for figure in Self.extremeCounts {
            let overrides = BudgetOverrides(
                priority10PerHour: figure, frequentPriority10PerHour: figure, startsPerDevicePerHour: figure)
            for stored in [overrides, BudgetOverrides(json: overrides.json)] {
                let budget = stored.applied(to: .standard)
                for value in [budget.priority10PerHour, budget.frequentPriority10PerHour, budget.startsPerDevicePerHour] {
                    #expect(SendBudget.range.contains(value), "figure \(figure)")
                }
                for used in [0, 1, 100_000, Int.max] {
                    #expect(budget.priority10Remaining(used: used, frequentUpdates: nil) >= 0)
                    _ = budget.downgrades(used: used, frequentUpdates: true)
                }
                let recent = (0..<3).map { t0.addingTimeInterval(Double(-$0) * 60) }
                #expect(budget.nextStart(after: recent, now: t0) >= t0)
            }
        }
        // Within the range, a figure is kept as it is.
        #expect(BudgetOverrides(priority10PerHour: 7).applied(to: .standard).priority10PerHour == 7)
    }

    @Test func aDoubleBecomesAWholeNumberWithoutTrapping() {
        #expect(Int(saturating: .nan) == 0)
        #expect(Int(saturating: .infinity) == .max && Int(saturating: -.infinity) == .min)
        #expect(Int(saturating: 1e300) == .max && Int(saturating: -1e300) == .min)
        #expect(Int(saturating: Double(Int64.max)) == .max && Int(saturating: Double(Int64.min)) == .min)
        #expect(Int(saturating: -0.0) == 0 && Int(saturating: .leastNonzeroMagnitude) == 0 && Int(saturating: subnormal) == 0)
        #expect(Int(saturating: 1.9) == 1 && Int(saturating: -1.9) == -1)
        #expect(Int64(saturating: 9_007_199_254_740_992) == 9_007_199_254_740_992)
        #expect(Int32(saturating: 3e9) == .max && UInt8(saturating: -1) == 0)
    }

    @Test func aDateOutsideTheYearsRFC3339WritesIsWrittenAsTheNearest() {
        #expect(RFC3339.string(Date(timeIntervalSince1970: 1e300)) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: -1e300)) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.string(Date(unixMillisecondsForTest: .max)) == "9999-12-31T23:59:59.999Z")
        #expect(RFC3339.string(Date(unixMillisecondsForTest: .min)) == "0000-01-01T00:00:00.000Z")
        #expect(RFC3339.string(Date(timeIntervalSince1970: 1_800_000_000.5)) == "2027-01-15T08:00:00.500Z")
    }
}

extension Date {
    /// The date `milliseconds` after 1970, as the store reads one.
    fileprivate init(unixMillisecondsForTest milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
