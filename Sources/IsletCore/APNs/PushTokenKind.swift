/// The three kinds of push token, which must never be crossed (APNs answers
/// DeviceTokenNotForTopic when one kind is used where another belongs), and the
/// iOS 18 broadcast channel, which stands in for the update tokens of every device
/// subscribed to it.
public enum PushTokenKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// The app's ordinary token, for alerts and background pushes.
    case device = "device"
    /// A token that starts a Live Activity of one type remotely (iOS 17.2+); it has no
    /// expiry and outlives every activity.
    case pushToStart = "push_to_start"
    /// One activity's own token, for its updates and end; it lives and dies with the
    /// activity and may rotate.
    case liveActivityUpdate = "live_activity_update"
    /// A broadcast channel's id (Apple's, standard base64): one push reaches every
    /// device subscribed to it, for a Live Activity's updates and end.
    case channel = "channel"
    /// An Android device's FCM registration token: the data messages of its
    /// activities go to it through FCM, never to APNs.
    case fcm = "fcm"

    /// The kinds an iOS device registers with APNs; a channel is made through the
    /// channel API, and an FCM token belongs to an Android device.
    public static let deviceKinds: [PushTokenKind] = [.device, .pushToStart, .liveActivityUpdate]

    /// Whether a token of this kind can receive `pushType`: Live Activity tokens take
    /// only `liveactivity` pushes, device tokens everything else.
    public func accepts(_ pushType: APNsPushType) -> Bool {
        switch self {
        case .device: pushType != .liveactivity
        case .pushToStart, .liveActivityUpdate, .channel: pushType == .liveactivity
        case .fcm: false
        }
    }
}
