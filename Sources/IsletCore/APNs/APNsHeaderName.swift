/// The names of the HTTP/2 header fields an APNs request and answer carry, in the
/// lowercase form HTTP/2 requires.
public enum APNsHeaderName {
    /// `authorization: bearer <provider token>`.
    public static let authorization = "authorization"
    /// The push type (``APNsPushType``).
    public static let pushType = "apns-push-type"
    /// The notification's UUID; echoed in the answer, minted by APNs when absent.
    public static let id = "apns-id"
    /// Unix seconds after which APNs stops trying to deliver; 0 means once only.
    public static let expiration = "apns-expiration"
    /// The priority (``APNsPriority``).
    public static let priority = "apns-priority"
    /// The bundle id, with the push type's suffix where it has one.
    public static let topic = "apns-topic"
    /// Notifications with the same collapse id replace one another on the device.
    public static let collapseID = "apns-collapse-id"
    /// Answer only, sandbox only: the id under which the Push Notifications Console
    /// keeps the delivery log.
    public static let uniqueID = "apns-unique-id"
    /// A broadcast channel id (iOS 18 broadcast pushes).
    public static let channelID = "apns-channel-id"
    /// A request id for the channel management API.
    public static let requestID = "apns-request-id"
    /// The media type of a body.
    public static let contentType = "content-type"
}

/// The paths of the APNs HTTP/2 API.
public enum APNsPath {
    /// What every device push path starts with; the device token follows.
    public static let devicePrefix = "/3/device/"
    /// What a broadcast path starts with (iOS 18 channels); the bundle id follows.
    public static let broadcastPrefix = "/4/broadcasts/apps/"

    /// The path that pushes to `token`.
    public static func device(_ token: some StringProtocol) -> String {
        devicePrefix + token
    }
}

/// Sizes and durations APNs enforces.
public enum APNsLimits {
    /// The largest body of any push but VoIP, in bytes.
    public static let maximumPayloadBytes = 4096
    /// The largest body of a VoIP push, in bytes.
    public static let maximumVoIPPayloadBytes = 5120
    /// The largest broadcast payload (iOS 18 channels), in bytes.
    public static let maximumBroadcastPayloadBytes = 5120
    /// The longest `apns-collapse-id`, in bytes.
    public static let maximumCollapseIDBytes = 64
    /// How long a provider token stays valid after its `iat`, in seconds.
    public static let providerTokenLifetime: Double = 3600
    /// The shortest time, in seconds, between two provider token changes on one
    /// connection; APNs answers TooManyProviderTokenUpdates to a quicker change.
    public static let providerTokenMinimumRefreshInterval: Double = 20 * 60
}
