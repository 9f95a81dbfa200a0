public import Foundation

/// A device's copy of an activity whose push-to-start APNs accepted but whose
/// update token never came.
public struct UnconfirmedStart: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The activity.
    public var activityID: String
    /// The device.
    public var deviceID: String
    /// The start push's `apns-id`.
    public var apnsID: String
    /// When APNs accepted it.
    public var sentAt: Date

    /// Creates a record.
    public init(appID: String, activityID: String, deviceID: String, apnsID: String, sentAt: Date) {
        self.appID = appID
        self.activityID = activityID
        self.deviceID = deviceID
        self.apnsID = apnsID
        self.sentAt = sentAt
    }
}
