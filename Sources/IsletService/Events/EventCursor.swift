public import IsletCore
public import Storage

/// One app's events from a point on, in order, without a gap or a repeat: read
/// from the database while the position is further behind than this node's feed
/// remembers, then from the feed. What a live event stream follows.
public struct EventCursor: Sendable {
    /// The app whose events it follows.
    public let appID: String
    /// The event types it follows (none: all).
    public let patterns: [EventPattern]
    /// The sequence of the last event looked at (given or not).
    public private(set) var position: Int64
    private let feed: EventFeed
    private let events: EventService

    /// Events read per page of the catch-up from the database.
    public static let page = 500

    /// A cursor after the event `after`; without one, from now on.
    public init(feed: EventFeed, events: EventService, appID: String, after: Int64?, patterns: [EventPattern]) {
        self.feed = feed
        self.events = events
        self.appID = appID
        self.patterns = patterns
        position = after ?? feed.cursor
    }

    /// The next events after the position (none when nothing new has come yet),
    /// and the position moved past them.
    public mutating func next() async throws(ServiceError) -> [EventRecord] {
        let batch: [EventRecord]
        var through = position
        if let fresh = feed.events(appID: appID, after: position, patterns: patterns) {
            batch = fresh.events
            through = fresh.through
        } else {
            // Further behind than the feed remembers: from the database. A page that
            // is not full holds everything committed when it was read, which includes
            // all the feed had read before: the cursor goes on from the feed's.
            let feedCursor = feed.cursor
            let page = try await events.page(appID: appID, after: position, patterns: patterns, limit: Self.page)
            batch = page.items
            through = page.items.last?.sequence ?? position
            if page.items.count < Self.page { through = max(through, feedCursor) }
        }
        if through > position { position = through }
        return batch
    }

    /// Waits until the feed reads, past the position, an event this cursor could
    /// take (of its app, of a family its patterns take), or `timeout` passes;
    /// answers whether such news came.
    public func waitForNews(timeout: Duration) async -> Bool {
        await feed.wait(appID: appID, patterns: patterns, after: position, timeout: timeout)
    }
}
