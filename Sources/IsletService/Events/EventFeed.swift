public import Foundation
public import IsletBackground
public import IsletCore
import IsletLog
import IsletSync
public import Storage

/// The newest events of every app, kept in memory for the streams of this node: one
/// reader (`run`) polls the outbox a quarter second apart on its sleeper's clock, and every
/// open stream takes what it needs from here, so that a thousand streams cost one
/// query per poll, not a thousand; the memory is indexed by app and event family, so
/// that a stream looks only at the events it could want (a dashboard following
/// `activity.*` skips a fan-out's `push.*` events without reading them). A stream
/// that is further behind than the memory
/// reads its catch-up from the database. Sequences grow in commit order, so a
/// stream that resumes after one misses none and sees none twice.
public final class EventFeed: BackgroundService {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = EventStore

    private let environment: ServiceEnvironment
    private let capacity: Int
    private let pollInterval: TimeInterval
    private let sleeper: any Sleeper
    private let state = Lock(State())

    private struct State {
        /// Every event after `start - 1`, up to `cursor`, in order.
        var events: [EventRecord] = []
        /// The same events by app, then by family, each list in order.
        var index: [String: [Substring: Bucket]] = [:]
        /// The first sequence `events` is whole from (everything after `start - 1`).
        var start: Int64 = 1
        /// The last sequence read.
        var cursor: Int64 = 0
        var prepared = false
        /// Between `prepare` and the end of `run`: waits for news wait for the polls.
        var running = false
        var waiters: [UInt64: Waiter] = [:]
        /// What each waiter waits for; a waiter without an entry waits for anything.
        var interests: [UInt64: Interest] = [:]
        var nextWaiter: UInt64 = 0

        /// Whether the memory holds, after `after`, an event `interest` takes (any
        /// event without one). Family by family: a pattern naming one type of a
        /// family may be woken by another of it, and finds nothing to send.
        func hasNews(after: Int64, for interest: Interest?) -> Bool {
            guard cursor > after else { return false }
            guard let interest else { return true }
            guard let families = index[interest.appID] else { return false }
            for (family, bucket) in families where interest.families?.contains(family) ?? true {
                if bucket.first(after: after) < bucket.events.count { return true }
            }
            return false
        }
    }

    /// What a stream waits for: one app's events, of some families (all when nil).
    private struct Interest {
        let appID: String
        let families: Set<Substring>?

        init(appID: String, patterns: [EventPattern]) {
            self.appID = appID
            families = patterns.isEmpty || patterns.contains { $0.family == nil } ? nil : Set(patterns.compactMap(\.family))
        }

        func takes(_ touched: [String: Set<Substring>]) -> Bool {
            guard let families = touched[appID] else { return false }
            guard let wanted = self.families else { return true }
            return !wanted.isDisjoint(with: families)
        }
    }

    /// One app's events of one family, in order; those before `head` have left the
    /// memory.
    private struct Bucket {
        var events: [EventRecord] = []
        var head = 0

        /// The index of the first event after `after`.
        func first(after: Int64) -> Int {
            var low = head
            var high = events.count
            while low < high {
                let middle = (low + high) / 2
                if events[middle].sequence <= after { low = middle + 1 } else { high = middle }
            }
            return low
        }
    }

    private enum Waiter {
        /// Registered, waiting for news.
        case waiting(CheckedContinuation<Void, Never>)
        /// Resumed by news; the wait removes it.
        case resumed
        /// The wait ended before it registered; the registration removes it.
        case finished
    }

    /// Creates the feed, polling every `pollInterval` of `sleeper`'s clock; it reads
    /// nothing until `prepare` and `run`.
    public init(
        environment: ServiceEnvironment, capacity: Int = 20_000, pollInterval: TimeInterval = 0.25,
        sleeper: any Sleeper = SystemSleeper()
    ) {
        self.environment = environment
        self.capacity = capacity
        self.pollInterval = pollInterval
        self.sleeper = sleeper
    }

    /// Starts the memory at the newest event.
    public func prepare() throws {
        let latest = try environment.store.readNow { (session: any Stores) in try session.latestEventSequence() }
        state.withLock { state in
            guard !state.prepared else { return }
            state.prepared = true
            state.running = true
            state.cursor = latest
            state.start = latest + 1
        }
    }

    /// Polls until cancelled, then lets every waiting stream go.
    public func run() async {
        state.withLock { $0.running = true }
        while !Task.isCancelled {
            await poll()
            await sleeper.sleep(for: pollInterval)
        }
        state.withLock { $0.running = false }
        resumeAll()
    }

    /// The last sequence read: where a new stream without `Last-Event-ID` starts.
    public var cursor: Int64 { state.withLock { $0.cursor } }

    /// Reads what was committed since the last poll (also called by tests).
    public func poll() async {
        let after = state.withLock { $0.cursor }
        do {
            let fresh = try await environment.store.read { (session: any Stores) in
                try session.events(appID: nil, after: after, patterns: [], limit: 5_000)
            }
            guard !fresh.isEmpty else { return }
            var touched: [String: Set<Substring>] = [:]
            state.withLock { state in
                guard state.cursor == after else { return }
                state.events.append(contentsOf: fresh)
                for event in fresh {
                    state.index[event.appID, default: [:]][EventPattern.family(of: event.type), default: Bucket()].events
                        .append(event)
                }
                state.cursor = fresh.last!.sequence
                for event in fresh { touched[event.appID, default: []].insert(EventPattern.family(of: event.type)) }
                if state.events.count > capacity {
                    let dropped = state.events.count - capacity
                    state.start = state.events[dropped - 1].sequence + 1
                    // The oldest events leave their buckets too (they are each
                    // bucket's oldest); a bucket is compacted once half of it has gone.
                    for event in state.events[..<dropped] {
                        let family = EventPattern.family(of: event.type)
                        guard var bucket = state.index[event.appID]?[family] else { continue }
                        state.index[event.appID]![family] = nil
                        bucket.head += 1
                        if bucket.head == bucket.events.count { continue }  // Empty: gone.
                        if bucket.head >= 1_024 && bucket.head * 2 >= bucket.events.count {
                            bucket.events.removeFirst(bucket.head)
                            bucket.head = 0
                        }
                        state.index[event.appID]![family] = bucket
                    }
                    for (appID, families) in state.index where families.isEmpty { state.index[appID] = nil }
                    state.events.removeFirst(dropped)
                }
            }
            resume(touching: touched)
        } catch {
            environment.logger.warning("reading new events failed", ("error", .string("\(error)")))
        }
    }

    /// What follows `after` for one stream: the events of `appID` and `patterns` the
    /// memory holds (possibly none yet), or nil when `after` is older than the memory
    /// (read the catch-up from the database). `through` is the last sequence looked at.
    public func events(
        appID: String, after: Int64, patterns: [EventPattern]
    ) -> (events: [EventRecord], through: Int64)? {
        state.withLock { state in
            guard after >= state.start - 1 else { return nil }
            guard after < state.cursor else { return ([], max(after, state.cursor)) }
            guard let families = state.index[appID] else { return ([], state.cursor) }
            // Only the families the patterns can take (every one for `*` or none).
            let wanted = Interest(appID: appID, patterns: patterns).families
            var matching: [EventRecord] = []
            var buckets = 0
            for (family, bucket) in families where wanted?.contains(family) ?? true {
                let first = bucket.first(after: after)
                guard first < bucket.events.count else { continue }
                buckets += 1
                for event in bucket.events[first...] where EventPattern.any(patterns, match: event.type) {
                    matching.append(event)
                }
            }
            // Several families' events, merged back into their order.
            if buckets > 1 { matching.sort { $0.sequence < $1.sequence } }
            return (matching, state.cursor)
        }
    }

    /// Waits until the feed reads something new after `after`, or `timeout` passes
    /// on the sleeper's clock.
    public func wait(after: Int64, timeout: Duration) async {
        await wait(after: after, interest: nil, timeout: timeout)
    }

    /// Waits until the feed reads, after `after`, an event of `appID` of a family
    /// `patterns` can take, or `timeout` passes on the sleeper's clock; answers
    /// whether such news came.
    /// Events of other apps and families wake nobody who does not want them: a
    /// thousand dashboards following `activity.*` sleep through a fan-out's `push.*`.
    @discardableResult
    public func wait(appID: String, patterns: [EventPattern], after: Int64, timeout: Duration) async -> Bool {
        await wait(after: after, interest: Interest(appID: appID, patterns: patterns), timeout: timeout)
    }

    @discardableResult
    private func wait(after: Int64, interest: Interest?, timeout: Duration) async -> Bool {
        let id = state.withLock { state -> UInt64 in
            state.nextWaiter += 1
            if let interest { state.interests[state.nextWaiter] = interest }
            return state.nextWaiter
        }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { [self] in
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Bool in
                        if case .finished? = state.waiters[id] {
                            state.waiters[id] = nil
                            return true
                        }
                        if state.hasNews(after: after, for: interest) || !state.running {
                            state.waiters[id] = .resumed
                            return true
                        }
                        state.waiters[id] = .waiting(continuation)
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
            // The time out is the sleeper's, as the polls are: on a manual clock a
            // test moves the clock to end a quiet wait (a stream's keep-alive).
            group.addTask { [sleeper] in await sleeper.sleep(for: Self.seconds(timeout)) }
            await group.next()
            group.cancelAll()
            let waiting = state.withLock { state -> CheckedContinuation<Void, Never>? in
                state.interests[id] = nil
                switch state.waiters.removeValue(forKey: id) {
                case .waiting(let continuation)?: return continuation
                case .resumed?: return nil
                case .finished?, nil:
                    state.waiters[id] = .finished
                    return nil
                }
            }
            waiting?.resume()
        }
        return state.withLock { $0.hasNews(after: after, for: interest) }
    }

    /// `duration` in seconds.
    static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }

    /// Resumes the waiters that want an event of `touched` (app → families), and
    /// those that want any.
    private func resume(touching touched: [String: Set<Substring>]) {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var resumed: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters {
                guard case .waiting(let continuation) = waiter else { continue }
                if let interest = state.interests[id], !interest.takes(touched) { continue }
                resumed.append(continuation)
                state.waiters[id] = .resumed
            }
            return resumed
        }
        for continuation in waiting { continuation.resume() }
    }

    private func resumeAll() {
        let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            var resumed: [CheckedContinuation<Void, Never>] = []
            for (id, waiter) in state.waiters {
                if case .waiting(let continuation) = waiter {
                    resumed.append(continuation)
                    state.waiters[id] = .resumed
                }
            }
            return resumed
        }
        for continuation in waiting { continuation.resume() }
    }
}
