public import IsletCore

/// What a device registration changes. `nil` leaves the stored value alone, so that
/// a registration without a token never erases one.
public struct DeviceRegistration: Sendable {
    /// `ios`.
    public var platform: String
    /// The environment of the device's tokens.
    public var environment: APNsEnvironment
    /// A new device token, or `nil` to keep the stored one.
    public var apnsToken: String?
    /// `.some(nil)` clears the user id; `nil` keeps it.
    public var userID: String??
    /// The new tags, or `nil` to keep them.
    public var tags: [String]?
    /// Whether the device allowed frequent updates: `.some(nil)` forgets what it
    /// said (unknown); `nil` keeps it.
    public var frequentUpdates: Bool?? = nil
    /// The device's iOS version (`18.2`): `.some(nil)` forgets it; `nil` keeps it.
    public var osVersion: String?? = nil
    /// A new FCM registration token (Android), or `nil` to keep the stored one.
    public var fcmToken: String? = nil

    /// Creates a registration.
    public init(platform: String, environment: APNsEnvironment, apnsToken: String?, userID: String??, tags: [String]?) {
        self.platform = platform
        self.environment = environment
        self.apnsToken = apnsToken
        self.userID = userID
        self.tags = tags
    }
}
