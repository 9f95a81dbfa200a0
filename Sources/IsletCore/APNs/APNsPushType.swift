/// The `apns-push-type` header: what kind of notification a request carries. APNs
/// routes on it, and for most types the topic must carry a matching suffix.
public enum APNsPushType: String, Sendable, Hashable, CaseIterable, Codable {
    /// A notification that shows an alert, plays a sound or badges the icon.
    case alert
    /// A silent notification that wakes the app (`content-available`).
    case background
    /// An ActivityKit push that starts, updates or ends a Live Activity.
    case liveactivity
    /// A PushKit VoIP call.
    case voip
    /// A watchOS complication update.
    case complication
    /// A File Provider change signal.
    case fileprovider
    /// A mobile device management check-in request.
    case mdm
    /// A location query for a Location Push Service extension.
    case location
    /// A Push to Talk notification.
    case pushtotalk
    /// A WidgetKit reload.
    case widgets
    /// A Control Center control reload.
    case controls

    /// What the topic must end with for this push type, after the bundle id; `nil`
    /// when the topic is the bare bundle id (alert, background) or is set by other
    /// means (mdm).
    public var topicSuffix: String? {
        switch self {
        case .alert, .background, .mdm: nil
        case .liveactivity: ".push-type.liveactivity"
        case .voip: ".voip"
        case .complication: ".complication"
        case .fileprovider: ".pushkit.fileprovider"
        case .location: ".location-query"
        case .pushtotalk: ".voip-ptt"
        case .widgets: ".push-type.widgets"
        case .controls: ".push-type.controls"
        }
    }

    /// The largest body APNs accepts for this push type, in bytes: 5 KB for VoIP,
    /// 4 KB for everything else.
    public var maximumPayloadBytes: Int {
        self == .voip ? APNsLimits.maximumVoIPPayloadBytes : APNsLimits.maximumPayloadBytes
    }

    /// Whether `topic` fits this push type: it ends with the type's suffix after a
    /// non-empty bundle id, or, for a type without a suffix, it ends with no other
    /// type's suffix (an alert aimed at `com.example.push-type.liveactivity` does not
    /// fit). Every topic fits `mdm`.
    public func fits(topic: some StringProtocol) -> Bool {
        let topic = String(topic)
        if let suffix = topicSuffix {
            return topic.utf8.count > suffix.utf8.count && topic.hasSuffix(suffix)
        }
        if self == .mdm { return true }
        return !APNsPushType.allSuffixes.contains { topic.hasSuffix($0) }
    }

    private static let allSuffixes = allCases.compactMap(\.topicSuffix)
}

extension APNsPushType {
    /// "a liveactivity push", "an alert push": the push type with its article, for
    /// messages.
    public var aPush: String {
        let vowel = rawValue.first.map { "aeiou".contains($0) } ?? false
        return "\(vowel ? "an" : "a") \(rawValue) push"
    }
}
