public import Foundation
public import IsletCore
public import Storage

/// What the worker does with a push once the transport has given its result: the
/// one place where a result becomes a status, a retry (now or later), or a change to
/// the registry. Transports make one attempt per push and never retry on their own.
public enum DeliveryDecision: Sendable, Equatable {
    /// The push service accepted it.
    case sent
    /// Queue it again, to be tried after `delay` seconds (0: at once).
    case retry(after: TimeInterval)
    /// BadDeviceToken may mean a sandbox token sent to production or the reverse:
    /// send it once more, at once, to `environment`.
    case switchEnvironment(to: APNsEnvironment)
    /// The service says the token is dead (since `since`, when it says): act by token kind.
    case deadToken(since: Date?)
    /// Give up; nothing about the token follows from it.
    case failed
}

/// What to do about a token the push service refused, by the kind of token. The
/// store does nothing when the token was registered again after `refusedAt`.
public enum DeadTokenAction: Sendable, Equatable {
    /// Delete the push-to-start token; when it was deleted and the push started
    /// `endingCopyOf`, end the device's pending copy of that activity.
    case deleteStartToken(refusedAt: Date?, endingCopyOf: String?)
    /// End the device's copy of `activityID` whose update token it was.
    case endUpdatedCopy(activityID: String, refusedAt: Date?)
    /// Mark the device unreachable.
    case markDeviceUnreachable(refusedAt: Date?)
    /// Forget the broadcast channel `channelID`: APNs no longer has it.
    case forgetChannel(channelID: String)
}

/// Everything one answer leads to: the outcome to record, what to do to the
/// registry, and what to count.
public struct Settlement: Sendable {
    /// The push's new state.
    public var outcome: PushOutcome
    /// The decision the outcome follows from (`failed` for a dropped push).
    public var decision: DeliveryDecision
    /// Set when the push reached its token only after switching environments: record
    /// that environment wherever the token is registered.
    public var correctEnvironment: APNsEnvironment?
    /// Set when the token is dead.
    public var deadToken: DeadTokenAction?
    /// The metric's result: `sent`, `retried`, `switched`, `failed` or `dropped`.
    public var counted: String
    /// The metric's reason.
    public var reason: String?
    /// The latency to count, when the push was handed to the network.
    public var latency: Double?
}

/// Turns transport results into decisions. Pure: the time and the random jitter are
/// passed in.
public struct DeliveryPolicy: Sendable {
    /// The pacing and retry limits.
    public let configuration: DeliveryConfiguration

    /// Creates a policy.
    public init(configuration: DeliveryConfiguration) {
        self.configuration = configuration
    }

    /// The decision for `result`, for a push that had made `round - 1` rounds before
    /// this one, was queued at `queuedAt` and has (or has not) already been switched
    /// to the other environment. `jitter` in 0...1 scales the backoff.
    public func decide(
        _ result: TransportResult, round: Int, queuedAt: Date, environmentSwitched: Bool, environment: APNsEnvironment,
        now: Date, jitter: Double
    ) -> DeliveryDecision {
        switch result.disposition {
        case .delivered:
            return .sent
        case .tokenUnknownInEnvironment:
            if !environmentSwitched {
                return .switchEnvironment(to: environment == .production ? .sandbox : .production)
            }
            return .deadToken(since: nil)
        case .tokenDead(let since):
            return .deadToken(since: since)
        case .retry, .retryNow, .retryLater:
            // A push the transport never handed to the network (its host paused, the
            // transport stopping) used no round: only the push's age bounds it.
            let attempted = result.attempts > 0
            let ceiling = min(configuration.retryMax, configuration.retryBase * pow(2, Double(max(0, round - 1))))
            let share = min(1, max(0, jitter))
            let delay: TimeInterval
            switch result.disposition {
            case .retryNow:
                delay = 0
            case .retryLater(let after):
                // Slowing down: at least half the backoff (a paused host's pushes do
                // not come back at once, all together), never sooner than asked.
                delay = max(after ?? 0, ceiling * (0.5 + share / 2))
            default:
                delay = ceiling * share
            }
            guard !attempted || round < configuration.maxRounds,
                now.addingTimeInterval(delay).timeIntervalSince(queuedAt) < configuration.maxAge
            else { return .failed }
            return .retry(after: delay)
        case .credentialsRejected, .wrongTopic, .rejected:
            return .failed
        }
    }

    /// What the answer `result` to `push` leads to, at `now`. `activityEnded` answers
    /// whether the push's activity has ended; it is asked only for a start or an
    /// update that would be sent again (sent later, it would start or change an
    /// activity that is over, so it is dropped instead).
    public func settle(
        _ push: ClaimedPush, result: TransportResult, now: Date, jitter: Double, activityEnded: () throws -> Bool
    ) rethrows -> Settlement {
        let reason = result.reason
        var outcome = PushOutcome(
            status: .failed, attempts: result.attempts, apnsStatus: result.status, reason: reason,
            serviceMessageID: result.serviceMessageID)
        var settlement = Settlement(
            outcome: outcome, decision: .failed, counted: "failed", reason: reason,
            latency: result.attempts > 0 ? result.latency : nil)
        var decision = decide(
            result, round: push.rounds + 1, queuedAt: push.createdAt, environmentSwitched: push.environmentSwitched,
            environment: push.environment, now: now, jitter: jitter)
        // A start subscribing its phone to a channel carries that environment's
        // channel id, which the other environment does not have: it is not sent
        // there (the device's registered environment is wrong; it fails, naming it).
        if case .switchEnvironment = decision, push.content.subscribesToChannel { decision = .failed }
        var endedActivity = false
        switch decision {
        case .retry, .switchEnvironment:
            if push.content.event == .start || push.content.event == .update, push.activityID != nil {
                endedActivity = try activityEnded()
            }
        default:
            break
        }
        if endedActivity { decision = .failed }
        switch decision {
        case .sent:
            outcome.status = .sent
            if push.environmentSwitched { settlement.correctEnvironment = push.environment }
            settlement.counted = "sent"
        case .retry(let delay):
            outcome.status = .queued
            outcome.nextAttemptAt = now.addingTimeInterval(delay)
            settlement.counted = "retried"
        case .switchEnvironment(let environment):
            outcome.status = .queued
            outcome.nextAttemptAt = now
            outcome.environment = environment
            settlement.counted = "switched"
        case .deadToken(let since):
            settlement.deadToken = Self.deadTokenAction(push, since: since)
        case .failed where endedActivity:
            outcome.status = .dropped
            outcome.reason = "ActivityEnded"
            settlement.counted = "dropped"
        case .failed:
            break
        }
        settlement.outcome = outcome
        settlement.decision = decision
        return settlement
    }

    /// A rejected push-to-start token is deleted (and the device's pending copy of
    /// the activity ended); a rejected update token ends that device's copy of the
    /// activity and leaves the device alone; a rejected device token marks the device
    /// unreachable; a channel APNs no longer has is forgotten. An update token of no
    /// activity leads to nothing.
    public static func deadTokenAction(_ push: ClaimedPush, since: Date?) -> DeadTokenAction? {
        switch push.tokenKind {
        case .pushToStart:
            return .deleteStartToken(refusedAt: since, endingCopyOf: push.activityID)
        case .liveActivityUpdate:
            guard let activityID = push.activityID else { return nil }
            return .endUpdatedCopy(activityID: activityID, refusedAt: since)
        case .device:
            return .markDeviceUnreachable(refusedAt: since)
        case .channel:
            // A broadcast's `deviceID` is the channel's id.
            return .forgetChannel(channelID: push.deviceID)
        case .fcm:
            // An Android device has one token: it is unreachable until it registers anew.
            return .markDeviceUnreachable(refusedAt: since)
        }
    }
}
