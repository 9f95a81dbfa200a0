public import Foundation
public import IsletCore

/// A device as its page shows it: the device, its push-to-start tokens, its newest
/// copies of activities and the newest of its pushes that have rows (those that
/// differed from their send: failures, retries, downgrades, deferred starts; and
/// alerts).
public struct DeviceHistory: Sendable, Hashable {
    /// A push-to-start token, by the activity type it starts.
    public struct StartToken: Sendable, Hashable {
        /// The activity type.
        public var activityType: String
        /// The token.
        public var token: String
        /// Its APNs environment.
        public var environment: APNsEnvironment
        /// When it was stored.
        public var registeredAt: Date

        /// Creates a token.
        public init(activityType: String, token: String, environment: APNsEnvironment, registeredAt: Date) {
            self.activityType = activityType
            self.token = token
            self.environment = environment
            self.registeredAt = registeredAt
        }
    }

    /// A copy of an activity, with the activity's id and type.
    public struct Copy: Sendable, Hashable {
        /// The activity's id.
        public var activityID: String
        /// Its type.
        public var activityType: String
        /// The device's copy.
        public var record: CopyRecord

        /// Creates a copy.
        public init(activityID: String, activityType: String, record: CopyRecord) {
            self.activityID = activityID
            self.activityType = activityType
            self.record = record
        }
    }

    /// A push's row, with its activity (`nil` for an alert).
    public struct Push: Sendable, Hashable {
        /// Its activity.
        public var activityID: String?
        /// The push.
        public var item: PushHistoryItem

        /// Creates a push.
        public init(activityID: String?, item: PushHistoryItem) {
            self.activityID = activityID
            self.item = item
        }
    }

    /// The device.
    public var device: DeviceRecord
    /// Its push-to-start tokens, by activity type.
    public var startTokens: [StartToken]
    /// Its newest copies, newest first.
    public var copies: [Copy]
    /// Its newest pushes with rows, newest first.
    public var pushes: [Push]

    /// Creates a history.
    public init(device: DeviceRecord, startTokens: [StartToken], copies: [Copy], pushes: [Push]) {
        self.device = device
        self.startTokens = startTokens
        self.copies = copies
        self.pushes = pushes
    }
}

/// Which of an app's push rows to read: those of sends made from `from` (inclusive)
/// to `to` (exclusive), optionally of one activity, of one reason, or failed only.
public struct PushRowFilter: Sendable, Hashable {
    /// The sends' earliest time.
    public var from: Date
    /// The sends' end time (exclusive).
    public var to: Date
    /// Only this activity's.
    public var activityID: String?
    /// Only those APNs or FCM refused with this reason (`unknown`: those with none).
    public var reason: String?
    /// Only those that failed or were dropped.
    public var failedOnly: Bool

    /// Creates a filter.
    public init(from: Date, to: Date, activityID: String? = nil, reason: String? = nil, failedOnly: Bool = false) {
        self.from = from
        self.to = to
        self.activityID = activityID
        self.reason = reason
        self.failedOnly = failedOnly
    }
}
