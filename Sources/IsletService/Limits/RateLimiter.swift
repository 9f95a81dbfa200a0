public import Foundation
public import IsletBackground
import IsletLog
public import IsletCore
import IsletSync
public import Storage

/// Each app's rate limits, by route family: a token bucket per app and family, with
/// the rate and burst in force for the app (its own figures, else the server's).
///
/// On a database of one node (SQLite) the buckets live in memory. Where nodes share
/// the database (PostgreSQL) each bucket is one row, so that the limit holds for the
/// whole cluster: a node takes tokens from the row in small batches (at most a
/// twentieth of a second's worth, and an eighth of the burst) and spends them
/// locally; a batch not spent within a second lapses. A node that dies takes at most
/// its last batch with it: the cluster never admits more than the limit, and at most
/// one batch per node less.
public final class RateLimiter: Sendable {
    private let environment: ServiceEnvironment
    /// Whether the buckets are shared with other nodes (kept in the database).
    private let shared: Bool
    private let buckets = Lock([Key: Local]())

    /// How long a batch taken from a shared bucket may be spent.
    static let batchLifetime: TimeInterval = 1

    private struct Key: Hashable {
        let appID: String
        let family: RateFamily
    }

    /// A bucket's state on this node: the bucket itself when it lives here, or the
    /// tokens of the last batch taken from the shared one.
    private struct Local {
        var limit: RateLimit
        var bucket: TokenBucket?
        var batch = 0
        var batchUntil = Date.distantPast
        /// The shared bucket as the last batch left it.
        var lastShared: RateDecision?
        /// Until when the shared bucket is taken to be empty, after a batch found
        /// none: a flood past the limit costs the database a few reads a second,
        /// not one a request.
        var emptyUntil = Date.distantPast
    }

    /// How long a node takes a shared bucket that had no token to be still empty,
    /// at most: it may refuse a request the bucket could have admitted that soon.
    static let emptyLifetime: TimeInterval = 0.05

    /// A limiter whose buckets live in the database when `environment`'s store is
    /// shared by several nodes, and in memory otherwise.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
        self.shared = environment.store.isShared
    }

    /// The limit of `family` in force for `app`, or `nil` when there is none.
    public func limit(_ family: RateFamily, app: AppRecord) -> RateLimit? {
        app.rateLimits.limit(family, defaults: environment.rateLimits)
    }

    /// Takes a token for a request of `app` in `family` now: answers what the
    /// answer says of the limit (refused when no token was there), or `nil` when the
    /// family has no limit for the app.
    public func take(_ family: RateFamily, app: AppRecord) async throws(ServiceError) -> RateDecision? {
        guard let limit = limit(family, app: app) else { return nil }
        let key = Key(appID: app.id, family: family)
        let now = environment.clock.now()
        let decision: RateDecision
        if shared {
            if let spent = spendBatch(key, limit: limit, now: now) {
                decision = spent
            } else {
                decision = try await takeBatch(key, limit: limit, now: now)
            }
        } else {
            decision = buckets.withLock { buckets in
                var local = buckets[key] ?? Local(limit: limit)
                var bucket = local.bucket.map { Self.resized($0, to: limit) }
                    ?? TokenBucket(rate: limit.perSecond, burst: Double(limit.burst), now: now)
                let decision = bucket.take(now: now)
                local.limit = limit
                local.bucket = bucket
                buckets[key] = local
                return decision
            }
        }
        return decision
    }

    /// Counts a request of `appID` refused by its `family`'s limit: for `/metrics`,
    /// and by minute for the app's overview (stored by ``flushRefusals()``).
    public func countRefusal(appID: String, family: RateFamily) {
        environment.limitMetrics.refused(appID: appID, family: family)
        let minute = Self.minute(of: environment.clock.now())
        refusals.withLock { $0[RefusalMinute(appID: appID, minute: minute), default: 0] += 1 }
    }

    /// The refusals counted here and not stored yet, by app and minute: at most one
    /// entry per app and minute, however many requests a flood brings.
    private let refusals = Lock([RefusalMinute: Int64]())

    private struct RefusalMinute: Hashable {
        let appID: String
        let minute: Date
    }

    /// How long stored refusals are kept: the overview's longest period, and a day.
    static let refusalsKept: TimeInterval = 8 * 86_400

    /// The start of the minute holding `date`.
    static func minute(of date: Date) -> Date {
        Date(unixMilliseconds: date.unixMilliseconds / 60_000 * 60_000)
    }

    /// Adds the refusals counted since the last flush to the stored counts (one
    /// upsert per app and minute) and forgets those past ``refusalsKept``; with
    /// none counted, writes nothing. Counts that could not be stored are kept for
    /// the next flush.
    public func flushRefusals() async {
        let taken = refusals.withLock { pending -> [RefusalMinute: Int64] in
            defer { pending = [:] }
            return pending
        }
        // Nothing refused: nothing to write (an idle node writes nothing).
        guard !taken.isEmpty else { return }
        let counts = taken.map { RefusalCount(appID: $0.key.appID, minute: $0.key.minute, count: $0.value) }
        let cutoff = environment.clock.now().addingTimeInterval(-Self.refusalsKept)
        do {
            try await environment.write(durable: false) { (session: any RateLimitStore) in
                try session.addRefusals(counts, forgetBefore: cutoff)
            }
        } catch {
            refusals.withLock { pending in
                for (key, count) in taken { pending[key, default: 0] += count }
            }
            environment.logger.error("cannot store the rate-limit refusals", ("error", .string("\(error)")))
        }
    }

    /// Whether the app already has an answer for `key` to replay: a retry of a
    /// request that was accepted is answered even past the limit.
    public func hasAnswer(appID: String, idempotencyKey key: String) async -> Bool {
        let since = environment.clock.now().addingTimeInterval(-environment.idempotencyWindow)
        return (try? await environment.read { (session: any IdempotencyStore) in
            try session.idempotentAnswer(appID: appID, key: key, since: since) != nil
        }) ?? false
    }

    /// How many tokens a node takes from a shared bucket at once.
    static func batchSize(_ limit: RateLimit) -> Int {
        max(1, min(Int(saturating: limit.perSecond / 20), limit.burst / 8))
    }

    /// `bucket` under `limit`, when the app's figures changed since it was made.
    private static func resized(_ bucket: TokenBucket, to limit: RateLimit) -> TokenBucket {
        guard bucket.rate != limit.perSecond || bucket.burst != Double(limit.burst) else { return bucket }
        return TokenBucket(rate: limit.perSecond, burst: Double(limit.burst), tokens: bucket.tokens, updatedAt: bucket.updatedAt)
    }

    /// Spends a token of this node's batch, if one is left and still valid; or
    /// refuses at once while the shared bucket was found empty a moment ago.
    private func spendBatch(_ key: Key, limit: RateLimit, now: Date) -> RateDecision? {
        buckets.withLock { buckets -> RateDecision? in
            guard var local = buckets[key], local.limit == limit, var decision = local.lastShared else { return nil }
            if now < local.emptyUntil { return decision }
            guard local.batch > 0, now < local.batchUntil else { return nil }
            local.batch -= 1
            buckets[key] = local
            decision.admitted = true
            decision.retryAfterSeconds = nil
            decision.remaining += local.batch
            return decision
        }
    }

    /// Takes a batch from the shared bucket, spending its first token now.
    private func takeBatch(_ key: Key, limit: RateLimit, now: Date) async throws(ServiceError) -> RateDecision {
        let size = Self.batchSize(limit)
        // Not waited onto the disk: a bucket lost in a crash is refilled, at worst.
        let (granted, decision) = try await environment.write(durable: false) {
            (session: any RateLimitStore) -> (Int, RateDecision) in
            let stored = try session.lockedRateBucket(appID: key.appID, family: key.family.rawValue)
            var bucket = stored.map {
                TokenBucket(rate: limit.perSecond, burst: Double(limit.burst), tokens: $0.tokens, updatedAt: $0.updatedAt)
            } ?? TokenBucket(rate: limit.perSecond, burst: Double(limit.burst), now: now)
            let taken = bucket.take(upTo: size, now: now)
            if taken.granted > 0 || stored == nil {
                let state = bucket.storedAtWholeMilliseconds
                try session.saveRateBucket(
                    appID: key.appID, family: key.family.rawValue, tokens: state.tokens, updatedAt: state.updatedAt)
            }
            return taken
        }
        return buckets.withLock { buckets -> RateDecision in
            var local = buckets[key] ?? Local(limit: limit)
            local.limit = limit
            local.lastShared = decision
            local.batch = max(0, granted - 1)
            local.batchUntil = now.addingTimeInterval(Self.batchLifetime)
            local.emptyUntil = granted == 0 ? now.addingTimeInterval(min(Self.emptyLifetime, 1 / limit.perSecond)) : .distantPast
            buckets[key] = local
            var answer = decision
            answer.remaining += local.batch
            return answer
        }
    }
}

/// The loop that stores each node's rate-limit refusals for the app overviews: a
/// flush every `interval` on its sleeper, and a last one when cancelled, so that a
/// node that stops loses none it counted.
public final class RefusalKeeper: BackgroundService {
    private let limiter: RateLimiter
    private let sleeper: any Sleeper
    private let interval: TimeInterval

    /// A keeper flushing `limiter` every `interval` seconds on `sleeper`.
    public init(limiter: RateLimiter, sleeper: any Sleeper = SystemSleeper(), interval: TimeInterval = 5) {
        self.limiter = limiter
        self.sleeper = sleeper
        self.interval = interval
    }

    /// Flushes, then sleeps, until cancelled; flushes once more on the way out.
    public func run() async {
        while !Task.isCancelled {
            await sleeper.sleep(for: interval)
            await limiter.flushRefusals()
        }
        await limiter.flushRefusals()
    }
}
