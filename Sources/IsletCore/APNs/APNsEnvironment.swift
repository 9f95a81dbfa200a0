/// Which APNs a token, a key or a connection belongs to. A token issued by a
/// development build works only in the sandbox, one from a distribution build only in
/// production.
public enum APNsEnvironment: String, Sendable, Hashable, CaseIterable, Codable {
    /// `api.sandbox.push.apple.com`: development builds.
    case sandbox
    /// `api.push.apple.com`: App Store, TestFlight and ad hoc builds.
    case production

    /// The APNs host name for this environment.
    public var host: String {
        switch self {
        case .sandbox: "api.sandbox.push.apple.com"
        case .production: "api.push.apple.com"
        }
    }

    /// The endpoint of this environment's APNs: `https://` and `host`, port 443.
    public var endpoint: String { "https://" + host }

    /// The other environment: where a BadDeviceToken may mean the token belongs.
    public var other: APNsEnvironment {
        switch self {
        case .sandbox: .production
        case .production: .sandbox
        }
    }
}
