public import Foundation
public import IsletCore

/// An activity's timeline: its settings (the entries are schedule items).
public struct TimelineRecord: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The activity.
    public var activityID: String
    /// Which put of the timeline this is; its entries carry it.
    public var generation: Int64
    /// When the activity ends, if the timeline says.
    public var endAt: Date?
    /// Whether it runs past the activity's 8 hours by renewal.
    public var renew: Bool
    /// When the activity is renewed, while a renewal is due.
    public var renewAt: Date?
    /// The alert a successor starts with.
    public var startAlert: JSONValue?
    /// When it was put.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        appID: String, activityID: String, generation: Int64, endAt: Date?, renew: Bool, renewAt: Date?,
        startAlert: JSONValue?, updatedAt: Date
    ) {
        self.appID = appID
        self.activityID = activityID
        self.generation = generation
        self.endAt = endAt
        self.renew = renew
        self.renewAt = renewAt
        self.startAlert = startAlert
        self.updatedAt = updatedAt
    }
}
