import IsletSync
public import APNs
public import IsletBackground
import Foundation
public import IsletCore
public import IsletLog
import IsletThreads
public import Storage

/// Sends the queued pushes. It runs on a thread of its own (the store's calls block):
/// `run` starts the thread and returns once it stopped, and cancelling `run` stops
/// it, after the answers in flight came or `shutdownGrace` passed. It claims pushes that
/// are due from the store, hands them to a `PushTransport` (whose answers arrive on
/// the transport's threads and are handed back here), and records every answer in
/// one transaction per batch, acting on dead tokens by kind and requeuing what may be
/// retried. A push stays in the store from the moment the API queued it: a push in
/// flight when the process stops is sent again, with the same `apns-id`, on the
/// next start.
///
/// The decisions are `DeliveryStateMachine`'s (when to claim, record, renew, wait,
/// stop) and `DeliveryPolicy`'s (what each answer leads to); this class is the
/// thread, the store and the transport around them. Its waits are its `Sleeper`'s,
/// the stop's grace included: on a `ManualWallClock`, a test moves the clock to end
/// them (a stop with answers in flight returns once the clock passes the grace).
public final class DeliveryWorker: BackgroundService {
    /// Counters for `/metrics`.
    public let metrics = DeliveryMetrics()
    /// The pacing and retry limits.
    public let configuration: DeliveryConfiguration

    private let store: any Store
    private let transport: any PushTransport
    private let clock: any WallClock
    private let sleeper: any Sleeper
    private let logger: Logger
    private let policy: DeliveryPolicy
    private let state = Lock(State())
    /// Rung when pushes are queued, an answer arrives or a stop is asked for.
    private let doorbell = Doorbell()
    /// Rung by a stop only: ends the short pauses that answers must not end.
    private let stopBell = Doorbell()
    /// Draws the retry jitter: the system's random device would cost a system call
    /// per push.
    private let random: Lock<any RandomSource>
    /// When this worker started, as its heartbeat row says.
    private let startedAt: Lock<Date?> = Lock(nil)
    /// Whether an event stream of an app is open (on this node, or another said so
    /// lately): while one is, or a webhook of the app takes them, each push APNs
    /// accepts is a `push.sent` event; otherwise the send's `send.completed` counts
    /// them.
    private let streamsOpen: @Sendable (String) -> Bool

    private struct Answer: Sendable {
        let push: ClaimedPush
        let result: TransportResult
    }

    private struct State {
        var wakeRequested = false
        var stopDeadline: Date?
        var answers: [Answer] = []
        var inFlight = 0

        /// Whether a wait would end at once.
        func hasNews(stopping: Bool) -> Bool {
            wakeRequested || !answers.isEmpty || (stopDeadline != nil && !stopping)
        }
    }

    /// Creates a worker sending through `transport`; nothing happens until `run`.
    /// `clock` says what is due; `sleeper` paces the loop and times the stop's
    /// grace. `random` draws the retry jitter (by default a generator seeded once
    /// from the system).
    public init(
        store: any Store, transport: any PushTransport, configuration: DeliveryConfiguration,
        clock: any WallClock = SystemWallClock(), sleeper: any Sleeper = SystemSleeper(),
        random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max)), logger: Logger,
        streamsOpen: @escaping @Sendable (String) -> Bool = { _ in false }
    ) {
        self.streamsOpen = streamsOpen
        self.random = Lock(random)
        self.store = store
        self.transport = transport
        self.configuration = configuration
        self.clock = clock
        self.sleeper = sleeper
        self.logger = logger
        self.policy = DeliveryPolicy(configuration: configuration)
    }

    /// Creates a worker sending to APNs through `client` (an `APNsTransport` reading
    /// each app's credentials from `store`); nothing happens until `run`. The
    /// caller shuts the client down.
    public convenience init(
        store: any Store, client: APNsClient, configuration: DeliveryConfiguration,
        clock: any WallClock = SystemWallClock(), sleeper: any Sleeper = SystemSleeper(),
        random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max)), logger: Logger,
        streamsOpen: @escaping @Sendable (String) -> Bool = { _ in false }
    ) {
        self.init(
            store: store, transport: APNsTransport(client: client, store: store), configuration: configuration,
            clock: clock, sleeper: sleeper, random: random, logger: logger, streamsOpen: streamsOpen)
    }

    /// Puts pushes left in flight by an earlier run of this node back in the queue
    /// (on a database only this process uses, every push marked in flight; on a
    /// shared one, only those this node's id holds: another live node's are its own)
    /// and beats the first heartbeat.
    public func prepare() throws {
        let now = clock.now()
        let nodeID = configuration.nodeID
        let policy: InFlightPolicy = store.isShared ? .heldBy(nodeID: nodeID) : .requeueAll
        let requeued = try store.writeNow { session in
            try session.recordHeartbeat(nodeID: nodeID, startedAt: now, now: now)
            return try session.requeueInFlight(policy, now: now)
        }
        startedAt.withLock { $0 = now }
        if requeued > 0 {
            logger.notice("resuming pushes left in flight", ("count", .int(requeued)))
        }
    }

    /// Sends on the worker's thread until cancelled; then stops claiming pushes,
    /// waits up to `shutdownGrace` for the answers in flight and records them, hands
    /// back what is still unanswered (sent again on the next start), and returns once
    /// the thread has ended.
    public func run() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
                let thread = Thread { [self] in
                    // Named from inside: on Linux a name given before `start` never
                    // reaches the system (`top -H`, `perf`).
                    nameCurrentThread("islet-delivery")
                    loop()
                    ended.resume()
                }
                thread.start()
            }
        } onCancel: {
            // On the sleeper's clock, as the waits for the answers are.
            let deadline = sleeper.now().addingTimeInterval(configuration.shutdownGrace)
            signal { state in
                if state.stopDeadline == nil { state.stopDeadline = deadline }
            }
            stopBell.ring()
        }
    }

    /// Tells the worker that pushes were queued.
    public func wake() {
        signal { $0.wakeRequested = true }
    }

    /// Pushes handed to APNs and not yet answered.
    public var inFlight: Int { state.withLock { $0.inFlight } }

    /// Changes the state, then rings the doorbell.
    private func signal(_ change: (inout State) -> Void) {
        state.withLock { change(&$0) }
        doorbell.ring()
    }

    // MARK: - The loop

    private func observe(inFlight: Int? = nil) -> DeliveryStateMachine.Observation {
        DeliveryStateMachine.Observation(now: clock.now(), real: sleeper.now(), inFlight: inFlight ?? self.inFlight)
    }

    private func loop() {
        var machine = DeliveryStateMachine(configuration: configuration)
        var sends: [Int64: SendContent] = [:]
        // Answers taken from the transport and not yet recorded.
        var answers: [Answer] = []
        // Pushes claimed and not yet handed to the transport (between `claim` and `send`).
        var held: [ClaimedPush] = []
        // The windows of sends this worker holds, with what their answers came to
        // so far.
        var tallies: [SendWindow: WindowTally] = [:]
        var action = machine.start(real: sleeper.now())
        loop: while true {
            switch action {
            case .wait(let until, let stopping):
                // What arrives after this look rings the doorbell, which ends the wait.
                if !state.withLock({ $0.hasNews(stopping: stopping) }) {
                    sleeper.block(until: until, doorbell: doorbell)
                }
                let (arrived, stopDeadline, inFlight, woken) = state.withLock { state in
                    defer {
                        state.answers.removeAll(keepingCapacity: true)
                        state.wakeRequested = false
                    }
                    return (state.answers, state.stopDeadline, state.inFlight, state.wakeRequested)
                }
                if answers.isEmpty { answers = arrived } else { answers += arrived }
                action = machine.handle(.waited(.init(
                    woken: woken, answers: answers.count, stopDeadline: stopDeadline, observation: observe(inFlight: inFlight))))
            case .gatherAnswers(let pause):
                sleeper.block(for: pause, doorbell: stopBell)
                answers += state.withLock { state -> [Answer] in
                    defer { state.answers.removeAll(keepingCapacity: true) }
                    return state.answers
                }
                action = machine.handle(.gathered(answers: answers.count))
            case .record:
                let recorded = record(answers, tallies: &tallies)
                if recorded { answers.removeAll(keepingCapacity: true) }
                action = machine.handle(.recorded(succeeded: recorded, observe()))
            case .pause(let seconds):
                sleeper.block(for: seconds, doorbell: stopBell)
                action = machine.handle(.paused)
            case .renew(let now):
                if renew(now: now) { signal { $0.wakeRequested = true } }
                action = machine.handle(.renewed(observe()))
            case .claim(let limit, let now):
                if let claimed = claim(limit: limit, now: now, sends: &sends) {
                    held = claimed
                    count(windowsOf: claimed, in: &tallies)
                    action = machine.handle(.claimed(count: claimed.count, observe()))
                } else {
                    action = machine.handle(.claimFailed(observe()))
                }
            case .send:
                let count = send(held)
                held.removeAll(keepingCapacity: true)
                action = machine.handle(.sent(count: count, observe()))
            case .readNextDue:
                let due = try? store.readNow { try $0.nextDueTime() }
                action = machine.handle(.nextDue(due, observe()))
            case .exit:
                break loop
            }
        }
        handBack()
    }

    /// Beats the heartbeat, renews the lease of the pushes this node holds, and (on a
    /// shared database) takes back into the queue the pushes of nodes whose lease
    /// ran out. Answers whether any were taken back (they are due now).
    private func renew(now: Date) -> Bool {
        let nodeID = configuration.nodeID
        let started = startedAt.withLock { $0 } ?? now
        do {
            let takenOver = try store.writeNow(durable: false) { session -> Int in
                try session.recordHeartbeat(nodeID: nodeID, startedAt: started, now: now)
                try session.renewLeases(nodeID: nodeID, until: now.addingTimeInterval(configuration.lease))
                return store.isShared ? try session.requeueInFlight(.leaseExpired, now: now) : 0
            }
            if takenOver > 0 {
                logger.notice("taking over pushes whose node stopped renewing them", ("count", .int(takenOver)))
            }
            return takenOver > 0
        } catch {
            logger.error("cannot renew the node's heartbeat and leases", ("error", .string("\(error)")))
            return false
        }
    }

    /// On exit, hands back to the queue the pushes this node still holds unanswered,
    /// for this or another node to send (with the same `apns-id`), and records that
    /// the node stopped.
    private func handBack() {
        do {
            let handed = try store.writeNow { session in
                let now = clock.now()
                try session.recordNodeStopped(nodeID: configuration.nodeID, at: now)
                return try session.requeueInFlight(.heldBy(nodeID: configuration.nodeID), now: now)
            }
            if handed > 0 { logger.notice("handed back pushes still in flight", ("count", .int(handed))) }
        } catch {
            logger.warning(
                "cannot hand back pushes in flight; they are taken over when their lease runs out",
                ("error", .string("\(error)")))
        }
    }

    /// Claims up to `limit` pushes due at `now` and hands them to the transport;
    /// answers how many, or nil when the store could not be read.
    /// Claims up to `limit` due pushes under this node's lease; `nil` when the store
    /// refused.
    private func claim(limit: Int, now: Date, sends: inout [Int64: SendContent]) -> [ClaimedPush]? {
        do {
            let lease = PushLease(nodeID: configuration.nodeID, until: now.addingTimeInterval(configuration.lease))
            return try store.writeNow(durable: false) {
                try $0.claimDuePushes(now: now, limit: limit, lease: lease, sends: &sends)
            }
        } catch {
            logger.error("cannot claim pushes", ("error", .string("\(error)")))
            return nil
        }
    }

    /// Starts the tally of each window in `claimed`: its size is its pushes.
    private func count(windowsOf claimed: [ClaimedPush], in tallies: inout [SendWindow: WindowTally]) {
        var sizes: [SendWindow: Int] = [:]
        for push in claimed {
            if let window = push.window { sizes[window, default: 0] += 1 }
        }
        for (window, size) in sizes { tallies[window] = WindowTally(size: size) }
    }

    /// Hands `claimed` to the transport; answers how many.
    private func send(_ claimed: [ClaimedPush]) -> Int {
        guard !claimed.isEmpty else { return 0 }
        state.withLock { $0.inFlight += claimed.count }
        transport.send(claimed) { [self] push, result in deliver(Answer(push: push, result: result)) }
        return claimed.count
    }

    private func deliver(_ answer: Answer) {
        signal { state in
            state.answers.append(answer)
            state.inFlight -= 1
        }
    }

    // MARK: - Answers

    /// Records a batch of answers in one transaction; answers false when the
    /// store refused it (the caller keeps the answers for another try).
    private func record(_ answers: [Answer], tallies: inout [SendWindow: WindowTally]) -> Bool {
        let now = clock.now()
        let started = tallies
        var counted: [(String, String?, Double?, String)] = []
        var remaining: [SendWindow: WindowTally] = [:]
        do {
            // The store may run the transaction again (after a lost connection or a
            // conflict): it starts from nothing each time.
            (counted, remaining) = try store.writeNow(durable: false) { session in
                var counted: [(String, String?, Double?, String)] = []
                counted.reserveCapacity(answers.count)
                var tallies = started
                var demand: [String: Bool] = [:]
                let wantsSent = { (appID: String) throws -> Bool in
                    if let known = demand[appID] { return known }
                    let wanted = try self.streamsOpen(appID) || session.webhookTakes(appID: appID, type: .pushSent)
                    demand[appID] = wanted
                    return wanted
                }
                // By index: each answer is read in place, not copied field by field.
                var sent: [SentPush] = []
                var events: [NewEvent] = []
                for index in answers.indices {
                    counted.append(try apply(
                        answers[index], session: session, now: now, sent: &sent, tallies: &tallies, events: &events,
                        wantsSent: wantsSent))
                }
                let recorded = try session.recordSent(sent, by: configuration.nodeID, now: now)
                if !recorded.isEmpty {
                    let byID = Dictionary(sent.map { ($0.pushID, $0) }, uniquingKeysWith: { first, _ in first })
                    for index in answers.indices where recorded.contains(answers[index].push.id) {
                        let push = answers[index].push
                        guard try wantsSent(push.appID) else { continue }
                        let outcome = byID[push.id]
                        if let event = NewEvent.pushSettled(
                            push, status: .sent, attempts: outcome?.attempts ?? 1, apnsStatus: outcome?.apnsStatus,
                            reason: nil, at: now)
                        {
                            events.append(event)
                        }
                    }
                }
                // Each window whose every push was answered is settled in this write.
                for (window, tally) in tallies where tally.isComplete {
                    try session.settleWindow(window, tally, by: configuration.nodeID, now: now)
                }
                try session.appendEvents(events)
                return (counted, tallies.filter { !$0.value.isComplete })
            }
        } catch {
            logger.error("cannot record push results; retrying", ("error", .string("\(error)")), ("count", .int(answers.count)))
            return false
        }
        tallies = remaining
        for (result, reason, latency, transport) in counted {
            metrics.record(result: result, reason: reason, latency: latency, transport: transport)
        }
        return true
    }

    /// Records one answer and acts on it; answers what to count. A plain success is
    /// added to `sent` (a row's, recorded with the others in one statement) or
    /// counted in its window's tally (no row at all).
    private func apply(
        _ answer: Answer, session: any DeviceStore & ActivityStore & PushQueue & ChannelStore, now: Date, sent: inout [SentPush],
        tallies: inout [SendWindow: WindowTally], events: inout [NewEvent], wantsSent: (String) throws -> Bool
    ) throws -> (String, String?, Double?, String) {
        let push = answer.push
        let transport = push.tokenKind == .fcm ? "fcm" : "apns"
        let settlement = try policy.settle(
            push, result: answer.result, now: now, jitter: random.withLock { Double.random(in: 0...1, using: &$0) },
            activityEnded: { try session.activityHasEnded(appID: push.appID, activityID: push.activityID ?? "") })
        let outcome = settlement.outcome
        let ordinary = outcome.status == .sent && outcome.environment == nil && outcome.nextAttemptAt == nil
            && settlement.correctEnvironment == nil && settlement.deadToken == nil
        if let window = push.window {
            tallies[window, default: WindowTally(size: 1)].answered += 1
            if ordinary {
                tallies[window]?.sent += 1
                if try wantsSent(push.appID),
                    let event = NewEvent.pushSettled(
                        push, status: .sent, attempts: outcome.attempts, apnsStatus: outcome.apnsStatus, reason: nil, at: now)
                {
                    events.append(event)
                }
                return (settlement.counted, settlement.reason, settlement.latency, transport)
            }
            // A window another node took over is its own: this answer changes nothing.
            guard try session.recordWindowOutcome(push, outcome, by: configuration.nodeID, now: now) else {
                logger.info(
                    "answer for a window another node took over, not recorded", ("app", .string(push.appID)),
                    ("apns_id", .string(push.apnsID)))
                return (settlement.counted, settlement.reason, settlement.latency, transport)
            }
            tallies[window]?.exceptions += 1
        } else {
            if ordinary {
                sent.append(SentPush(
                    pushID: push.id, attempts: outcome.attempts, apnsStatus: outcome.apnsStatus,
                    serviceMessageID: outcome.serviceMessageID))
                return (settlement.counted, settlement.reason, settlement.latency, transport)
            }
            // Recorded only while this node still holds the push: one whose lease ran
            // out belongs to the node that took it over, and this answer changes nothing.
            guard try session.recordOutcome(pushID: push.id, outcome, by: configuration.nodeID, now: now) else {
                logger.info(
                    "answer for a push another node took over, not recorded", ("app", .string(push.appID)),
                    ("apns_id", .string(push.apnsID)))
                return (settlement.counted, settlement.reason, settlement.latency, transport)
            }
        }
        if try outcome.status != .sent || wantsSent(push.appID),
            let event = NewEvent.pushSettled(
                push, status: outcome.status, attempts: outcome.attempts, apnsStatus: outcome.apnsStatus,
                reason: outcome.reason, at: now)
        {
            events.append(event)
        }
        if let environment = settlement.correctEnvironment {
            try session.correctEnvironment(appID: push.appID, token: push.token, kind: push.tokenKind, environment: environment)
        }
        if let action = settlement.deadToken {
            try actOnDeadToken(push, action, reason: outcome.reason, session: session, now: now, events: &events)
        }
        return (settlement.counted, settlement.reason, settlement.latency, transport)
    }

    /// Acts on a refused token; a refusal older than the token's latest registration
    /// changes nothing.
    private func actOnDeadToken(
        _ push: ClaimedPush, _ action: DeadTokenAction, reason: String?, session: any DeviceStore & ActivityStore & ChannelStore,
        now: Date, events: inout [NewEvent]
    ) throws {
        let acted: Bool
        let done: String
        switch action {
        case .deleteStartToken(let refusedAt, let activityID):
            acted = try session.deleteRefusedStartToken(appID: push.appID, token: push.token, refusedAt: refusedAt)
            if acted, let activityID {
                try session.endCopy(
                    appID: push.appID, activityID: activityID, deviceID: push.deviceID, cause: .tokenRejected, at: now)
            }
            done = "start_token_deleted"
        case .endUpdatedCopy(let activityID, let refusedAt):
            acted = try session.endRefusedCopy(
                appID: push.appID, activityID: activityID, token: push.token, refusedAt: refusedAt, now: now)
            done = "copy_ended"
        case .markDeviceUnreachable(let refusedAt):
            acted = push.tokenKind == .fcm
                ? try session.markAndroidDeviceUnreachable(appID: push.appID, token: push.token, refusedAt: refusedAt, now: now)
                : try session.markDeviceUnreachable(appID: push.appID, token: push.token, refusedAt: refusedAt, now: now)
            done = "device_marked_unreachable"
        case .forgetChannel(let channelID):
            // Forgotten now, or already: either way Islet no longer has it.
            _ = try session.deleteChannel(appID: push.appID, channelID: channelID)
            acted = true
            done = "channel_forgotten"
        }
        var data: [String: JSONValue] = [
            push.tokenKind == .channel ? "channel_id" : "device_id": .string(push.deviceID),
            "token_kind": .string(push.tokenKind.rawValue),
            "apns_id": .string(push.apnsID),
            "action": .string(acted ? done : "kept_registered_again"),
        ]
        if let reason { data["reason"] = .string(reason) }
        if let activityID = push.activityID { data["activity_id"] = .string(activityID) }
        events.append(NewEvent(appID: push.appID, type: .tokenRejected, activityID: push.activityID, occurredAt: now, data: .object(data)))
        if acted, case .markDeviceUnreachable = action {
            events.append(NewEvent(
                appID: push.appID, type: .deviceUnreachable, activityID: nil, occurredAt: now,
                data: ["device_id": .string(push.deviceID), "reason": reason.map(JSONValue.string) ?? .null]))
        }
        logger.info(
            acted ? "dead token retired" : "dead token kept (registered again since)",
            ("app", .string(push.appID)), ("device", .string(push.deviceID)),
            ("kind", .string(push.tokenKind.rawValue)), ("token", .secret(push.token)))
    }
}
