public import Foundation
public import IsletCore

/// An activity as stored.
public struct ActivityRecord: Sendable, Hashable {
    /// How an activity came to Islet.
    public enum Origin: String, Sendable, Hashable, CaseIterable {
        /// Started by a push-to-start from Islet.
        case remote
        /// Started by the app on the device, and first seen when it registered its
        /// update token.
        case local
    }

    /// The listing cursor: larger is newer.
    public var sequence: Int64
    /// The activity id (the app's, or the one given to the start route).
    public var activityID: String
    /// The activity type (the app's `ActivityAttributes` type name).
    public var activityType: String
    /// Remote or local.
    public var origin: Origin
    /// The stored status (see `ActivityLifecycle.effectiveStatus`).
    public var status: ActivityStatus
    /// The attributes sent with the start, if Islet started it.
    public var attributes: JSONValue?
    /// The last content state sent.
    public var contentState: JSONValue?
    /// The last `aps.timestamp` sent.
    public var lastTimestamp: Int64?
    /// When it started.
    public var startedAt: Date
    /// When it was last updated.
    public var updatedAt: Date?
    /// When it ended.
    public var endedAt: Date?
    /// Why it ended.
    public var endCause: EndCause?
    /// When Islet ends it, if an end time was set.
    public var endAt: Date?
    /// The alert it was started with, if Islet started it.
    public var startAlert: JSONValue?
    /// Its renewal past the 8 hours: what it was renewed to or from.
    public var renewal: RenewalLinks
    /// How its updates and end reach its devices.
    public var delivery: ActivityDelivery = .tokens
    /// Who may follow it, for an activity the backend started (`nil` for a local
    /// one, which its app's `local_join` governs, and for one started before the
    /// rule existed, which any device may follow).
    public var join: JoinRule?
    /// The device that created it, for a local activity.
    public var createdBy: String?
    /// The user id its creating device had then, for a local activity.
    public var creatorUserID: String?

    /// Creates a record.
    public init(
        sequence: Int64, activityID: String, activityType: String, origin: Origin, status: ActivityStatus,
        attributes: JSONValue?, contentState: JSONValue?, lastTimestamp: Int64?, startedAt: Date, updatedAt: Date?,
        endedAt: Date?, endCause: EndCause?, endAt: Date? = nil, startAlert: JSONValue? = nil,
        renewal: RenewalLinks = RenewalLinks(), delivery: ActivityDelivery = .tokens
    ) {
        self.sequence = sequence
        self.activityID = activityID
        self.activityType = activityType
        self.origin = origin
        self.status = status
        self.attributes = attributes
        self.contentState = contentState
        self.lastTimestamp = lastTimestamp
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
        self.endCause = endCause
        self.endAt = endAt
        self.startAlert = startAlert
        self.renewal = renewal
        self.delivery = delivery
    }
}
