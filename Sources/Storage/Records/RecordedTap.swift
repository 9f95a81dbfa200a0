public import Foundation

/// A tap on a device's copy of an activity (see
/// ``PushQueue/recordTap(appID:activityID:deviceID:apnsID:at:sentBy:)``).
public struct RecordedTap: Sendable, Hashable {
    /// The `apns-id` of the push the tap was attributed to; `nil` when none was
    /// sent to the copy yet.
    public var apnsID: String?
    /// Whether it counted: `false` when the same tap (the same push, the same time)
    /// was counted before.
    public var counted: Bool
    /// The earliest the push could have arrived: when it was sent or, not sent yet,
    /// made (`nil` without a push).
    public var pushArrivedFrom: Date?

    /// Creates a record.
    public init(apnsID: String?, counted: Bool, pushArrivedFrom: Date? = nil) {
        self.apnsID = apnsID
        self.counted = counted
        self.pushArrivedFrom = pushArrivedFrom
    }
}
