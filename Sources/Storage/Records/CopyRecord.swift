public import Foundation
public import IsletCore

/// One device's copy of an activity.
public struct CopyRecord: Sendable, Hashable {
    /// The device.
    public var deviceID: String
    /// Pending, active or ended.
    public var status: CopyStatus
    /// The update token, while Islet holds one.
    public var updateToken: String?
    /// The environment of the update token.
    public var environment: APNsEnvironment
    /// When the update token was last registered.
    public var tokenRegisteredAt: Date?
    /// When the copy was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// When it ended.
    public var endedAt: Date?
    /// Why it ended.
    public var endCause: EndCause?
    /// Whether the copy listens on the activity's broadcast channel (started with
    /// `input-push-channel`): it takes broadcasts, and no update token comes for it.
    public var subscribed: Bool
    /// The device's platform: `ios`, or `android` for a copy FCM reaches through the
    /// device's own token (active from its start, with no update token).
    public var platform: String
    /// Whether the device joined on its own (registered for the activity, or an
    /// Android device joined it) rather than being targeted by its start.
    public var joined: Bool = false
    /// The newest send the device said it showed (a receipt), and when.
    public var lastReceivedSendID: Int64?
    /// When the device showed `lastReceivedSendID`.
    public var lastReceivedAt: Date?

    /// Creates a record.
    public init(
        deviceID: String, status: CopyStatus, updateToken: String?, environment: APNsEnvironment,
        tokenRegisteredAt: Date?, createdAt: Date, updatedAt: Date, endedAt: Date?, endCause: EndCause?,
        subscribed: Bool = false, platform: String = "ios"
    ) {
        self.subscribed = subscribed
        self.platform = platform
        self.deviceID = deviceID
        self.status = status
        self.updateToken = updateToken
        self.environment = environment
        self.tokenRegisteredAt = tokenRegisteredAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
        self.endCause = endCause
    }
}
