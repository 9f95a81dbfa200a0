public import Foundation
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

/// What the expiry sweep ended.
public struct ExpiredActivities: Sendable, Hashable {
    /// The activities, by app.
    public var activities: [ActivityKey]
    /// Their starts and updates still queued, dropped.
    public var droppedPushes: [DroppedPush]

    /// Creates a result.
    public init(activities: [ActivityKey], droppedPushes: [DroppedPush]) {
        self.activities = activities
        self.droppedPushes = droppedPushes
    }
}

/// An activity's identity.
public struct ActivityKey: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The activity.
    public var activityID: String

    /// Creates a key.
    public init(appID: String, activityID: String) {
        self.appID = appID
        self.activityID = activityID
    }
}

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
