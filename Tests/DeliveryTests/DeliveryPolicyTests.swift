import APNs
import Delivery
import Foundation
import IsletCore
import Testing

@Suite("Delivery policy")
struct DeliveryPolicyTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    let policy: DeliveryPolicy = {
        var configuration = DeliveryConfiguration(shutdownGrace: 10)
        configuration.retryBase = 5
        configuration.retryMax = 60
        configuration.maxRounds = 4
        configuration.maxAge = 3600
        return DeliveryPolicy(configuration: configuration)
    }()

    func apnsResult(_ disposition: TransportDisposition, status: Int? = nil, reason: APNsReason? = nil) -> APNsResult {
        APNsResult(
            disposition: disposition, response: status.map { APNsResponse(status: $0, reason: reason) }, attempts: 1,
            apnsID: "5e5bd6c8-2d4e-4d3c-9f0a-2b6f1e0f7a11")
    }

    /// An APNs result as the APNs transport hands it to the worker.
    func result(_ disposition: TransportDisposition, status: Int? = nil, reason: APNsReason? = nil) -> TransportResult {
        APNsTransport.result(apnsResult(disposition, status: status, reason: reason), latency: 0)
    }

    func decide(_ result: TransportResult, round: Int = 1, switched: Bool = false, queuedAgo: TimeInterval = 0, jitter: Double = 1) -> DeliveryDecision {
        policy.decide(
            result, round: round, queuedAt: now.addingTimeInterval(-queuedAgo), environmentSwitched: switched,
            environment: .sandbox, now: now, jitter: jitter)
    }

    @Test func deliveredIsSent() {
        #expect(decide(result(.delivered, status: 200)) == .sent)
    }

    @Test func badDeviceTokenTriesTheOtherEnvironmentOnce() {
        let bad = result(APNsFailurePolicy.classify(APNsResponse(status: 400, reason: .badDeviceToken)), status: 400, reason: .badDeviceToken)
        #expect(decide(bad) == .switchEnvironment(to: .production))
        #expect(decide(bad, switched: true) == .deadToken(since: nil))
    }

    @Test func unregisteredIsDeadWithItsTimestamp() {
        let since = now.addingTimeInterval(-60)
        let gone = result(.tokenDead(since: since), status: 410, reason: .unregistered)
        #expect(decide(gone) == .deadToken(since: since))
    }

    @Test func passingFaultsBackOffExponentiallyWithJitterThenGiveUp() {
        let busy = result(.retry, status: 503, reason: .serviceUnavailable)
        #expect(decide(busy, round: 1) == .retry(after: 5))
        #expect(decide(busy, round: 2) == .retry(after: 10))
        #expect(decide(busy, round: 3, jitter: 0.5) == .retry(after: 10))
        #expect(decide(busy, round: 4) == .failed)
        #expect(decide(result(.retryLater(after: nil), status: 429, reason: .tooManyRequests), round: 1, queuedAgo: 3599) == .failed)
    }

    @Test func aMendedFaultGoesAgainAtOnceWithinTheRounds() {
        // ExpiredProviderToken, once the client replaced the token.
        let mended = result(.retryNow, status: 403, reason: .expiredProviderToken)
        #expect(decide(mended, round: 1) == .retry(after: 0))
        #expect(decide(mended, round: 3) == .retry(after: 0))
        #expect(decide(mended, round: 4) == .failed)
    }

    @Test func slowingDownWaitsAtLeastHalfTheBackoffAndNeverLessThanAsked() {
        let throttled = result(.retryLater(after: nil), status: 429, reason: .tooManyRequests)
        #expect(decide(throttled, round: 1, jitter: 0) == .retry(after: 2.5))
        #expect(decide(throttled, round: 2, jitter: 1) == .retry(after: 10))
        #expect(decide(result(.retryLater(after: 30), status: 429), round: 1, jitter: 0) == .retry(after: 30))
        #expect(decide(throttled, round: 4) == .failed)
    }

    @Test func aPushNeverHandedToTheNetworkUsesNoRound() {
        // The host's circuit breaker is open: the push was not tried.
        let paused = TransportResult(disposition: .retryLater(after: 7), reason: "circuitOpen", attempts: 0)
        #expect(decide(paused, round: 1, jitter: 0) == .retry(after: 7))
        // Past the rounds an attempted push may make: still sent again, after at
        // least half the longest backoff (60 s here).
        #expect(decide(paused, round: 4, jitter: 0) == .retry(after: 20))
        #expect(decide(paused, round: 40, jitter: 0) == .retry(after: 30))
        // Its age still bounds it.
        #expect(decide(paused, round: 1, queuedAgo: 3595, jitter: 0) == .failed)
    }

    @Test func refusalsThatNoRetryCanFixFail() {
        #expect(decide(result(.rejected, status: 413, reason: .payloadTooLarge)) == .failed)
        #expect(decide(result(.wrongTopic, status: 400, reason: .deviceTokenNotForTopic)) == .failed)
        #expect(decide(result(.credentialsRejected, status: 403, reason: .invalidProviderToken)) == .failed)
    }

    @Test func reasonsComeFromAPNsOrTheClient() {
        #expect(APNsTransport.reason(apnsResult(.rejected, status: 400, reason: .badTopic)) == "BadTopic")
        let transport = APNsResult(disposition: .retry, error: APNsError(.transport, "reset"), attempts: 5, apnsID: "x")
        #expect(APNsTransport.reason(transport) == "transport")
        #expect(APNsTransport.reason(apnsResult(.delivered, status: 200)) == nil)
        #expect(result(.rejected, status: 400, reason: .badTopic).reason == "BadTopic")
    }
}

@Suite("APNs failure policy: which refusals of the key stand")
struct APNsStandingRefusalTests {
    @Test func aRefusalOfTheKeyStandsAndAnExpiredTokenOrAnotherFaultDoesNot() {
        let standing: [(APNsResponse, String?)] = [
            (APNsResponse(status: 403, reason: .invalidProviderToken), "InvalidProviderToken"),
            (APNsResponse(status: 403, reason: .missingProviderToken), "MissingProviderToken"),
            (APNsResponse(status: 403, reason: .unknown("SomethingNew")), "SomethingNew"),
            (APNsResponse(status: 403), "HTTP 403"),
            // Mended by a new token, or refused by a wrong clock: the next may pass.
            (APNsResponse(status: 403, reason: .expiredProviderToken), nil),
            (APNsResponse(status: 200), nil),
            (APNsResponse(status: 400, reason: .badDeviceToken), nil),
            (APNsResponse(status: 400, reason: .deviceTokenNotForTopic), nil),
            (APNsResponse(status: 410, reason: .unregistered), nil),
            (APNsResponse(status: 429, reason: .tooManyProviderTokenUpdates), nil),
            (APNsResponse(status: 503, reason: .serviceUnavailable), nil),
        ]
        for (response, expected) in standing {
            #expect(APNsFailurePolicy.standingRefusal(response) == expected, "\(response)")
        }
    }
}

@Suite("No answer: the one map from a cause to a disposition")
struct NoAnswerTests {
    @Test func eachCauseHasItsDispositionAndWhatTheDeliveryPolicyMakesOfIt() {
        let expected: [NoAnswer: TransportDisposition] = [
            .credentialsUnreadable: .retry, .credentialsUnusable: .credentialsRejected, .shuttingDown: .retryLater(after: nil),
            .hostPaused: .retryLater(after: nil), .connectionFailed: .retry, .contentUnusable: .rejected,
        ]
        #expect(Set(expected.keys) == Set(NoAnswer.allCases))
        for cause in NoAnswer.allCases {
            #expect(cause.disposition() == expected[cause], "\(cause)")
        }
        // A pause's length carries through, over its extremes; other causes ignore it.
        for after in [0, -0.0, .leastNonzeroMagnitude, 7, 86_400, .greatestFiniteMagnitude] as [TimeInterval] {
            #expect(NoAnswer.hostPaused.disposition(after: after) == .retryLater(after: after))
            #expect(NoAnswer.connectionFailed.disposition(after: after) == .retry)
        }
        // Unanswered and untried, a push uses no round: only its age bounds it.
        let policy = DeliveryPolicy(configuration: DeliveryConfiguration(shutdownGrace: 10))
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        for cause in NoAnswer.allCases {
            let decision = policy.decide(
                TransportResult(disposition: cause.disposition(), attempts: 0), round: 99, queuedAt: now,
                environmentSwitched: false, environment: .production, now: now, jitter: 0.5)
            switch cause {
            case .credentialsUnusable, .contentUnusable: #expect(decision == .failed, "\(cause)")
            default: #expect(decision != .failed, "\(cause)")
            }
        }
    }
}
