public import IsletCore
public import IsletCrypto

/// How a simulated APNs behaves: which environment it plays, which signing keys it
/// trusts, and which faults it injects.
public struct SimulatorConfiguration: Sendable {
    /// The environment the simulator plays. Tokens registered for the other one are
    /// answered 400 BadDeviceToken, and `apns-unique-id` is sent only in the sandbox.
    public var environment: APNsEnvironment
    /// The signing keys whose provider tokens are accepted.
    public var trustedKeys: [TrustedKey]
    /// Failures answered at random to requests that passed every check.
    public var faultInjection: FaultInjection
    /// How many push records ``SimulatorEngine/pushes(after:)`` keeps; the oldest
    /// are forgotten first, so that a long benchmark does not grow without bound.
    public var pushHistoryLimit: Int
    /// Provider token lifetime in seconds: a token whose `iat` is older is answered
    /// 403 ExpiredProviderToken. APNs uses one hour.
    public var providerTokenLifetime: Double
    /// The shortest time in seconds after a connection first used its provider token
    /// before it may switch to another; a quicker switch is answered 429
    /// TooManyProviderTokenUpdates. APNs uses 20 minutes.
    public var providerTokenRefreshInterval: Double
    /// How far in seconds a token's `iat` may lie ahead of the simulator's clock
    /// before the token is refused as invalid (an `iat` written in milliseconds lies
    /// decades ahead).
    public var allowedClockSkew: Double
    /// Priority-10 updates a simulated activity applies in any hour before it
    /// records the next one as `throttled`, as iOS holds back updates past the
    /// device's budget; `nil` (the default): no budget.
    public var priority10BudgetPerHour: Int?
    /// The same, for an activity on a device that allowed frequent updates (a
    /// push-to-start or update token registered with `frequent_updates: true`);
    /// `nil`: ``priority10BudgetPerHour``.
    public var frequentPriority10BudgetPerHour: Int?
    /// Push-to-starts a device (a push-to-start token) takes in any hour before it
    /// refuses the next one (`throttled`), as iOS does; `nil` (the default): no
    /// budget.
    public var startBudgetPerHour: Int?
    /// Whether the app may use broadcast channels (the capability an Apple developer
    /// account turns on); without it every channel request is 400
    /// FeatureNotEnabled.
    public var broadcastEnabled = true
    /// Channels an app may have in the environment; one more is 400
    /// CannotCreateChannelConfig. APNs allows 10,000.
    public var channelLimit = 10_000

    /// Creates a configuration; every setting but the keys has APNs's own default.
    public init(
        environment: APNsEnvironment = .sandbox,
        trustedKeys: [TrustedKey] = [],
        faultInjection: FaultInjection = .none,
        pushHistoryLimit: Int = 20_000,
        providerTokenLifetime: Double = APNsLimits.providerTokenLifetime,
        providerTokenRefreshInterval: Double = APNsLimits.providerTokenMinimumRefreshInterval,
        allowedClockSkew: Double = 300
    ) {
        self.environment = environment
        self.trustedKeys = trustedKeys
        self.faultInjection = faultInjection
        self.pushHistoryLimit = max(1, pushHistoryLimit)
        self.providerTokenLifetime = providerTokenLifetime
        self.providerTokenRefreshInterval = providerTokenRefreshInterval
        self.allowedClockSkew = allowedClockSkew
    }
}

/// A signing key whose provider tokens the simulator accepts: the public half of an
/// APNs `.p8` key, with the key id and team id a token must name.
public struct TrustedKey: Sendable {
    /// The key id a token names in its `kid` header.
    public var keyID: String
    /// The team id a token names in its `iss` claim.
    public var teamID: String
    /// The public key that verifies the token's ES256 signature.
    public var publicKey: P256.VerifyingKey
    /// The environments the key may push to; `nil` for both. A token signed by a key
    /// restricted to the other environment is answered 403 BadEnvironmentKeyIdInToken.
    public var environments: Set<APNsEnvironment>?

    /// Creates a trusted key.
    public init(keyID: String, teamID: String, publicKey: P256.VerifyingKey, environments: Set<APNsEnvironment>? = nil) {
        self.keyID = keyID
        self.teamID = teamID
        self.publicKey = publicKey
        self.environments = environments
    }
}

/// Failures the simulator answers at random, to exercise a client's retries.
public struct FaultInjection: Sendable, Hashable {
    /// The failure answered, as APNs would send it.
    public enum FailStatus: Int, Sendable, Hashable, CaseIterable, Codable {
        /// 500 InternalServerError.
        case internalServerError = 500
        /// 503 ServiceUnavailable.
        case serviceUnavailable = 503
        /// 429 TooManyRequests.
        case tooManyRequests = 429

        /// The reason APNs sends with this status.
        public var reason: APNsReason {
            switch self {
            case .internalServerError: .internalServerError
            case .serviceUnavailable: .serviceUnavailable
            case .tooManyRequests: .tooManyRequests
            }
        }
    }

    /// The share of requests, 0.0–1.0, that fail.
    public let failRate: Double
    /// How they fail.
    public let failStatus: FailStatus

    /// No injected failures.
    public static let none = FaultInjection(checkedRate: 0, status: .serviceUnavailable)

    private init(checkedRate: Double, status: FailStatus) {
        failRate = checkedRate
        failStatus = status
    }

    /// Fails `failRate` of the requests with `failStatus`.
    public init(failRate: Double, failStatus: FailStatus = .serviceUnavailable) throws(SimulatorError) {
        guard failRate >= 0, failRate <= 1 else {
            throw SimulatorError(.invalidFailRate, "the fail rate must be between 0.0 and 1.0, not \(failRate)")
        }
        self.failRate = failRate
        self.failStatus = failStatus
    }

    /// Fails `failRate` of the requests with the HTTP status `status`, which must be
    /// 500, 503 or 429.
    public init(failRate: Double, status: Int) throws(SimulatorError) {
        guard let failStatus = FailStatus(rawValue: status) else {
            throw SimulatorError(.invalidFailStatus, "the fail status must be 500, 503 or 429, not \(status)")
        }
        try self.init(failRate: failRate, failStatus: failStatus)
    }
}
