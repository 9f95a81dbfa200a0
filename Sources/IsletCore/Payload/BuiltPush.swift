public import Foundation

/// A push that has passed every payload rule: the exact body to send and the header
/// values that go with it. Only the builders (``LiveActivityPush`` and ``AlertPush``)
/// make one.
public struct BuiltPush: Sendable, Hashable {
    /// The exact JSON bytes to send as the request body.
    public let payload: Data
    /// The `apns-push-type` header.
    public let pushType: APNsPushType
    /// The `apns-topic` header: the bundle id, with `.push-type.liveactivity` for a
    /// Live Activity.
    public let topic: String
    /// The `apns-priority` header.
    public let priority: APNsPriority
    /// The `apns-expiration` header in Unix seconds (0: try once only); `nil` when
    /// the header is left out.
    public let expiration: Int64?
    /// The `apns-collapse-id` header; `nil` when it is left out.
    public let collapseID: String?
    /// The Live Activity event; `nil` for an alert.
    public let event: LiveActivityEvent?
    /// The `aps.timestamp` sent, which the caller stores as the activity's last one;
    /// `nil` for an alert.
    public let timestamp: Int64?
    /// The one kind of token this push may be addressed to: push-to-start for a
    /// start, the activity's update token for an update or an end, a device token
    /// for an alert.
    public let tokenKind: PushTokenKind

    init(
        payload: Data, pushType: APNsPushType, topic: String, priority: APNsPriority, expiration: Int64?,
        collapseID: String?, event: LiveActivityEvent?, timestamp: Int64?, tokenKind: PushTokenKind
    ) {
        self.payload = payload
        self.pushType = pushType
        self.topic = topic
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.event = event
        self.timestamp = timestamp
        self.tokenKind = tokenKind
    }

    /// Whether this push may be sent to a token of `kind`. A Live Activity push never
    /// goes to a device token and an alert never goes to a Live Activity token: APNs
    /// would answer DeviceTokenNotForTopic, or the device would drop the push.
    public func accepts(_ kind: PushTokenKind) -> Bool {
        kind == tokenKind
    }

    /// The APNs header fields this push is sent with, in lowercase: push type, topic,
    /// priority, and expiration and collapse id when set. The caller adds
    /// `authorization` and `apns-id`.
    public var headerFields: [(name: String, value: String)] {
        var fields = [
            (name: APNsHeaderName.pushType, value: pushType.rawValue),
            (name: APNsHeaderName.topic, value: topic),
            (name: APNsHeaderName.priority, value: priority.description),
        ]
        if let expiration { fields.append((name: APNsHeaderName.expiration, value: String(expiration))) }
        if let collapseID { fields.append((name: APNsHeaderName.collapseID, value: collapseID)) }
        return fields
    }
}
