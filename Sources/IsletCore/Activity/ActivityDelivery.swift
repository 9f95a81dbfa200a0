/// How an activity's updates and end reach its devices.
public enum ActivityDelivery: String, Sendable, Hashable, CaseIterable, Codable {
    /// One push per device, to each copy's own update token.
    case tokens
    /// One broadcast per environment, to the activity's channels (iOS 18); copies
    /// that hold their own update token (a device that cannot take channels) still
    /// get theirs.
    case channel
}

/// What a start asks for: one of the two deliveries, or Islet's choice.
public enum DeliveryRequest: String, Sendable, Hashable, CaseIterable, Codable {
    /// Update tokens (the default).
    case tokens
    /// Broadcast channels.
    case channel
    /// Channels when the audience is large enough that they pay off, tokens otherwise.
    case auto
}

/// The rule `auto` follows, and the channel limit every start respects. Pure.
public struct BroadcastChoice: Sendable, Hashable {
    /// The most channels APNs lets an app have in one environment.
    public static let channelLimit = 10_000
    /// The share of the limit past which `auto` creates no more channels.
    public static let guardShare = 0.95

    /// Devices that can take a channel above which `auto` picks one.
    public var threshold: Int

    /// Creates the rule.
    public init(threshold: Int) {
        self.threshold = threshold
    }

    /// How many channels an app may have in an environment before `auto` stops
    /// creating them: 95% of APNs's limit.
    public static var guardCount: Int { Int(Double(channelLimit) * guardShare) }

    /// The delivery `auto` picks for an audience with `capable` devices that can take
    /// a channel (of `total`), when the app already has `channels[environment]`
    /// channels in each environment that would need a new one; and why, in one
    /// sentence.
    public func choose(capable: Int, total: Int, newChannelsIn channels: [APNsEnvironment: Int]) -> (
        delivery: ActivityDelivery, reason: String
    ) {
        guard capable > threshold else {
            let of = capable == total ? "" : " (of \(total))"
            return (.tokens, "\(capable) device(s)\(of) can take a channel, not more than the broadcast threshold of \(threshold)")
        }
        for environment in APNsEnvironment.allCases {
            if let count = channels[environment], count >= Self.guardCount {
                return (
                    .tokens,
                    "the app has \(count) channels in \(environment.rawValue), at least 95% of APNs's limit of \(Self.channelLimit)"
                )
            }
        }
        return (.channel, "\(capable) device(s) can take a channel, more than the broadcast threshold of \(threshold)")
    }

    /// Whether a device on `osVersion` can subscribe to a channel: iOS 18 or later,
    /// or a device that never said (most run a current iOS).
    public static func takesChannels(osVersion: String?) -> Bool {
        guard let osVersion else { return true }
        guard let major = osVersion.split(separator: ".", maxSplits: 1).first.flatMap({ Int($0) }) else { return true }
        return major >= 18
    }
}
