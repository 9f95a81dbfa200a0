import Delivery
import Foundation
import IsletCore
import Storage
import Testing

/// What one answer leads to (`DeliveryPolicy.settle`): the outcome recorded, the
/// dead-token action and the metric, without a store or a socket.
@Suite("Answer settlement")
struct SettlementTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let policy: DeliveryPolicy = {
        var configuration = DeliveryConfiguration(shutdownGrace: 10)
        configuration.retryBase = 5
        configuration.retryMax = 60
        configuration.maxRounds = 4
        configuration.maxAge = 3600
        return DeliveryPolicy(configuration: configuration)
    }()

    func result(_ disposition: TransportDisposition, status: Int? = nil, reason: String? = nil, attempts: Int = 1) -> TransportResult {
        TransportResult(disposition: disposition, status: status, reason: reason, serviceMessageID: "u-1", attempts: attempts, latency: 0.02)
    }

    func settle(
        _ push: ClaimedPush, _ result: TransportResult, jitter: Double = 1, ended: Bool = false
    ) -> Settlement {
        policy.settle(push, result: result, now: now, jitter: jitter, activityEnded: { ended })
    }

    @Test func deliveredIsRecordedAsSent() {
        let settled = settle(claimedPush(createdAt: now), result(.delivered, status: 200))
        #expect(settled.outcome.status == .sent)
        #expect(settled.outcome.apnsStatus == 200)
        #expect(settled.outcome.serviceMessageID == "u-1")
        #expect(settled.outcome.attempts == 1)
        #expect(settled.correctEnvironment == nil)
        #expect(settled.deadToken == nil)
        #expect(settled.counted == "sent")
        #expect(settled.latency == 0.02)
    }

    @Test func sentAfterASwitchCorrectsTheEnvironment() {
        let push = claimedPush(environment: .production, switched: true, createdAt: now)
        let settled = settle(push, result(.delivered, status: 200))
        #expect(settled.outcome.status == .sent)
        #expect(settled.correctEnvironment == .production)
    }

    @Test func badDeviceTokenSwitchesOnceThenIsDead() {
        let bad = result(.tokenUnknownInEnvironment, status: 400, reason: "BadDeviceToken")
        let first = settle(claimedPush(kind: .device, event: .alert, activityID: nil, createdAt: now), bad)
        #expect(first.decision == .switchEnvironment(to: .production))
        #expect(first.outcome.status == .queued)
        #expect(first.outcome.environment == .production)
        #expect(first.outcome.nextAttemptAt == now)
        #expect(first.counted == "switched")
        #expect(first.deadToken == nil)

        let second = settle(claimedPush(kind: .device, event: .alert, activityID: nil, environment: .production, switched: true, createdAt: now), bad)
        #expect(second.decision == .deadToken(since: nil))
        #expect(second.outcome.status == .failed)
        #expect(second.deadToken == .markDeviceUnreachable(refusedAt: nil))
        #expect(second.counted == "failed")
        #expect(second.reason == "BadDeviceToken")
    }

    @Test func unregisteredIsDeadSinceItsTimestamp() {
        let since = now.addingTimeInterval(-60)
        let settled = settle(claimedPush(createdAt: now), result(.tokenDead(since: since), status: 410, reason: "Unregistered"))
        #expect(settled.decision == .deadToken(since: since))
        #expect(settled.deadToken == .endUpdatedCopy(activityID: "act-1", refusedAt: since))
        #expect(settled.outcome.status == .failed)
        #expect(settled.outcome.reason == "Unregistered")
    }

    @Test func deadStartTokenIsDeletedAndItsPendingCopyEnded() {
        let since = now.addingTimeInterval(-5)
        let push = claimedPush(kind: .pushToStart, event: .start, activityID: "act-9", createdAt: now)
        let settled = settle(push, result(.tokenDead(since: since), status: 410, reason: "Unregistered"))
        #expect(settled.deadToken == .deleteStartToken(refusedAt: since, endingCopyOf: "act-9"))
    }

    @Test func deadUpdateTokenEndsOnlyItsCopy() {
        let push = claimedPush(kind: .liveActivityUpdate, event: .end, activityID: "act-2", createdAt: now)
        #expect(settle(push, result(.tokenDead(since: nil), status: 410)).deadToken == .endUpdatedCopy(activityID: "act-2", refusedAt: nil))
        let orphan = claimedPush(kind: .liveActivityUpdate, event: .end, activityID: nil, createdAt: now)
        #expect(settle(orphan, result(.tokenDead(since: nil), status: 410)).deadToken == nil)
    }

    @Test func aStartSubscribingToAChannelIsNotSentToTheOtherEnvironment() throws {
        var push = claimedPush(kind: .pushToStart, event: .start, activityID: "act-4", createdAt: now)
        let answer = result(.tokenUnknownInEnvironment, status: 400, reason: "BadDeviceToken")
        #expect(settle(push, answer).decision == .switchEnvironment(to: .production))
        push.content.payload = Data(#"{"aps":{"event":"start","input-push-channel":"dHdv"}}"#.utf8)
        let settled = settle(push, answer)
        #expect(settled.decision == .failed)
        #expect(settled.outcome.status == .failed)
        #expect(settled.outcome.reason == "BadDeviceToken")
    }

    @Test func aChannelAPNsNoLongerHasIsForgotten() {
        // A broadcast's row keeps the channel's id where a push keeps its device.
        let push = claimedPush(kind: .channel, event: .update, activityID: "act-3", createdAt: now)
        let settled = settle(push, result(.tokenDead(since: nil), status: 400, reason: "ChannelNotRegistered"))
        #expect(settled.deadToken == .forgetChannel(channelID: "device-1"))
        #expect(settled.outcome.status == .failed)
        #expect(settled.outcome.reason == "ChannelNotRegistered")
    }

    @Test func deadDeviceTokenMarksTheDeviceUnreachable() {
        let since = now.addingTimeInterval(-1)
        let push = claimedPush(kind: .device, event: .alert, activityID: nil, createdAt: now)
        #expect(settle(push, result(.tokenDead(since: since), status: 410)).deadToken == .markDeviceUnreachable(refusedAt: since))
    }

    @Test func retriesBackOffWithJitterFromASeededSource() {
        var random = SeededRandomSource(seed: 7)
        var again = SeededRandomSource(seed: 7)
        let jitters = (0..<3).map { _ in Double.random(in: 0...1, using: &random) }
        #expect(jitters == (0..<3).map { _ in Double.random(in: 0...1, using: &again) })
        let busy = result(.retry, status: 503, reason: "ServiceUnavailable")
        for (round, jitter) in jitters.enumerated() {
            let settled = settle(claimedPush(rounds: round, createdAt: now), busy, jitter: jitter)
            let ceiling = 5 * pow(2, Double(round))
            #expect(settled.decision == .retry(after: ceiling * jitter))
            #expect(settled.outcome.status == .queued)
            #expect(settled.outcome.nextAttemptAt == now.addingTimeInterval(ceiling * jitter))
            #expect(settled.outcome.environment == nil)
            #expect(settled.counted == "retried")
        }
        // Too many requests backs off by at least half the same ceiling.
        #expect(settle(claimedPush(createdAt: now), result(.retryLater(after: nil), status: 429), jitter: 0.5).decision == .retry(after: 3.75))
    }

    @Test func givesUpAfterMaxRounds() {
        let settled = settle(claimedPush(rounds: 3, createdAt: now), result(.retry, status: 500))
        #expect(settled.decision == .failed)
        #expect(settled.outcome.status == .failed)
        #expect(settled.counted == "failed")
    }

    @Test func givesUpAfterMaxAge() {
        let old = claimedPush(createdAt: now.addingTimeInterval(-3598))
        #expect(settle(old, result(.retry, status: 500), jitter: 1).decision == .failed)
        #expect(settle(old, result(.retry, status: 500), jitter: 0.1).decision == .retry(after: 0.5))
    }

    @Test func credentialsRejectedFails() {
        let settled = settle(claimedPush(createdAt: now), result(.credentialsRejected, status: 403, reason: "InvalidProviderToken"))
        #expect(settled.outcome.status == .failed)
        #expect(settled.deadToken == nil)
        #expect(settled.counted == "failed")
        #expect(settled.reason == "InvalidProviderToken")
    }

    @Test func anUnreadableAppIsAPassingFault() {
        let unreadable = APNsTransport.unsendable(problem: "cannot read the app: busy", passing: true)
        #expect(unreadable.disposition == .retry)
        #expect(unreadable.reason == "transport")
        #expect(unreadable.attempts == 0)
        let settled = settle(claimedPush(createdAt: now), unreadable, jitter: 0.2)
        #expect(settled.decision == .retry(after: 1))
        #expect(settled.counted == "retried")
        #expect(settled.latency == nil)

        let missing = APNsTransport.unsendable(problem: "the app has no APNs credentials", passing: false)
        #expect(missing.disposition == .credentialsRejected)
        #expect(settle(claimedPush(createdAt: now), missing).outcome.status == .failed)
    }

    @Test func aStartOrUpdateOfAnEndedActivityIsDroppedInsteadOfRetried() {
        let busy = result(.retry, status: 503, reason: "ServiceUnavailable")
        for event in [PushEvent.start, .update] {
            let kind: PushTokenKind = event == .start ? .pushToStart : .liveActivityUpdate
            let settled = settle(claimedPush(kind: kind, event: event, createdAt: now), busy, ended: true)
            #expect(settled.outcome.status == .dropped)
            #expect(settled.outcome.reason == "ActivityEnded")
            #expect(settled.outcome.nextAttemptAt == nil)
            #expect(settled.counted == "dropped")
            #expect(settled.reason == "ServiceUnavailable")
        }
        // A switch is dropped too.
        let bad = result(.tokenUnknownInEnvironment, status: 400, reason: "BadDeviceToken")
        #expect(settle(claimedPush(createdAt: now), bad, ended: true).outcome.status == .dropped)
        // An end is sent again whatever the activity's state.
        #expect(settle(claimedPush(event: .end, createdAt: now), busy, ended: true).outcome.status == .queued)
    }

    @Test func theActivityIsLookedUpOnlyForARetry() {
        var asked = 0
        for answer in [result(.delivered, status: 200), result(.tokenDead(since: nil), status: 410), result(.rejected, status: 413)] {
            _ = policy.settle(claimedPush(createdAt: now), result: answer, now: now, jitter: 1, activityEnded: { asked += 1; return true })
        }
        #expect(asked == 0)
        _ = policy.settle(claimedPush(createdAt: now), result: result(.retry), now: now, jitter: 1, activityEnded: { asked += 1; return false })
        #expect(asked == 1)
    }
}
