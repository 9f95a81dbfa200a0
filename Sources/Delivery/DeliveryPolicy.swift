public import APNs
public import Foundation
public import IsletCore

/// What the worker does with a push once the APNs client has given its result: the
/// one place where a result becomes a status, a retry, or a change to the registry.
public enum DeliveryDecision: Sendable, Equatable {
    /// APNs accepted it.
    case sent
    /// Queue it again, to be tried after `delay` seconds.
    case retry(after: TimeInterval)
    /// BadDeviceToken may mean a sandbox token sent to production or the reverse:
    /// send it once more, at once, to `environment`.
    case switchEnvironment(to: APNsEnvironment)
    /// APNs says the token is dead (since `since`, when it says): act by token kind.
    case deadToken(since: Date?)
    /// Give up; nothing about the token follows from it.
    case failed
}

/// Turns APNs results into decisions. Pure: the random jitter is passed in.
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
        _ result: APNsResult, round: Int, queuedAt: Date, environmentSwitched: Bool, environment: APNsEnvironment,
        now: Date, jitter: Double
    ) -> DeliveryDecision {
        switch result.disposition {
        case .delivered:
            return .sent
        case .tokenDead(let since):
            if result.response?.reason == .badDeviceToken && !environmentSwitched {
                return .switchEnvironment(to: environment == .production ? .sandbox : .production)
            }
            return .deadToken(since: since)
        case .retry, .retryLater, .refreshProviderToken:
            let ceiling = min(configuration.retryMax, configuration.retryBase * pow(2, Double(max(0, round - 1))))
            let delay = ceiling * min(1, max(0, jitter))
            guard round < configuration.maxRounds,
                now.addingTimeInterval(delay).timeIntervalSince(queuedAt) < configuration.maxAge
            else { return .failed }
            return .retry(after: delay)
        case .credentialsRejected, .wrongTopic, .rejected:
            return .failed
        }
    }

    /// The reason recorded for `result`: APNs's, or the client's error code.
    public static func reason(_ result: APNsResult) -> String? {
        if let reason = result.response?.reason { return reason.rawValue }
        if let error = result.error { return "\(error.code)" }
        if let status = result.response?.status, status != 200 { return "HTTP \(status)" }
        return nil
    }
}
