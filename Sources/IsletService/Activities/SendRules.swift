import Foundation
import IsletCore
import Storage

/// The rules every send shares: credentials, payload limits (a broken one named by
/// the command's own field), end times, and what a send stores.
enum SendRules {
    /// An app without APNs credentials cannot send.
    static func requireCredentials(_ app: AppRecord) throws(ServiceError) {
        guard app.credentials != nil else {
            throw ServiceError(
                .conflict, "App \(app.id) has no APNs credentials; add them with PATCH /v1/apps/\(app.id) before sending.",
                reason: ScheduleReason.noCredentials)
        }
    }

    /// An app with neither APNs credentials nor an FCM service account cannot send an
    /// activity (one with only one of them reaches that platform's devices).
    static func requireActivityCredentials(_ app: AppRecord) throws(ServiceError) {
        guard app.credentials == nil, app.fcm == nil else { return }
        throw ServiceError(
            .conflict,
            "App \(app.id) has no APNs credentials and no FCM service account; add them with PATCH /v1/apps/\(app.id) before sending.",
            reason: ScheduleReason.noCredentials)
    }

    /// The activity, or `notFound`.
    static func activity(_ session: any ActivityStore, appID: String, activityID: String) throws -> ActivityRecord {
        guard let activity = try session.activity(appID: appID, activityID: activityID) else {
            throw ServiceError(.notFound, "There is no activity \(activityID).", reason: ScheduleReason.activityEnded)
        }
        return activity
    }

    /// The activity, locked until the transaction ends, or `notFound`: for a change
    /// that depends on its status or last timestamp, so that two nodes changing it at
    /// once take turns (each update's timestamp above the one before it, nothing
    /// after an end).
    static func lockedActivity(_ session: any ActivityStore, appID: String, activityID: String) throws -> ActivityRecord {
        guard let activity = try session.lockedActivity(appID: appID, activityID: activityID) else {
            throw ServiceError(.notFound, "There is no activity \(activityID).", reason: ScheduleReason.activityEnded)
        }
        return activity
    }

    /// An end time must lie ahead, and within the activity's lifecycle window.
    static func checkEndAt(_ endAt: Date, startedAt: Date, lifecycle: ActivityLifecycle, now: Date) throws(ServiceError) {
        let expiry = lifecycle.expiry(startedAt: startedAt)
        let problem: String?
        if endAt <= now {
            problem = "must lie ahead (now is \(RFC3339.string(now)))"
        } else if endAt > expiry {
            problem = "must come before the activity's window closes at \(RFC3339.string(expiry))"
        } else {
            problem = nil
        }
        if let problem {
            throw ServiceError.invalid("The field end_at is invalid: it \(problem).", field: "end_at", problem)
        }
    }

    /// Builds the payload; a broken rule is `invalid`, naming the command's own field.
    /// `limit` is the size the way it goes takes (a token's by default).
    static func build(
        _ push: LiveActivityPush, bundleID: String, now: Date, lastTimestamp: Int64?, limit: PayloadLimit? = nil
    ) throws(ServiceError) -> BuiltPush {
        do {
            return try push.build(bundleID: bundleID, now: now, lastTimestamp: lastTimestamp, limit: limit)
        } catch {
            throw payloadError(error)
        }
    }

    /// The limit an update or an end of an activity is built to: the broadcast's on
    /// a channel (the copies holding their own update token are checked apart, by
    /// ``checkTokenCopies(_:built:activity:appID:session:)``), an update token's otherwise.
    static func limit(for delivery: ActivityDelivery) -> PayloadLimit {
        delivery == .channel ? .broadcast : .updateToken
    }

    /// The limit a start is built to: a push-to-start token's, or none when the app
    /// has no APNs credentials and so sends it to no iOS device (its Android devices'
    /// data message is checked to FCM's size with its targets).
    static func startLimit(for app: AppRecord) -> PayloadLimit? {
        app.credentials == nil ? unsentByAPNs : nil
    }

    /// No limit: for a payload that goes by no APNs request.
    private static let unsentByAPNs = PayloadLimit(
        bytes: .max, noun: "the payload", service: "APNs", route: "when the app has no APNs credentials")

    /// On a channel, an update or an end built to the broadcast's 5,120 bytes also
    /// goes to the copies holding their own update token (devices that could not
    /// subscribe), which take 4,096: refused, naming that limit, when there are any.
    static func checkTokenCopies(
        _ push: LiveActivityPush, built: BuiltPush, activity: ActivityRecord, appID: String, session: any ActivityStore
    ) throws {
        guard activity.delivery == .channel, built.payload.count > PayloadLimit.updateToken.bytes,
            try !session.updateTargets(appID: appID, activityID: activity.activityID, afterDeviceID: nil, limit: 1).isEmpty
        else { return }
        do {
            try push.check(built, fitsIn: .updateToken)
        } catch {
            throw payloadError(error)
        }
    }

    /// A payload rule broken, as a refusal naming the command's field.
    static func payloadError(_ error: PayloadError) -> ServiceError {
        let field = commandField(error.field)
        return ServiceError.invalid(
            "The field \(field) is invalid: \(ServiceError.sentence(error.message))", field: field, error.message)
    }

    /// The command field a payload path comes from.
    static func commandField(_ field: String) -> String {
        let prefixes: [(String, String)] = [
            ("aps.attributes-type", "activity_type"), ("aps.attributes", "attributes"),
            ("aps.content-state", "content_state"), ("aps.alert", "alert"), ("aps.stale-date", "stale_date"),
            ("aps.dismissal-date", "dismissal_date"), ("aps.relevance-score", "relevance_score"),
            ("apns-priority", "priority"), ("apns-topic", "bundle_id"),
        ]
        for (prefix, name) in prefixes where field == prefix || field.hasPrefix(prefix + ".") || field.hasPrefix(prefix + "[") {
            return name + field.dropFirst(prefix.count)
        }
        return field
    }

    /// What a send stores, once for all its targets.
    static func content(_ built: BuiltPush, event: PushEvent) -> SendContent {
        SendContent(
            event: event, topic: built.topic, pushType: built.pushType, priority: built.priority,
            expiration: built.expiration, collapseID: built.collapseID, payload: built.payload)
    }
}
