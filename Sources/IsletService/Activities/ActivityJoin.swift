import Foundation
public import IsletCore
public import Storage

/// Who may follow an activity, as the backend reads it: its rule, the audience it
/// lets in beside the devices its start targeted, and the devices that joined on
/// their own.
public struct ActivityJoinView: Sendable {
    /// The activity.
    public let activityID: String
    /// Remote (the backend started it) or local (a device created it).
    public let origin: ActivityRecord.Origin
    /// The rule a backend start set (`nil` for a local activity, and for one started
    /// before the rule existed, which any device may follow).
    public let join: JoinRule?
    /// The app's `local_join`, which governs a local activity.
    public let localJoin: LocalJoinRule
    /// The devices the activity lets in beside those its start targeted (under
    /// `audience`).
    public let audience: JoinAudience
    /// The device that created a local activity, and its user id then.
    public let createdBy: String?
    public let creatorUserID: String?
    /// The copies devices made by joining (not targeted by the start), oldest first.
    public let joined: [CopyRecord]
}

extension ActivityService {
    /// Who may follow an activity, and who joined it.
    public func join(appID: String, activityID: String) async throws(ServiceError) -> ActivityJoinView {
        try await environment.read { (session: any Stores) in
            try Self.joinView(appID: appID, activityID: activityID, session: session)
        }
    }

    /// Lets more devices follow an activity the backend started under `audience`:
    /// adds `audience`'s user ids, device ids and tags to those it lets in. Answers
    /// who may follow it now.
    public func widenAudience(
        appID: String, activityID: String, adding audience: JoinAudience
    ) async throws(ServiceError) -> ActivityJoinView {
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let view = try await environment.write { (session: any Stores) -> ActivityJoinView in
            let activity = try SendRules.lockedActivity(session, appID: appID, activityID: activityID)
            guard lifecycle.effectiveStatus(activity.status, startedAt: activity.startedAt, now: now) != .ended else {
                throw ServiceError(.conflict, "Activity \(activityID) has ended; no device can follow it any more.")
            }
            guard activity.origin == .remote else {
                throw ServiceError(
                    .conflict,
                    "Activity \(activityID) was created on a device; the app's local_join says who may follow it, not an audience.")
            }
            guard activity.join == .audience else {
                throw ServiceError(
                    .conflict, "Activity \(activityID) lets any device follow it (join: anyone); there is no audience to widen.")
            }
            // Added, then counted as the answer reads it: past the ceiling, the
            // transaction rolls back and nothing is added.
            try session.addJoinAudience(appID: appID, activityID: activityID, audience)
            let view = try Self.joinView(appID: appID, activityID: activityID, session: session)
            if view.audience.count > JoinAudience.maximumValues {
                throw ServiceError.invalid(
                    "The activity's audience would hold \(view.audience.count) values; it holds at most \(JoinAudience.maximumValues).",
                    field: "device_ids", "would take the audience past \(JoinAudience.maximumValues) values in all")
            }
            return view
        }
        environment.logger.info(
            "activity audience widened", ("app", .string(appID)), ("activity", .string(activityID)),
            ("values", .int(audience.count)))
        return view
    }

    static func joinView(appID: String, activityID: String, session: any Stores) throws -> ActivityJoinView {
        let activity = try SendRules.activity(session, appID: appID, activityID: activityID)
        let app = try session.app(id: appID)
        let joined = try session.copies(appID: appID, activityID: activityID).filter(\.joined)
            .sorted { ($0.createdAt, $0.deviceID) < ($1.createdAt, $1.deviceID) }
        return ActivityJoinView(
            activityID: activityID, origin: activity.origin, join: activity.join, localJoin: app?.localJoin ?? .anyone,
            audience: try session.joinAudience(appID: appID, activityID: activityID), createdBy: activity.createdBy,
            creatorUserID: activity.creatorUserID, joined: joined)
    }
}
