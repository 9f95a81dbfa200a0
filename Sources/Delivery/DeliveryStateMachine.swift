public import Foundation

/// The delivery worker's loop as a value: fed what the worker's thread observed, it
/// answers what to do next. It does no I/O and reads no clock: each event carries the
/// times, so that a test can drive it on made-up time.
///
/// One turn of the loop: wait (for a wake, answers, a stop, or a time); let a few more
/// answers arrive when many are in flight; record the answers in one transaction; when
/// stopping, wait for what is in flight up to the deadline, then exit; renew the
/// node's heartbeat and leases when its interval has passed; claim (when woken, when nothing is in flight, or when at least
/// a batch of slots is free), then send what was claimed; then wait until the next push is due, a quarter
/// second at most (so that an injected clock moved forward is noticed).
///
/// Two times run through it: `now` is the injected clock's (what is due, when to
/// renew); `real` is the sleeper's (how long to wait, the stop deadline: the system's
/// time in a server). A test that stops only its domain clock (a `ManualWallClock`
/// as the clock, the system's sleeper) stalls neither the loop nor a stop. A test
/// that paces the worker on a `ManualWallClock` too stops it on that clock: a stop
/// with answers still in flight waits until the test moves the clock past the
/// shutdown grace, as every other wait of the worker does.
public struct DeliveryStateMachine: Sendable {
    /// What the worker's thread saw, at the moment it reports an event.
    public struct Observation: Sendable, Equatable {
        /// The injected clock's time.
        public var now: Date
        /// The sleeper's time (the system's in a server).
        public var real: Date
        /// Pushes handed to the transport and not yet answered.
        public var inFlight: Int

        /// Creates an observation.
        public init(now: Date, real: Date, inFlight: Int) {
            self.now = now
            self.real = real
            self.inFlight = inFlight
        }
    }

    /// What a wait ended with.
    public struct Wakeup: Sendable, Equatable {
        /// Pushes were queued since the last wait.
        public var woken: Bool
        /// Answers held, not yet recorded.
        public var answers: Int
        /// When a stop was asked for: the time (sleeper's) after which the worker stops
        /// waiting for answers in flight.
        public var stopDeadline: Date?
        /// The times and pushes in flight when the wait ended.
        public var observation: Observation

        /// Creates a wakeup.
        public init(woken: Bool, answers: Int, stopDeadline: Date?, observation: Observation) {
            self.woken = woken
            self.answers = answers
            self.stopDeadline = stopDeadline
            self.observation = observation
        }
    }

    /// What the worker's thread tells the machine.
    public enum Event: Sendable, Equatable {
        /// A wait ended.
        case waited(Wakeup)
        /// After `gatherAnswers`: answers now held.
        case gathered(answers: Int)
        /// After `record`: whether the store took the answers.
        case recorded(succeeded: Bool, Observation)
        /// After `pause`.
        case paused
        /// After `renew` (whether or not it succeeded: the next interval tries again,
        /// well before the lease runs out).
        case renewed(Observation)
        /// After `claim`: how many pushes were claimed (held by the worker, not yet
        /// sent).
        case claimed(count: Int, Observation)
        /// After `send`: how many pushes were handed to the transport.
        case sent(count: Int, Observation)
        /// After `claim`: the store refused.
        case claimFailed(Observation)
        /// After `readNextDue`: when the next queued push is due (`nil` when none is,
        /// or the store could not tell).
        case nextDue(Date?, Observation)
    }

    /// What the worker's thread does next.
    public enum Action: Sendable, Equatable {
        /// Wait until pushes are queued, answers arrive, a stop is asked for (unless
        /// `stopping` already), or the sleeper's time `until`.
        case wait(until: Date, stopping: Bool)
        /// Sleep `pause` seconds, then take the answers that arrived meanwhile.
        case gatherAnswers(pause: TimeInterval)
        /// Record the answers held, in one transaction.
        case record
        /// Sleep `seconds`, keeping the answers held (the store refused them).
        case pause(seconds: TimeInterval)
        /// Beat the node's heartbeat, renew the lease of its pushes in flight, and take
        /// back into the queue pushes whose lease ran out.
        case renew(now: Date)
        /// Claim up to `limit` due pushes under this node's lease.
        case claim(limit: Int, now: Date)
        /// Hand the `count` pushes just claimed to the transport.
        case send(count: Int)
        /// Read when the next queued push is due.
        case readNextDue
        /// Stop the loop (answers still in flight stay in the store, sent again on
        /// the next start).
        case exit
    }

    /// How long answers are let gather when many are in flight.
    public static let gatherPause: TimeInterval = 0.001
    /// How long the worker waits after the store refused, and at most between looks
    /// at the queue.
    public static let ceiling: TimeInterval = 0.25

    /// Pushes in flight at most.
    public let maxInFlight: Int
    /// How often the heartbeat and lease renewal run (injected-clock seconds).
    public let renewInterval: TimeInterval
    /// Answers worth one transaction, and free slots worth one claim.
    public let batch: Int

    private var nextRenewal = Date.distantPast
    private var stopping = false
    // This turn's wakeup.
    private var woken = false
    private var answers = 0
    private var stopDeadline: Date?
    private var inFlightAtWakeup = 0
    private var claimLimit = 0

    /// A machine pacing by `configuration`.
    public init(configuration: DeliveryConfiguration) {
        maxInFlight = configuration.maxInFlight
        renewInterval = configuration.renewInterval
        batch = max(1, configuration.maxInFlight / 8)
    }

    /// The first action: look at once.
    public func start(real: Date) -> Action {
        .wait(until: real, stopping: false)
    }

    /// The action that follows `event`.
    public mutating func handle(_ event: Event) -> Action {
        switch event {
        case .waited(let wakeup):
            woken = wakeup.woken
            answers = wakeup.answers
            stopDeadline = wakeup.stopDeadline
            inFlightAtWakeup = wakeup.observation.inFlight
            // Answers come one by one from the transport: with many in flight, let a
            // few more arrive so that one transaction records them together.
            if !woken && stopDeadline == nil && answers > 0 && answers < batch && inFlightAtWakeup >= batch {
                return .gatherAnswers(pause: Self.gatherPause)
            }
            return answers > 0 ? .record : afterRecording(wakeup.observation)
        case .gathered(let count):
            answers = count
            return .record
        case .recorded(let succeeded, let observation):
            if !succeeded, stopDeadline.map({ observation.real < $0 }) ?? true {
                // Not recorded: keep the answers and try again shortly (a push whose
                // answer is never recorded is sent again after a restart).
                return .pause(seconds: Self.ceiling)
            }
            return afterRecording(observation)
        case .paused:
            // Look again at once: the answers kept are recorded with any new ones.
            return .wait(until: .distantPast, stopping: stopping)
        case .renewed(let observation):
            return claimOrWait(observation)
        case .claimed(let count, let observation):
            // What was claimed goes out at once; nothing claimed, nothing to send.
            return count > 0 ? .send(count: count) : nextLook(observation)
        case .sent(let count, let observation):
            // With every slot just filled, answers (which signal) come before
            // anything else is due.
            if count == claimLimit { return .wait(until: observation.real.addingTimeInterval(Self.ceiling), stopping: false) }
            return nextLook(observation)
        case .claimFailed(let observation):
            // The store refused; look again shortly rather than spin.
            return .wait(until: observation.real.addingTimeInterval(Self.ceiling), stopping: false)
        case .nextDue(let due, let observation):
            let ceiling = observation.real.addingTimeInterval(Self.ceiling)
            guard let due else { return .wait(until: ceiling, stopping: false) }
            let delay = due.timeIntervalSince(observation.now)
            if delay <= 0 { return .wait(until: observation.real, stopping: false) }
            return .wait(until: min(ceiling, observation.real.addingTimeInterval(delay)), stopping: false)
        }
    }

    private mutating func afterRecording(_ observation: Observation) -> Action {
        if let stopDeadline {
            stopping = true
            // In flight as the wait ended: an answer that came since is still to be
            // recorded, so it is not counted as settled.
            if inFlightAtWakeup == 0 || observation.real >= stopDeadline { return .exit }
            // Wait for the answers still out (each one signals), or the deadline.
            return .wait(until: stopDeadline, stopping: true)
        }
        if observation.now >= nextRenewal {
            nextRenewal = observation.now.addingTimeInterval(renewInterval)
            return .renew(now: observation.now)
        }
        return claimOrWait(observation)
    }

    /// Claim when new pushes were queued, when nothing is in flight, or when enough
    /// slots are free to be worth a transaction; otherwise the next answers free more.
    private mutating func claimOrWait(_ observation: Observation) -> Action {
        let room = maxInFlight - observation.inFlight
        if room > 0 && (woken || observation.inFlight == 0 || room >= batch) {
            claimLimit = room
            return .claim(limit: room, now: observation.now)
        }
        return nextLook(observation)
    }

    /// With every slot taken, an answer (which signals) is what frees one: no need to
    /// read the queue.
    private func nextLook(_ observation: Observation) -> Action {
        guard observation.inFlight < maxInFlight else {
            return .wait(until: observation.real.addingTimeInterval(Self.ceiling), stopping: false)
        }
        return .readNextDue
    }
}
