import Foundation

/// A tap counted on a push (see ``PushQueue/recordTap(appID:activityID:deviceID:apnsID:at:)``).
public struct RecordedTap: Sendable, Hashable {
    /// The `apns-id` of the push the tap was attributed to.
    public var apnsID: String
    /// Whether it counted: `false` when the push's last tap was reported at the same
    /// time (the same tap, sent again).
    public var counted: Bool

    /// Creates a record.
    public init(apnsID: String, counted: Bool) {
        self.apnsID = apnsID
        self.counted = counted
    }
}
