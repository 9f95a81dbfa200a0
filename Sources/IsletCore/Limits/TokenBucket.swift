public import Foundation

/// A token bucket: it fills at `rate` tokens a second up to `burst`, and each
/// request it admits takes one token. Pure: the time is passed in, so a test moves a
/// clock instead of sleeping.
public struct TokenBucket: Sendable, Equatable {
    /// Tokens added a second.
    public let rate: Double
    /// The most tokens it holds: how many requests a full bucket admits at once.
    public let burst: Double
    /// Tokens held at `updatedAt`.
    public private(set) var tokens: Double
    /// When `tokens` was brought up to date.
    public private(set) var updatedAt: Date

    /// A full bucket at `now`. `rate` is meant above 0 and `burst` at least 1
    /// (``RateLimit/bounded`` keeps them so); figures outside take the nearest
    /// that are not (a positive rate, a burst of one, finite), so that no figure,
    /// whatever was stored, stops the arithmetic.
    public init(rate: Double, burst: Double, now: Date) {
        self.rate = rate > 0 ? min(rate, .greatestFiniteMagnitude) : .leastNonzeroMagnitude
        self.burst = burst >= 1 ? min(burst, .greatestFiniteMagnitude) : 1
        self.tokens = self.burst
        self.updatedAt = now
    }

    /// A bucket as it was stored: `tokens` at `updatedAt` (at most `burst`), under a
    /// rate and burst that may have changed since. `tokens` may be below zero: a
    /// bucket stored as of a moment before it was last brought up to date (see
    /// ``storedAtWholeMilliseconds``) owes what it earned in between, never more
    /// than a second's worth and a burst. Tokens that are not a number take a full
    /// bucket.
    public init(rate: Double, burst: Double, tokens: Double, updatedAt: Date) {
        self.init(rate: rate, burst: burst, now: updatedAt)
        self.tokens = tokens.isNaN ? self.burst : min(self.burst, max(-(self.rate + self.burst), tokens))
    }

    /// The same bucket as of `updatedAt` rounded down to a whole millisecond (what a
    /// database column of milliseconds holds): the tokens earned in the fraction
    /// are taken back, so that the bucket read back earns them once, not twice.
    public var storedAtWholeMilliseconds: (tokens: Double, updatedAt: Date) {
        let milliseconds = (updatedAt.timeIntervalSince1970 * 1000).rounded(.down)
        let whole = Date(timeIntervalSince1970: milliseconds / 1000)
        return (max(-(rate + burst), tokens - updatedAt.timeIntervalSince(whole) * rate), whole)
    }

    /// Takes up to `count` whole tokens at `now`, as many as are there: answers how
    /// many, and the state after (admitted when at least one was taken).
    public mutating func take(upTo count: Int, now: Date) -> (granted: Int, decision: RateDecision) {
        refill(now)
        let granted = max(0, min(count, Int(saturating: tokens.rounded(.down))))
        tokens -= Double(granted)
        return (granted, decision(admitted: granted > 0))
    }

    /// Takes a token at `now` when one is there, and answers what the request's
    /// answer says of the limit.
    public mutating func take(now: Date) -> RateDecision {
        refill(now)
        guard tokens >= 1 else { return decision(admitted: false) }
        tokens -= 1
        return decision(admitted: true)
    }

    /// The bucket's state at `now`, without taking a token.
    public mutating func state(now: Date) -> RateDecision {
        refill(now)
        return decision(admitted: tokens >= 1)
    }

    /// Adds what the time since `updatedAt` earned. A clock that goes back earns
    /// nothing and does not move `updatedAt` back.
    private mutating func refill(_ now: Date) {
        let elapsed = now.timeIntervalSince(updatedAt)
        guard elapsed > 0 else { return }
        // An infinite earning (a huge rate over a long time) fills the bucket; a
        // NaN (only from a date that is not one) leaves it as it was.
        let earned = tokens + elapsed * rate
        if !earned.isNaN { tokens = min(burst, earned) }
        updatedAt = now
    }

    private func decision(admitted: Bool) -> RateDecision {
        RateDecision(
            admitted: admitted, quota: Int(saturating: burst), windowSeconds: Self.wholeSeconds(burst / rate),
            remaining: max(0, Int(saturating: tokens.rounded(.down))),
            resetSeconds: Self.wholeSeconds((burst - tokens) / rate, atLeast: 0),
            retryAfterSeconds: admitted ? nil : Self.wholeSeconds((1 - tokens) / rate))
    }

    /// `seconds` rounded up to whole seconds, at least `atLeast`; a time too long
    /// for an `Int` (a rate near 0) is the longest one holds.
    private static func wholeSeconds(_ seconds: Double, atLeast: Int = 1) -> Int {
        max(atLeast, Int(saturating: seconds.rounded(.up)))
    }
}

/// What a token bucket answered a request, in the terms of the `RateLimit-Policy`
/// and `RateLimit` fields (draft-ietf-httpapi-ratelimit-headers-11): a quota of
/// `quota` requests in a window of `windowSeconds` (a full bucket, and the time it
/// takes to fill), `remaining` of them now, the bucket full again in
/// `resetSeconds`.
public struct RateDecision: Sendable, Equatable {
    /// Whether the request is admitted.
    public var admitted: Bool
    /// The policy's quota (`q`): the bucket's size.
    public var quota: Int
    /// The policy's window (`w`), in seconds: how long an empty bucket takes to fill.
    public var windowSeconds: Int
    /// Requests admitted at once from now (`r`).
    public var remaining: Int
    /// Seconds until the bucket is full again (`t`).
    public var resetSeconds: Int
    /// For a refused request, the seconds until a token is there (`Retry-After`).
    public var retryAfterSeconds: Int?

    /// Creates a decision.
    public init(admitted: Bool, quota: Int, windowSeconds: Int, remaining: Int, resetSeconds: Int, retryAfterSeconds: Int?) {
        self.admitted = admitted
        self.quota = quota
        self.windowSeconds = windowSeconds
        self.remaining = remaining
        self.resetSeconds = resetSeconds
        self.retryAfterSeconds = retryAfterSeconds
    }

    /// The `RateLimit-Policy` field's member for the policy `name`.
    public func policyField(_ name: String) -> String {
        "\"\(name)\";q=\(quota);w=\(windowSeconds)"
    }

    /// The `RateLimit` field's member for the policy `name`.
    public func limitField(_ name: String) -> String {
        "\"\(name)\";r=\(remaining);t=\(resetSeconds)"
    }
}
