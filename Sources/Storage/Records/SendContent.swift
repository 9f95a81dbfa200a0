public import Foundation
public import IsletCore

/// What is sent to every target of one send: the payload and its APNs headers.
public struct SendContent: Sendable, Hashable {
    /// Start, update, end or alert.
    public var event: PushEvent
    /// `apns-topic`.
    public var topic: String
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The payload.
    public var payload: Data

    /// Creates content.
    public init(
        event: PushEvent, topic: String, pushType: APNsPushType, priority: APNsPriority, expiration: Int64?,
        collapseID: String?, payload: Data
    ) {
        self.event = event
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }

    /// Whether the payload is a start subscribing its phone to a broadcast channel
    /// (`aps.input-push-channel`), whose id belongs to one environment.
    public var subscribesToChannel: Bool {
        event == .start && payload.range(of: Data(#""input-push-channel""#.utf8)) != nil
    }
}
