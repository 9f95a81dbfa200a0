public import Foundation
public import IsletCore

/// Filters for listing activities.
public struct ActivityFilter: Sendable {
    /// Only this status, as of now: an activity started before `expiredBefore`
    /// reads as ended whatever its stored status.
    public var status: ActivityStatus?
    /// Activities started at or before this have run out of every window.
    public var expiredBefore: Date?
    /// Only this type.
    public var activityType: String?
    /// Only activities older than this sequence (the cursor).
    public var before: Int64?
    /// At most this many.
    public var limit: Int

    /// Creates a filter.
    public init(status: ActivityStatus? = nil, activityType: String? = nil, before: Int64? = nil, limit: Int = 50) {
        self.status = status
        self.activityType = activityType
        self.before = before
        self.limit = limit
    }
}
