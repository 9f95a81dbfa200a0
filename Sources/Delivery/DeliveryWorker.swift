import IsletSync
public import APNs
public import Foundation
public import IsletCore
import IsletCrypto
public import IsletLog
public import Storage

/// Sends the queued pushes. It runs on a thread of its own: it claims pushes that
/// are due from the store, hands them to the APNs client (whose answers arrive on
/// event-loop threads and are handed back here), and records every answer in one
/// transaction per batch, acting on dead tokens by kind and requeuing what may be
/// retried. A push stays in the store from the moment the API queued it: a push in
/// flight when the process stops is sent again, with the same `apns-id`, on the
/// next start.
public final class DeliveryWorker: Sendable {
    /// Counters for `/metrics`.
    public let metrics = DeliveryMetrics()
    /// The pacing and retry limits.
    public let configuration: DeliveryConfiguration

    private let store: any Store
    private let client: APNsClient
    private let clock: any WallClock
    private let logger: Logger
    private let policy: DeliveryPolicy
    private let state = ConditionLock(State())
    private let keys = Lock<[String: CachedKey]>([:])
    /// Draws the retry jitter: the system's random device would cost a system call
    /// per push.
    private let random: Lock<any RandomSource>

    private struct Answer: Sendable {
        let push: ClaimedPush
        let result: APNsResult
        let latency: Double
    }

    private struct CachedKey: Sendable {
        let updatedAt: Date
        let key: APNsSigningKey?
        let problem: String?
        /// The app could not be read: a passing fault, not a refusal.
        var passing = false
    }

    private struct State {
        var started = false
        var wakeRequested = false
        var stopDeadline: Date?
        var answers: [Answer] = []
        var inFlight = 0
        var exited = false
        var exitWaiters: [CheckedContinuation<Void, Never>] = []
    }

    /// Creates a worker; nothing happens until `start`. `random` draws the retry
    /// jitter (by default a generator seeded once from the system).
    public init(
        store: any Store, client: APNsClient, configuration: DeliveryConfiguration = DeliveryConfiguration(),
        clock: any WallClock = SystemWallClock(), random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max)),
        logger: Logger
    ) {
        self.random = Lock(random)
        self.store = store
        self.client = client
        self.configuration = configuration
        self.clock = clock
        self.logger = logger
        self.policy = DeliveryPolicy(configuration: configuration)
    }

    /// Puts pushes left in flight by an earlier process back in the queue, and starts
    /// the worker's thread.
    public func start() throws {
        guard state.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started
        }) else { return }
        let requeued: Int
        do {
            requeued = try store.writeNow { try $0.requeueInFlight(.requeueAll, now: clock.now()) }
        } catch {
            state.withLock { $0.started = false }
            throw error
        }
        if requeued > 0 {
            logger.notice("resuming pushes left in flight", ("count", .int(requeued)))
        }
        let thread = Thread { [self] in
            // Named from inside: on Linux a name given before `start` never reaches
            // the system (`top -H`, `perf`).
            nameCurrentThread("islet-delivery")
            self.run()
        }
        thread.start()
    }

    /// Tells the worker that pushes were queued.
    public func wake() {
        signal { $0.wakeRequested = true }
    }

    /// Pushes handed to APNs and not yet answered.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// Stops claiming pushes, waits up to `grace` for the answers in flight and
    /// records them, then returns. Pushes still unanswered stay in the store and are
    /// sent again on the next start.
    public func shutdown(grace: TimeInterval) async {
        let started = state.withLock { $0.started }
        guard started else { return }
        signal { $0.stopDeadline = Date().addingTimeInterval(grace) }
        await withCheckedContinuation { continuation in
            let exited = state.withLock { state -> Bool in
                if state.exited { return true }
                state.exitWaiters.append(continuation)
                return false
            }
            if exited { continuation.resume() }
        }
    }

    private func signal(_ change: (inout State) -> Void) {
        state.withLockBroadcasting { change(&$0) }
    }

    // MARK: - The loop

    private func run() {
        var sends: [Int64: SendContent] = [:]
        var nextSweep = Date.distantPast
        var waitUntil = Date()
        var stopping = false
        while true {
            let knownStopping = stopping
            var (answers, stopDeadline, inFlight, woken) = state.wait(
                until: { state in
                    state.wakeRequested || !state.answers.isEmpty || (state.stopDeadline != nil && !knownStopping)
                        || Date() >= waitUntil
                },
                timeout: .seconds(max(0, waitUntil.timeIntervalSinceNow))
            ) { state in
                defer {
                    state.answers.removeAll(keepingCapacity: true)
                    state.wakeRequested = false
                }
                return (state.answers, state.stopDeadline, state.inFlight, state.wakeRequested)
            }

            // Answers come one by one from the event loops: with many in flight, let
            // a few more arrive so that one transaction records them together.
            let batch = max(1, configuration.maxInFlight / 8)
            if !woken && stopDeadline == nil && !answers.isEmpty && answers.count < batch && inFlight >= batch {
                usleep(1_000)
                answers += state.withLock { state -> [Answer] in
                    defer { state.answers.removeAll(keepingCapacity: true) }
                    return state.answers
                }
            }

            if !answers.isEmpty && !record(answers) {
                // Not recorded: keep the answers and try again shortly (a push whose
                // answer is never recorded is sent again after a restart).
                signal { state in state.answers.insert(contentsOf: answers, at: 0) }
                if stopDeadline == nil || Date() < stopDeadline! {
                    usleep(250_000)
                    continue
                }
            }
            if let stopDeadline {
                stopping = true
                if inFlight == 0 || Date() >= stopDeadline { break }
                // Wait for the answers still out (each one signals), or the deadline.
                waitUntil = stopDeadline
                continue
            }
            let now = clock.now()
            if now >= nextSweep {
                sweep(now: now)
                nextSweep = now.addingTimeInterval(configuration.sweepInterval)
            }
            // Claim when new pushes were queued, when nothing is in flight, or when
            // enough slots are free to be worth a transaction; otherwise the next
            // answers free more.
            let inFlightNow = self.inFlight
            let room = configuration.maxInFlight - inFlightNow
            var claimedAll = false
            if room > 0 && (woken || inFlightNow == 0 || room >= batch) {
                guard let claimed = claimAndSend(limit: room, sends: &sends) else {
                    // The store refused; look again shortly rather than spin.
                    waitUntil = Date().addingTimeInterval(0.25)
                    continue
                }
                claimedAll = claimed == room
            }
            // With every slot just filled, answers (which signal) come before
            // anything else is due.
            waitUntil = claimedAll ? Date().addingTimeInterval(0.25) : nextWake()
        }
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.exited = true
            defer { state.exitWaiters = [] }
            return state.exitWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// When to look at the queue again: when the next retry is due, and at least
    /// every quarter second (so that an injected clock moved forward is noticed).
    private func nextWake() -> Date {
        let ceiling = Date().addingTimeInterval(0.25)
        // With every slot taken, an answer (which signals) is what frees one: no
        // need to read the queue.
        guard inFlight < configuration.maxInFlight else { return ceiling }
        guard let due = try? store.readNow({ try $0.nextDueTime() }) else { return ceiling }
        let delay = due.timeIntervalSince(clock.now())
        if delay <= 0 { return Date() }
        return min(ceiling, Date().addingTimeInterval(delay))
    }

    private func sweep(now: Date) {
        do {
            let (expired, purged) = try store.writeNow { session in
                (try session.expireActivities(startedBefore: now.addingTimeInterval(-configuration.lifecycle.total),
                                              total: configuration.lifecycle.total, now: now),
                 try session.purgeIdempotentAnswers(before: now.addingTimeInterval(-configuration.idempotencyRetention)))
            }
            if expired > 0 { logger.info("activities ended by the clock", ("count", .int(expired))) }
            if purged > 0 { logger.debug("idempotency records purged", ("count", .int(purged))) }
        } catch {
            logger.error("sweep failed", ("error", .string("\(error)")))
        }
    }

    /// Claims up to `limit` due pushes and sends them; answers how many, or nil when
    /// the store could not be read.
    private func claimAndSend(limit: Int, sends: inout [Int64: SendContent]) -> Int? {
        let now = clock.now()
        let claimed: [ClaimedPush]
        do {
            claimed = try store.writeNow(durable: false) { try $0.claimDuePushes(now: now, limit: limit, sends: &sends) }
        } catch {
            logger.error("cannot claim pushes", ("error", .string("\(error)")))
            return nil
        }
        guard !claimed.isEmpty else { return 0 }
        var keysByApp: [String: CachedKey] = [:]
        for appID in Set(claimed.map(\.appID)) { keysByApp[appID] = signingKey(appID: appID) }
        state.withLock { $0.inFlight += claimed.count }
        for push in claimed {
            let sentAt = ContinuousClock.now
            guard let key = keysByApp[push.appID]?.key else {
                let problem = keysByApp[push.appID]?.problem ?? "the app has no APNs credentials"
                let passing = keysByApp[push.appID]?.passing ?? false
                let result = APNsResult(
                    disposition: passing ? .retry : .credentialsRejected, response: nil,
                    error: APNsError(passing ? .transport : .credentialsRejected, problem), attempts: 0, apnsID: push.apnsID)
                deliver(Answer(push: push, result: result, latency: 0))
                continue
            }
            let request = APNsRequest(
                deviceToken: push.token, topic: push.content.topic, pushType: push.content.pushType,
                priority: push.content.priority, expiration: push.content.expiration, apnsID: push.apnsID,
                collapseID: push.content.collapseID, payload: push.content.payload)
            client.send(request, key: key, environment: push.environment) { [self] result in
                let elapsed = ContinuousClock.now - sentAt
                let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
                deliver(Answer(push: push, result: result, latency: seconds))
            }
        }
        return claimed.count
    }

    private func deliver(_ answer: Answer) {
        signal { state in
            state.answers.append(answer)
            state.inFlight -= 1
        }
    }

    /// The signing key of an app, parsed once per version of its credentials.
    private func signingKey(appID: String) -> CachedKey {
        let app: AppRecord?
        do {
            app = try store.readNow { try $0.app(id: appID) }
        } catch {
            return CachedKey(updatedAt: .distantPast, key: nil, problem: "cannot read the app: \(error)", passing: true)
        }
        guard let app else { return CachedKey(updatedAt: .distantPast, key: nil, problem: "the app no longer exists") }
        if let cached = keys.withLock({ $0[appID] }), cached.updatedAt == app.updatedAt { return cached }
        let entry: CachedKey
        if let credentials = app.credentials {
            do {
                let key = try P256.SigningKey(pemRepresentation: credentials.privateKeyPEM)
                entry = CachedKey(
                    updatedAt: app.updatedAt,
                    key: APNsSigningKey(keyID: credentials.keyID, teamID: credentials.teamID, key: key), problem: nil)
            } catch {
                entry = CachedKey(updatedAt: app.updatedAt, key: nil, problem: "the APNs private key does not parse: \(error)")
            }
        } else {
            entry = CachedKey(updatedAt: app.updatedAt, key: nil, problem: "the app has no APNs credentials")
        }
        keys.withLock { $0[appID] = entry }
        return entry
    }

    // MARK: - Answers

    /// Records a batch of answers in one transaction; answers false when the
    /// store refused it (the caller keeps the answers for another try).
    private func record(_ answers: [Answer]) -> Bool {
        let now = clock.now()
        var counted: [(String, String?, Double?)] = []
        do {
            try store.writeNow(durable: false) { session in
                // By index: each answer is read in place, not copied field by field.
                for index in answers.indices {
                    counted.append(try apply(answers[index], session: session, now: now))
                }
            }
        } catch {
            logger.error("cannot record push results; retrying", ("error", .string("\(error)")), ("count", .int(answers.count)))
            return false
        }
        for (result, reason, latency) in counted { metrics.record(result: result, reason: reason, latency: latency) }
        return true
    }

    private func decision(for answer: Answer, now: Date) -> DeliveryDecision {
        policy.decide(
            answer.result, round: answer.push.rounds + 1, queuedAt: answer.push.createdAt,
            environmentSwitched: answer.push.environmentSwitched, environment: answer.push.environment, now: now,
            jitter: random.withLock { Double.random(in: 0...1, using: &$0) })
    }

    /// Records one answer and acts on it; answers what to count.
    private func apply(_ answer: Answer, session: any StoreSession, now: Date) throws -> (String, String?, Double?) {
        let push = answer.push
        let result = answer.result
        let reason = DeliveryPolicy.reason(result)
        let latency = result.attempts > 0 ? answer.latency : nil
        var outcome = PushOutcome(
            status: .failed, attempts: result.attempts, apnsStatus: result.response?.status, reason: reason,
            apnsUniqueID: result.response?.uniqueID)
        let counted: String
        var verdict = decision(for: answer, now: now)
        var endedActivity = false
        switch verdict {
        case .retry, .switchEnvironment:
            // The activity ended while this start or update waited: sent later, it
            // would start or change an activity that is over.
            endedActivity = try endedMeanwhile(push, session: session)
        default:
            break
        }
        if endedActivity { verdict = .failed }
        switch verdict {
        case .sent:
            outcome.status = .sent
            if push.environmentSwitched {
                try session.correctEnvironment(
                    appID: push.appID, token: push.token, kind: push.tokenKind, environment: push.environment)
            }
            counted = "sent"
        case .retry(let delay):
            outcome.status = .queued
            outcome.nextAttemptAt = now.addingTimeInterval(delay)
            counted = "retried"
        case .switchEnvironment(let environment):
            outcome.status = .queued
            outcome.nextAttemptAt = now
            outcome.environment = environment
            counted = "switched"
        case .deadToken(let since):
            try actOnDeadToken(push, since: since, session: session, now: now)
            counted = "failed"
        case .failed where endedActivity:
            outcome.status = .dropped
            outcome.reason = "ActivityEnded"
            counted = "dropped"
        case .failed:
            counted = "failed"
        }
        try session.recordOutcome(pushID: push.id, outcome, now: now)
        return (counted, reason, latency)
    }

    /// Whether `push` is a start or an update of an activity that has ended.
    private func endedMeanwhile(_ push: ClaimedPush, session: any StoreSession) throws -> Bool {
        guard push.content.event == .start || push.content.event == .update, let activityID = push.activityID else {
            return false
        }
        return try session.activityHasEnded(appID: push.appID, activityID: activityID)
    }

    /// A rejected push-to-start token is deleted (and the device's pending copy of
    /// the activity ended); a rejected update token ends that
    /// device's copy of the activity and leaves the device alone; a rejected device
    /// token marks the device unreachable. A refusal older than the token's latest
    /// registration changes nothing.
    private func actOnDeadToken(_ push: ClaimedPush, since: Date?, session: any StoreSession, now: Date) throws {
        let acted: Bool
        switch push.tokenKind {
        case .pushToStart:
            acted = try session.deleteRefusedStartToken(appID: push.appID, token: push.token, refusedAt: since)
            if acted, let activityID = push.activityID {
                try session.endInstance(
                    appID: push.appID, activityID: activityID, deviceID: push.deviceID, cause: .tokenRejected, at: now)
            }
        case .liveActivityUpdate:
            guard let activityID = push.activityID else { return }
            acted = try session.endRefusedInstance(
                appID: push.appID, activityID: activityID, token: push.token, refusedAt: since, now: now)
        case .device:
            acted = try session.markDeviceUnreachable(appID: push.appID, token: push.token, refusedAt: since, now: now)
        }
        logger.info(
            acted ? "dead token retired" : "dead token kept (registered again since)",
            ("app", .string(push.appID)), ("device", .string(push.deviceID)),
            ("kind", .string(push.tokenKind.rawValue)), ("token", .secret(push.token)))
    }
}
