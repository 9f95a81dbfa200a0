import Foundation
import IsletCore
import Storage

/// A command as a schedule item stores it, to be run when its time comes: plain JSON
/// (times in Unix milliseconds), read back into the same command the service runs
/// for a request.
enum ScheduledCommand {
    // MARK: - Writing

    static func json(_ command: StartActivity) -> JSONValue {
        object([
            "activity_id": .string(command.activityID), "activity_type": .string(command.activityType),
            "attributes": command.attributes, "content_state": command.contentState, "alert": command.alert.map(json),
            "audience": command.audience.map(json), "end_at": date(command.endAt), "stale_date": date(command.staleDate),
            "relevance_score": command.relevanceScore.map(JSONValue.double),
            "priority": command.priority.map { .integer(Int64($0)) }, "join": command.join.map { .string($0.rawValue) },
        ])
    }

    static func json(_ command: UpdateActivity) -> JSONValue {
        object([
            "content_state": command.contentState, "alert": command.alert.map(json), "end_at": date(command.endAt),
            "stale_date": date(command.staleDate), "relevance_score": command.relevanceScore.map(JSONValue.double),
            "priority": command.priority.map { .integer(Int64($0)) },
        ])
    }

    static func json(_ command: EndActivity) -> JSONValue {
        object(["content_state": command.contentState, "dismissal_date": date(command.dismissalDate)])
    }

    static func json(_ command: SendNotification) -> JSONValue {
        object(["audience": json(command.audience), "alert": command.alert.map(json)])
    }

    static func json(_ alert: PushAlert) -> JSONValue {
        object(["title": json(alert.title), "body": json(alert.body), "sound": alert.sound.map(JSONValue.string)])
    }

    private static func json(_ text: PushAlert.Text) -> JSONValue {
        switch text {
        case .literal(let value): .string(value)
        case .localized(let key, let arguments): .object(["key": .string(key), "arguments": .array(arguments.map(JSONValue.string))])
        }
    }

    private static func json(_ audience: Audience) -> JSONValue {
        .object([audience.field: .array(audience.values.map(JSONValue.string))])
    }

    private static func date(_ date: Date?) -> JSONValue? { date.map { .integer($0.unixMilliseconds) } }

    private static func object(_ members: [String: JSONValue?]) -> JSONValue {
        .object(members.compactMapValues { $0 })
    }

    // MARK: - Reading

    static func start(_ json: JSONValue, app: AppRecord) throws -> StartActivity {
        guard let activityID = json["activity_id"]?.stringValue, let activityType = json["activity_type"]?.stringValue,
            let audienceJSON = json["audience"], let audience = audience(audienceJSON)
        else { throw corrupt("start") }
        var start = StartActivity(
            app: app, activityID: activityID, activityType: activityType, attributes: json["attributes"],
            contentState: json["content_state"], alert: try json["alert"].map(alert), audience: audience,
            endAt: date(json["end_at"]), staleDate: date(json["stale_date"]),
            relevanceScore: json["relevance_score"]?.doubleValue, priority: json["priority"]?.int64Value.map { Int($0) },
            idempotency: nil)
        start.join = json["join"]?.stringValue.flatMap(JoinRule.init(rawValue:))
        return start
    }

    static func update(_ json: JSONValue, app: AppRecord, activityID: String) throws -> UpdateActivity {
        UpdateActivity(
            app: app, activityID: activityID, contentState: json["content_state"], alert: try json["alert"].map(alert),
            endAt: date(json["end_at"]), staleDate: date(json["stale_date"]),
            relevanceScore: json["relevance_score"]?.doubleValue, priority: json["priority"]?.int64Value.map { Int($0) },
            idempotency: nil)
    }

    static func end(_ json: JSONValue, app: AppRecord, activityID: String, cause: EndCause) -> EndActivity {
        EndActivity(
            app: app, activityID: activityID, contentState: json["content_state"],
            dismissalDate: date(json["dismissal_date"]), cause: cause, idempotency: nil)
    }

    static func notification(_ json: JSONValue, app: AppRecord) throws -> SendNotification {
        guard let audienceJSON = json["audience"], let audience = audience(audienceJSON) else { throw corrupt("notification") }
        return SendNotification(app: app, audience: audience, alert: try json["alert"].map(alert), idempotency: nil)
    }

    static func alert(_ json: JSONValue) throws -> PushAlert {
        guard let title = json["title"].flatMap(text), let body = json["body"].flatMap(text) else { throw corrupt("alert") }
        return PushAlert(title: title, body: body, sound: json["sound"]?.stringValue)
    }

    private static func text(_ json: JSONValue) -> PushAlert.Text? {
        if let literal = json.stringValue { return .literal(literal) }
        guard let key = json["key"]?.stringValue else { return nil }
        let arguments: [String]
        if case .array(let items)? = json["arguments"] { arguments = items.compactMap(\.stringValue) } else { arguments = [] }
        return .localized(key: key, arguments: arguments)
    }

    private static func audience(_ json: JSONValue) -> Audience? {
        func values(_ key: String) -> [String]? {
            guard case .array(let items)? = json[key] else { return nil }
            return items.compactMap(\.stringValue)
        }
        if let ids = values("user_ids") { return .userIDs(ids) }
        if let ids = values("device_ids") { return .deviceIDs(ids) }
        if let tags = values("tags") { return .tags(tags) }
        return nil
    }

    private static func date(_ json: JSONValue?) -> Date? { json?.int64Value.map(Date.init(unixMilliseconds:)) }

    private static func corrupt(_ what: String) -> StoreError {
        StoreError(.corrupt, "a stored scheduled \(what) lacks a field it needs")
    }
}
