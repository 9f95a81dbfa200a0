public import Foundation
public import IsletCore

/// A device of an app.
public struct DeviceRecord: Sendable, Hashable {
    /// The app's own install id.
    public var deviceID: String
    /// `ios`.
    public var platform: String
    /// The APNs environment of the device's tokens.
    public var environment: APNsEnvironment
    /// The ordinary (alert) push token, if the device gave one.
    public var apnsToken: String?
    /// When APNs refused the device token; `nil` while reachable.
    public var unreachableAt: Date?
    /// The app's user id (external id).
    public var userID: String?
    /// Tags, sorted.
    public var tags: [String]
    /// Whether the device allowed frequent updates (ActivityKit's
    /// `frequentPushesEnabled`); `nil` when it never said.
    public var frequentUpdates: Bool?
    /// The device's iOS version, as it reported it; `nil` when it never said.
    public var osVersion: String?
    /// The FCM registration token of an Android device.
    public var fcmToken: String?
    /// Whether the device has a secret (one registered before secrets existed has
    /// none until its next registration, or a reset, gives it one).
    public var hasSecret: Bool = false
    /// When it first registered.
    public var createdAt: Date
    /// When it last registered.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        deviceID: String, platform: String, environment: APNsEnvironment, apnsToken: String?, unreachableAt: Date?,
        userID: String?, tags: [String], createdAt: Date, updatedAt: Date
    ) {
        self.deviceID = deviceID
        self.platform = platform
        self.environment = environment
        self.apnsToken = apnsToken
        self.unreachableAt = unreachableAt
        self.userID = userID
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
