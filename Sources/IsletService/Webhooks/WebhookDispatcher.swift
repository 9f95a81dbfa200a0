public import Foundation
public import IsletBackground
public import IsletCore
import IsletLog
import IsletSync
import Storage

/// One webhook POST as the transport sends it.
public struct WebhookRequest: Sendable {
    /// Where.
    public var url: String
    /// Header fields.
    public var headers: [(name: String, value: String)]
    /// The JSON body.
    public var body: Data
    /// How long it may take, connection included.
    public var timeout: Duration

    /// A request.
    public init(url: String, headers: [(name: String, value: String)], body: Data, timeout: Duration) {
        self.url = url
        self.headers = headers
        self.body = body
        self.timeout = timeout
    }
}

/// What became of one webhook POST.
public enum WebhookReply: Sendable, Hashable {
    /// The endpoint answered with `status` (and maybe a `Retry-After`).
    case answered(status: Int, retryAfter: String?)
    /// No answer: a timeout, a refused connection or address, a TLS failure.
    case failed(reason: String)
}

/// Sends webhook POSTs (libcurl in the server; a test double in unit tests).
public protocol WebhookTransport: Sendable {
    /// Sends `request`; answers the reply and how long it took.
    func post(_ request: WebhookRequest) async -> (reply: WebhookReply, duration: Duration)
}

/// Delivers events to webhooks, durably and at least once: new events become one
/// pending delivery per webhook that takes them; due deliveries are claimed in
/// chains (a webhook's deliveries of one activity, oldest first, sent one after
/// another so that they arrive in order) and sent, many chains at once; each answer
/// is recorded (the chains that end together in one transaction), and a failure is
/// retried by the `WebhookRetryPolicy`. Every attempt
/// of a delivery carries the same `webhook-id` (the event's id).
///
/// Its transactions do not wait for the disk (`durable: false`): what a power loss
/// takes back is redone (events turned into deliveries again, a delivery claimed
/// or sent again, with the same `webhook-id`), and they then leave the database's
/// one writer to the API and the delivery worker sooner.
///
/// `run` is the loop: every quarter second of its sleeper's clock, or when woken, it
/// turns new events into deliveries and sends those due; cancelled, it waits for the
/// chains being sent (their deliveries are recorded, or left to the lease).
public final class WebhookDispatcher: BackgroundService {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = NodeCoordination & EventStore & WebhookStore

    private let environment: ServiceEnvironment
    private let transport: any WebhookTransport
    private let policy: WebhookRetryPolicy
    private let random: Lock<any RandomSource>
    private let sleeper: any Sleeper
    private let state = Lock(State())
    private let doorbell = Doorbell()

    /// Time between two looks when nothing wakes the loop, on the sleeper's clock.
    public static let interval: TimeInterval = 0.25

    /// Deliveries claimed at once, at most.
    static let batchSize = 500
    /// Events turned into deliveries per webhook and round.
    static let fanOutBatch = 2_000
    /// How long a claim holds before another node may take the delivery again.
    static let lease: TimeInterval = 60

    private struct State {
        var chains: [Int: Task<Void, Never>] = [:]
        var nextChain = 0
        var inFlight = 0
        var stopping = false
        /// Chains sent and waiting to be recorded, with their senders.
        var toRecord: [(ChainOutcome, CheckedContinuation<Void, Never>)] = []
        /// Whether a task is recording chains.
        var recording = false
    }

    /// What became of a claimed chain: the attempts made, in order, and the
    /// deliveries left untried behind a failure.
    private struct ChainOutcome {
        var attempts: [(ClaimedWebhookDelivery, WebhookAttempt, Date)]
        var released: [ClaimedWebhookDelivery]
    }

    /// Creates the dispatcher, pacing itself on `sleeper`; nothing is sent until `run`.
    public init(
        environment: ServiceEnvironment, transport: any WebhookTransport, policy: WebhookRetryPolicy = WebhookRetryPolicy(),
        random: any RandomSource = SystemRandomSource(), sleeper: any Sleeper = SystemSleeper()
    ) {
        self.environment = environment
        self.transport = transport
        self.policy = policy
        self.random = Lock(random)
        self.sleeper = sleeper
    }

    /// Sends until cancelled, then waits for the chains being sent.
    public func run() async {
        while !Task.isCancelled {
            _ = await fanOut()
            let started = await claimAndStart()
            if started == 0 { await sleeper.sleep(for: Self.interval, doorbell: doorbell) }
        }
        let chains = state.withLock { state -> [Task<Void, Never>] in
            state.stopping = true
            return Array(state.chains.values)
        }
        for chain in chains { await chain.value }
    }

    /// Looks for work now (events were written, a delivery was retried, a chain
    /// ended).
    public func wake() {
        doorbell.ring()
    }

    // MARK: - Rounds (also called by tests, on the injected clock)

    /// Turns events written since each webhook's cursor into its deliveries (one node
    /// at a time). Answers how many deliveries were added.
    @discardableResult
    public func fanOut() async -> Int {
        let now = environment.clock.now()
        do {
            let latest = try await environment.store.read { (session: any Stores) in try session.latestEventSequence() }
            guard try await !environment.store.read({ (session: any Stores) in
                try session.webhooksBehind(latest)
            }).isEmpty else { return 0 }
            return try await environment.store.write(durable: false) { (session: any Stores) -> Int in
                guard try session.claimPeriodicJob("webhook-fanout") else { return 0 }
                let latest = try session.latestEventSequence()
                var added = 0
                for webhook in try session.webhooksBehind(latest) {
                    let patterns = webhook.events.compactMap(EventPattern.init)
                    let events = try session.events(
                        appID: webhook.appID, after: webhook.cursor, patterns: patterns, limit: Self.fanOutBatch
                    ).filter { $0.sequence <= latest }
                    let cursor = events.count == Self.fanOutBatch ? events.last!.sequence : latest
                    try session.addDeliveries(
                        webhookID: webhook.webhookID, appID: webhook.appID, events: events, cursor: cursor, now: now)
                    added += events.count
                }
                return added
            }
        } catch {
            environment.logger.error("webhook fan-out failed", ("error", .string("\(error)")))
            return 0
        }
    }

    /// Claims due deliveries and sends them, waiting until every chain is recorded:
    /// one whole round, for tests. Answers how many deliveries were claimed.
    @discardableResult
    public func dispatchOnce() async -> Int {
        let claimed = await claim(limit: Self.batchSize)
        await withTaskGroup(of: Void.self) { group in
            for chain in Self.chains(claimed) { group.addTask { [self] in await send(chain) } }
        }
        return claimed.count
    }

    /// Claims what the in-flight limit leaves room for and starts its chains.
    private func claimAndStart() async -> Int {
        let room = state.withLock { Self.batchSize - $0.inFlight }
        guard room > 0 else { return 0 }
        let claimed = await claim(limit: room)
        guard !claimed.isEmpty else { return 0 }
        for chain in Self.chains(claimed) {
            state.withLock { current in
                guard !current.stopping else { return }
                let number = current.nextChain
                current.nextChain += 1
                current.inFlight += chain.count
                current.chains[number] = Task { [self] in
                    await send(chain)
                    state.withLock { after in
                        after.inFlight -= chain.count
                        after.chains[number] = nil
                    }
                    wake()
                }
            }
        }
        return claimed.count
    }

    private func claim(limit: Int) async -> [ClaimedWebhookDelivery] {
        let now = environment.clock.now()
        let nodeID = environment.nodeID
        do {
            guard let next = try await environment.store.read({ (session: any Stores) in
                try session.nextDeliveryTime()
            }), next <= now else { return [] }
            return try await environment.store.write(durable: false) { (session: any Stores) in
                // One claim at a time across nodes, so that a chain is never split.
                guard try session.claimPeriodicJob("webhook-claim") else { return [] }
                return try session.claimDueDeliveries(
                    now: now, limit: limit, nodeID: nodeID, leaseUntil: now.addingTimeInterval(Self.lease))
            }
        } catch {
            environment.logger.error("claiming webhook deliveries failed", ("error", .string("\(error)")))
            return []
        }
    }

    /// Claimed deliveries in chains: those of one webhook and ordering key, in order;
    /// each delivery without a key alone.
    static func chains(_ claimed: [ClaimedWebhookDelivery]) -> [[ClaimedWebhookDelivery]] {
        var order: [String] = []
        var chains: [String: [ClaimedWebhookDelivery]] = [:]
        for item in claimed {
            let key = item.delivery.orderingKey.map { "\(item.delivery.webhookID)\u{0}\($0)" } ?? "#\(item.delivery.sequence)"
            if chains[key] == nil { order.append(key) }
            chains[key, default: []].append(item)
        }
        return order.map { chains[$0]! }
    }

    // MARK: - Sending

    /// Sends a chain in order; the first failure ends it (the rest wait for that one's
    /// retry, so that the order holds), and everything is recorded in one transaction.
    private func send(_ chain: [ClaimedWebhookDelivery]) async {
        var attempts: [(ClaimedWebhookDelivery, WebhookAttempt, Date)] = []
        var released: [ClaimedWebhookDelivery] = []
        var failed = false
        for item in chain {
            if failed {
                released.append(item)
                continue
            }
            let attempt = await attempt(item)
            attempts.append((item, attempt.outcome, attempt.at))
            if attempt.outcome.status != .succeeded { failed = true }
        }
        await record(attempts, released: released)
    }

    private func attempt(_ item: ClaimedWebhookDelivery) async -> (outcome: WebhookAttempt, at: Date) {
        let started = environment.clock.now()
        let body = Data(item.event.jsonText.utf8)
        let id = item.event.id
        let timestamp = Int64(started.timeIntervalSince1970)
        let request = WebhookRequest(
            url: item.url,
            headers: [
                ("content-type", "application/json"), ("webhook-id", id), ("webhook-timestamp", String(timestamp)),
                ("webhook-signature", WebhookSignature.header(id: id, timestamp: timestamp, body: body, secrets: item.secrets)),
            ],
            body: body, timeout: policy.timeout)
        let (reply, duration) = await transport.post(request)
        let now = environment.clock.now()
        let milliseconds = Int(duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let attempts = item.delivery.attempts + 1
        switch reply {
        case .answered(let status, _) where (200..<300).contains(status):
            return (WebhookAttempt(status: .succeeded, responseStatus: status, error: nil, durationMilliseconds: milliseconds, nextAttemptAt: nil), now)
        case .answered(let status, let retryAfter):
            let next = policy.nextAttempt(
                attempts: attempts, createdAt: item.delivery.createdAt, now: now,
                retryAfter: WebhookRetryPolicy.retryAfter(retryAfter, now: now), jitter: jitter())
            return (WebhookAttempt(
                status: next == nil ? .failed : .pending, responseStatus: status, error: "the endpoint answered \(status)",
                durationMilliseconds: milliseconds, nextAttemptAt: next), now)
        case .failed(let reason):
            let next = policy.nextAttempt(
                attempts: attempts, createdAt: item.delivery.createdAt, now: now, retryAfter: nil, jitter: jitter())
            return (WebhookAttempt(
                status: next == nil ? .failed : .pending, responseStatus: nil, error: reason,
                durationMilliseconds: milliseconds, nextAttemptAt: next), now)
        }
    }

    private func jitter() -> Double { random.withLock { Double.random(in: 0...1, using: &$0) } }

    /// Records a chain's attempts and hands back the deliveries it did not try,
    /// together with the other chains that ended meanwhile: one transaction records
    /// every chain waiting (a claim's chains end about together, and a notification's
    /// deliveries are chains of one). Returns once this chain is recorded, or its
    /// transaction failed (its deliveries are then sent again when their claim runs
    /// out).
    private func record(_ attempts: [(ClaimedWebhookDelivery, WebhookAttempt, Date)], released: [ClaimedWebhookDelivery]) async {
        guard !attempts.isEmpty || !released.isEmpty else { return }
        let chain = ChainOutcome(attempts: attempts, released: released)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let leads = state.withLock { state -> Bool in
                state.toRecord.append((chain, continuation))
                guard !state.recording else { return false }
                state.recording = true
                return true
            }
            if leads { Task { [self] in await recordWaitingChains() } }
        }
    }

    /// Records the chains waiting, a transaction at a time, until none waits.
    private func recordWaitingChains() async {
        while true {
            let waiting = state.withLock { state -> [(ChainOutcome, CheckedContinuation<Void, Never>)] in
                let waiting = state.toRecord
                state.toRecord = []
                if waiting.isEmpty { state.recording = false }
                return waiting
            }
            guard !waiting.isEmpty else { return }
            await record(waiting.map(\.0))
            for (_, continuation) in waiting { continuation.resume() }
        }
    }

    /// Records chains' attempts, hands back the deliveries they did not try, and
    /// keeps each webhook's failure clock: a success clears it; failures for
    /// `disableAfter` disable the webhook (its pending deliveries fail, and a
    /// `webhook.disabled` event says so).
    private func record(_ chains: [ChainOutcome]) async {
        let nodeID = environment.nodeID
        let disableAfter = policy.disableAfter
        let now = environment.clock.now()
        do {
            try await environment.store.write(durable: false) { (session: any Stores) in
                for chain in chains {
                    try Self.record(chain, in: session, nodeID: nodeID, disableAfter: disableAfter, now: now)
                }
            }
        } catch {
            environment.logger.error(
                "recording webhook deliveries failed; they are sent again when their claim runs out",
                ("error", .string("\(error)")), ("deliveries", .int(chains.reduce(0) { $0 + $1.attempts.count + $1.released.count })))
        }
    }

    /// Records one chain in `session`.
    private static func record(
        _ chain: ChainOutcome, in session: any Stores, nodeID: String, disableAfter: TimeInterval, now: Date
    ) throws {
        let attempts = chain.attempts
        for (item, attempt, at) in attempts {
            try session.recordAttempt(deliverySequence: item.delivery.sequence, attempt, nodeID: nodeID, now: at)
        }
        try session.releaseDeliveries(chain.released.map(\.delivery.sequence), nodeID: nodeID)
        guard let first = attempts.first, let last = attempts.last else { return }
        if last.1.status == .succeeded {
            // The common answer: the failure clock stops, if it ran.
            try session.clearWebhookFailure(appID: first.0.delivery.appID, webhookID: first.0.delivery.webhookID, now: now)
            return
        }
        guard var webhook = try session.webhook(appID: first.0.delivery.appID, webhookID: first.0.delivery.webhookID),
            webhook.enabled
        else { return }
        let before = webhook
        if attempts.contains(where: { $0.1.status == .succeeded }) {
            // It answered 2xx in this chain: the clock starts at this failure.
            webhook.failingSince = last.2
        } else if let since = webhook.failingSince {
            if now.timeIntervalSince(since) >= disableAfter {
                webhook.enabled = false
                webhook.disabledReason = "every delivery failed for \(Int(disableAfter / 3600)) hours"
                try session.failPendingDeliveries(webhookID: webhook.webhookID, reason: "the webhook was disabled", now: now)
                try session.appendEvents([NewEvent(
                    appID: webhook.appID, type: .webhookDisabled, activityID: nil, occurredAt: now,
                    data: [
                        "webhook_id": .string(webhook.webhookID), "url": .string(webhook.url),
                        "failing_since": .string(RFC3339.string(since)),
                        "reason": .string(webhook.disabledReason ?? ""),
                    ])])
            }
        } else {
            webhook.failingSince = first.2
        }
        if webhook != before {
            webhook.updatedAt = now
            try session.updateWebhook(webhook)
        }
    }
}
