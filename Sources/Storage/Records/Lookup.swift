/// What one search of an app's records found (`GET …/lookup`): each list at most
/// the limit asked for.
public struct LookupResult: Sendable, Hashable {
    /// Activities whose id is the text.
    public var activities: [LookupActivity] = []
    /// Devices whose id or user id is the text, or whose device, FCM or
    /// push-to-start token begins with it; `matched` says which.
    public var devices: [LookupDevice] = []
    /// Devices' copies of activities whose update token begins with the text.
    public var copies: [LookupCopy] = []
    /// Pushes (those with a row of their own) whose apns-id or apns-unique-id is the
    /// text.
    public var pushes: [LookupPush] = []

    public init() {}
}

public struct LookupActivity: Sendable, Hashable {
    public var activityID: String
    public var activityType: String
    public var status: String
    public init(activityID: String, activityType: String, status: String) {
        self.activityID = activityID
        self.activityType = activityType
        self.status = status
    }
}

public struct LookupDevice: Sendable, Hashable {
    public var deviceID: String
    public var platform: String
    public var userID: String?
    /// `device_id`, `user_id`, `apns_token`, `fcm_token` or `push_to_start_token`.
    public var matched: String
    public init(deviceID: String, platform: String, userID: String?, matched: String) {
        self.deviceID = deviceID
        self.platform = platform
        self.userID = userID
        self.matched = matched
    }
}

public struct LookupCopy: Sendable, Hashable {
    public var activityID: String
    public var deviceID: String
    public init(activityID: String, deviceID: String) {
        self.activityID = activityID
        self.deviceID = deviceID
    }
}

public struct LookupPush: Sendable, Hashable {
    public var activityID: String?
    public var deviceID: String
    public var apnsID: String
    public var event: String
    public var status: String
    public var sendID: Int64
    /// `apns_id` or `apns_unique_id`.
    public var matched: String
    public init(activityID: String?, deviceID: String, apnsID: String, event: String, status: String, sendID: Int64, matched: String) {
        self.activityID = activityID
        self.deviceID = deviceID
        self.apnsID = apnsID
        self.event = event
        self.status = status
        self.sendID = sendID
        self.matched = matched
    }
}
