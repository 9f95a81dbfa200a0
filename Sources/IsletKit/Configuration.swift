public import Foundation

/// How IsletKit reaches the app's Islet and who the device is.
public struct IsletConfiguration: Sendable {
    /// The server's base URL (`https://islet.example.com`).
    public var serverURL: URL
    /// The app's id at Islet (`app_…`).
    public var appID: String
    /// The app's device key (`islet_dk_…`): it ships in the app; the device's
    /// secret is what proves a request is the device's.
    public var deviceKey: String
    /// Which APNs the app's tokens belong to: `sandbox` for development builds.
    public var environment: Environment
    /// The device's id at Islet; `nil` makes one on the first launch and keeps it.
    public var deviceID: String?
    /// The signed-in user, if any: the server's audiences name users.
    public var userID: String?
    /// Tags for audiences (at most 100, each 1 to 100 characters).
    public var tags: [String]
    /// Where IsletKit keeps its outbox and state (a folder of its own).
    public var storageDirectory: URL
    /// When uploads are tried again after a failure that may pass.
    public var retry: RetryPolicy

    public enum Environment: String, Sendable, Codable {
        case sandbox, production
    }

    public init(
        serverURL: URL, appID: String, deviceKey: String, environment: Environment, deviceID: String? = nil,
        userID: String? = nil, tags: [String] = [], storageDirectory: URL, retry: RetryPolicy = RetryPolicy()
    ) {
        self.serverURL = serverURL
        self.appID = appID
        self.deviceKey = deviceKey
        self.environment = environment
        self.deviceID = deviceID
        self.userID = userID
        self.tags = tags
        self.storageDirectory = storageDirectory
        self.retry = retry
    }
}

/// Exponential backoff with jitter: the n-th attempt in a row that fails waits
/// `first · 2^(n-1)`, at most `longest`, times a random factor from 1 − `jitter` to 1
/// (so that a thousand phones back from a tunnel do not come back together). A
/// `Retry-After` from the server is waited for when longer.
public struct RetryPolicy: Sendable, Hashable {
    public var first: Duration
    public var longest: Duration
    public var jitter: Double

    public init(first: Duration = .seconds(2), longest: Duration = .seconds(300), jitter: Double = 0.5) {
        self.first = first
        self.longest = longest
        self.jitter = min(max(jitter.isFinite ? jitter : 0, 0), 1)
    }

    /// The wait after `failures` failures in a row (1 or more), with `unit` a random
    /// number from 0 to 1.
    public func delay(afterFailures failures: Int, unit: Double, retryAfter: Duration? = nil) -> Duration {
        // A year at most: beyond it a wait means nothing, and the nanoseconds of a
        // longer one would not fit.
        let year = 365.0 * 86_400
        let first = min(max(self.first.inSeconds, 0), year)
        let longest = min(max(self.longest.inSeconds, first), year)
        let exponent = min(max(failures, 1) - 1, 62)
        let raw = min(first * pow(2, Double(exponent)), longest)
        let factor = 1 - jitter * min(max(unit.isFinite ? unit : 0, 0), 1)
        var wait = raw * factor
        if let retryAfter { wait = max(wait, min(max(retryAfter.inSeconds, 0), longest)) }
        return .nanoseconds(Int64((wait * 1e9).rounded()))
    }
}

extension Duration {
    var inSeconds: Double {
        let (s, atto) = components
        return Double(s) + Double(atto) / 1e18
    }
}
