public import Foundation

/// What an app's sends came to over a period, in buckets of equal length: read from
/// what the store keeps (each send's counters, the rows of the pushes that differed,
/// the taps), never from one row per push.
public struct AppOverview: Sendable, Hashable {
    /// One bucket per `bucketSeconds` from the period's start, oldest first, the
    /// empty ones included.
    public var buckets: [OverviewBucket]
    /// The pushes that failed or were dropped, by reason (most first).
    public var failures: [OverviewFailure]
    /// The app's webhooks failing now (disabled, or failing since a time).
    public var failingWebhooks: [FailingWebhook] = []

    public init(buckets: [OverviewBucket], failures: [OverviewFailure]) {
        self.buckets = buckets
        self.failures = failures
    }
}

/// A webhook whose deliveries fail, as the overview names it.
public struct FailingWebhook: Sendable, Hashable {
    public var webhookID: String
    public var url: String
    /// Whether it still delivers (it retries), or was disabled.
    public var enabled: Bool
    /// Since when its deliveries fail; `nil` for one disabled before that was kept.
    public var failingSince: Date?
    /// Why it was disabled.
    public var disabledReason: String?

    public init(webhookID: String, url: String, enabled: Bool, failingSince: Date?, disabledReason: String?) {
        self.webhookID = webhookID
        self.url = url
        self.enabled = enabled
        self.failingSince = failingSince
        self.disabledReason = disabledReason
    }
}

/// What the sends made within one bucket came to (taps by when they were made).
public struct OverviewBucket: Sendable, Hashable {
    public var start: Date
    /// Sends made: a start, update, end, broadcast or alert, however many devices.
    public var sends: Int64 = 0
    /// Pushes those sends were for (one per device, or per channel).
    public var targets: Int64 = 0
    /// Pushes APNs or FCM accepted.
    public var delivered: Int64 = 0
    /// Pushes that failed or were dropped.
    public var failed: Int64 = 0
    /// Pushes a device said it showed (receipts).
    public var received: Int64 = 0
    /// Taps made in the bucket.
    public var taps: Int64 = 0
    /// Pushes sent at priority 5, their copy's priority-10 budget spent.
    public var downgraded: Int64 = 0
    /// Starts held back, their device's starts of the hour spent.
    public var deferred: Int64 = 0
    /// Requests refused by a rate limit (counted by each node, stored every few
    /// seconds).
    public var refused: Int64 = 0
    /// Tokens APNs or FCM said were dead, which Islet acted on (the copy ended, the
    /// push-to-start token removed, or the device marked unreachable).
    public var deadTokens: Int64 = 0

    public init(start: Date) { self.start = start }
}

/// How many pushes failed (or were dropped) for one reason.
public struct OverviewFailure: Sendable, Hashable {
    /// APNs's or FCM's reason, or Islet's (`Superseded`, …); `unknown` without one.
    public var reason: String
    public var count: Int64

    public init(reason: String, count: Int64) {
        self.reason = reason
        self.count = count
    }
}
