public import Foundation

/// When a failed webhook delivery is tried again, and when Islet gives up: backoff
/// doubling from `base` up to `cap`, with jitter of ±20 %, never sooner than the
/// endpoint's `Retry-After`, for at most `giveUpAfter` from the delivery's creation;
/// an endpoint failing without a success for `disableAfter` is disabled.
public struct WebhookRetryPolicy: Sendable, Hashable {
    /// The first backoff.
    public var base: TimeInterval = 5
    /// The longest backoff.
    public var cap: TimeInterval = 3_600
    /// How long a delivery is retried.
    public var giveUpAfter: TimeInterval = 24 * 3_600
    /// How long an endpoint may fail before it is disabled.
    public var disableAfter: TimeInterval = 24 * 3_600
    /// How long one attempt may take.
    public var timeout: Duration = .seconds(10)

    /// The defaults.
    public init() {}

    /// When to try a delivery again after its `attempts`-th failed attempt at `now`
    /// (`jitter` in 0...1), or nil to give up.
    public func nextAttempt(
        attempts: Int, createdAt: Date, now: Date, retryAfter: TimeInterval?, jitter: Double
    ) -> Date? {
        let doubling = base * pow(2, Double(max(0, attempts - 1)))
        var delay = min(cap, doubling) * (0.8 + 0.4 * min(max(jitter, 0), 1))
        if let retryAfter, retryAfter > delay { delay = retryAfter }
        let next = now.addingTimeInterval(delay)
        return next <= createdAt.addingTimeInterval(giveUpAfter) ? next : nil
    }

    /// The seconds a `Retry-After` value asks for at `now`: a number of seconds, or
    /// an HTTP date (RFC 9110); nil when it is neither.
    public static func retryAfter(_ value: String?, now: Date) -> TimeInterval? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), !text.isEmpty else { return nil }
        if let seconds = Int(text) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        guard let date = formatter.date(from: text) else { return nil }
        return max(0, date.timeIntervalSince(now))
    }
}
