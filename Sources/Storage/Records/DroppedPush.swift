public import IsletCore

/// A queued push that will never be sent, as the statement that dropped it answers.
public struct DroppedPush: Sendable, Hashable {
    /// The push's row id.
    public var pushID: Int64
    /// The app.
    public var appID: String
    /// The activity.
    public var activityID: String?
    /// The device.
    public var deviceID: String
    /// What it would have done.
    public var event: PushEvent
    /// The kind of token it would have gone to.
    public var tokenKind: PushTokenKind
    /// Its `apns-id`.
    public var apnsID: String
    /// Why it was dropped.
    public var reason: String

    /// Creates a record.
    public init(
        pushID: Int64, appID: String, activityID: String?, deviceID: String, event: PushEvent, tokenKind: PushTokenKind,
        apnsID: String, reason: String
    ) {
        self.pushID = pushID
        self.appID = appID
        self.activityID = activityID
        self.deviceID = deviceID
        self.event = event
        self.tokenKind = tokenKind
        self.apnsID = apnsID
        self.reason = reason
    }
}
