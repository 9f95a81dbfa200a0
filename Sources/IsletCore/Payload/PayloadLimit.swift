/// The most bytes a payload may carry by the way it goes to its devices, and how a
/// refusal names that way: each transport's limit applies to what goes by it.
///
/// An activity on a broadcast channel can go two ways at once: the broadcast, which
/// APNs takes up to 5,120 bytes, and the copies on devices that could not subscribe,
/// which hold their own update token and take 4,096. Its Android copies take an FCM
/// data message of at most 4,096 bytes of keys and values.
public struct PayloadLimit: Sendable, Hashable, CustomStringConvertible {
    /// The most bytes the payload may carry.
    public let bytes: Int
    /// What the refusal calls the payload: "the payload", "the broadcast payload".
    public let noun: String
    /// Who takes the payload: "APNs" or "FCM".
    public let service: String
    /// The way, after the number: "on a channel", "for a push-to-start token".
    public let route: String

    /// Creates a limit; the named ones below are those Islet sends by.
    public init(bytes: Int, noun: String, service: String, route: String) {
        self.bytes = bytes
        self.noun = noun
        self.service = service
        self.route = route
    }

    /// An iOS 18 broadcast to every device subscribed to a channel.
    public static let broadcast = PayloadLimit(
        bytes: APNsLimits.maximumBroadcastPayloadBytes, noun: "the broadcast payload", service: "APNs",
        route: "on a channel")
    /// An update or an end to one device's own update token.
    public static let updateToken = PayloadLimit(
        bytes: APNsLimits.maximumPayloadBytes, noun: "the payload", service: "APNs",
        route: "for a device's own update token")
    /// A start to a device's push-to-start token.
    public static let pushToStartToken = PayloadLimit(
        bytes: APNsLimits.maximumPayloadBytes, noun: "the payload", service: "APNs", route: "for a push-to-start token")
    /// An alert to a device token.
    public static let deviceToken = PayloadLimit(
        bytes: APNsPushType.alert.maximumPayloadBytes, noun: "the payload", service: "APNs", route: "for a device token")
    /// An FCM data message's `data`, counted as its keys' and values' bytes.
    public static let fcmDataMessage = PayloadLimit(
        bytes: AndroidDataPush.dataLimit, noun: "the data message", service: "FCM", route: "in a data message")

    /// The limit a Live Activity push for `event` meets when it goes to a token:
    /// push-to-start for a start, the activity's update token otherwise.
    public static func token(for event: LiveActivityEvent) -> PayloadLimit {
        event == .start ? .pushToStartToken : .updateToken
    }

    /// The refusal's sentence for a payload of `size` bytes: "the broadcast payload
    /// is 5,300 bytes; APNs takes at most 5,120 on a channel".
    public func refusal(size: Int) -> String {
        "\(noun) is \(Self.grouped(size)) bytes; \(service) takes at most \(Self.grouped(bytes)) \(route)"
    }

    /// The limit as a phrase: "5,120 bytes on a channel (APNs)".
    public var description: String { "\(Self.grouped(bytes)) bytes \(route) (\(service))" }

    /// `number` with a comma between each group of three digits, as `5,120`.
    static func grouped(_ number: Int) -> String {
        let digits = String(number.magnitude)
        var text = ""
        for (index, digit) in digits.enumerated() {
            if index > 0, (digits.count - index) % 3 == 0 { text.append(",") }
            text.append(digit)
        }
        return number < 0 ? "-" + text : text
    }
}
