import Foundation
import IsletCore
import Storage

/// What a send carries once its activity type's schema has been applied: values
/// checked as the device would decode them, dates converted to the app's encoding,
/// the content state wrapped for expo-widgets, and the keys the device would ignore.
struct PreparedContent: Sendable {
    /// The attributes to send (start only).
    var attributes: JSONValue?
    /// The content state in the app's own shape, as stored.
    var contentState: JSONValue?
    /// The `attributes-type` to send.
    var attributesType: String
    /// What goes in `aps.content-state` (wrapped for expo-widgets).
    var wireState: JSONValue?
    /// Keys the device ignores, as `content_state.foo: …`.
    var warnings: [String]
    /// Whether the type asks for receipts: each send names itself in the content
    /// state (see `Receipts`).
    var receipts = false
}

/// Applies registered activity types to sends.
enum SchemaEnforcement {
    /// Checks `attributes` and `contentState` against the schema of `activityType`,
    /// if the app registered one. `isStart`: with `strict_activity_types`, a start
    /// for an unregistered type is refused. A value the device could not decode is a
    /// 422 naming its path.
    /// `storedState`: the content state (and attributes) were stored by an earlier
    /// send (already checked and converted); they are only wrapped.
    static func prepare(
        session: any ActivityTypeStore, app: AppRecord, activityType: String, attributes: JSONValue?, contentState: JSONValue?,
        isStart: Bool, storedState: Bool = false
    ) throws -> PreparedContent {
        try prepare(
            registered: try session.activityType(appID: app.id, name: activityType), app: app, activityType: activityType,
            attributes: attributes, contentState: contentState, isStart: isStart, storedState: storedState)
    }

    /// `prepare(session:…)` with the type's record already read (`nil`: not
    /// registered): for many sends of one type at once, such as a timeline's entries.
    static func prepare(
        registered: ActivityTypeRecord?, app: AppRecord, activityType: String, attributes: JSONValue?,
        contentState: JSONValue?, isStart: Bool, storedState: Bool = false
    ) throws(ServiceError) -> PreparedContent {
        guard let record = registered else {
            if isStart && app.strictActivityTypes {
                throw ServiceError.invalid(
                    "\(activityType) is not a registered activity type, and this app has strict_activity_types on.",
                    field: "activity_type", "is not registered; register it with PUT /v1/apps/\(app.id)/activity-types/\(activityType)")
            }
            return PreparedContent(
                attributes: attributes, contentState: contentState, attributesType: activityType, wireState: contentState,
                warnings: [])
        }
        if !storedState { try Receipts.checkOwnState(contentState, receipts: record.receipts) }
        let schema = record.schema
        var violations: [SchemaViolation] = []
        var warnings: [SchemaViolation] = []
        var prepared = PreparedContent(
            attributes: attributes, contentState: contentState,
            attributesType: schema.format == .expoWidgets ? ActivityTypeSchema.expoAttributesType : activityType,
            wireState: contentState, warnings: [])
        prepared.receipts = record.receipts
        if let attributes, !storedState {
            let result = SchemaCheck.check(attributes, fields: schema.attributes, path: "attributes", mode: .prepare)
            violations += result.violations
            warnings += result.warnings.filter { $0.path != "attributes.islet_activity_id" }
            prepared.attributes = result.value
        }
        if let contentState, !storedState {
            let result = SchemaCheck.check(contentState, fields: schema.contentState, path: "content_state", mode: .prepare)
            violations += result.violations
            warnings += result.warnings
            prepared.contentState = result.value
            prepared.wireState = result.value
        }
        guard violations.isEmpty else {
            throw ServiceError(
                .invalid,
                "The device could not decode this into \(activityType): \(violations.map(\.description).joined(separator: "; ")).",
                fields: violations.map { .init(field: $0.path, message: $0.message) })
        }
        if schema.format == .expoWidgets, let state = prepared.contentState, let widget = schema.widgetName {
            prepared.wireState = SchemaCheck.expoWrap(state, widgetName: widget)
        }
        prepared.warnings = warnings.map(\.description)
        return prepared
    }
}
