import Foundation
public import IsletCore
public import Storage

/// Registered activity types: the schema of an app's `ActivityAttributes` type, so
/// that every send for it is checked as the device would decode it.
public struct ActivityTypeService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = ActivityTypeStore

    private let environment: ServiceEnvironment

    /// Creates the service.
    public init(environment: ServiceEnvironment) {
        self.environment = environment
    }

    /// What registering a type answers.
    public struct Registered: Sendable {
        /// Whether the type is new.
        public let created: Bool
        /// The type as stored.
        public let record: ActivityTypeRecord
        /// The changes running activities could not decode (sent with `force`).
        public let breakingChanges: [String]
    }

    /// Registers or replaces a type's schema. A change that running activities could
    /// not decode is a `conflict` naming each change, unless `force`.
    public func put(
        appID: String, name: String, schema: ActivityTypeSchema, receipts: Bool = false, force: Bool
    ) async throws(ServiceError) -> Registered {
        try Self.checkWidget(schema)
        try Self.checkReceiptsKey(schema, receipts: receipts)
        let now = environment.clock.now()
        let startedAfter = now.addingTimeInterval(-environment.lifecycle.windows.total)
        let (created, record, changes) = try await environment.write {
            (session: any Stores) -> (Bool, ActivityTypeRecord?, [String]) in
            var changes: [String] = []
            if let old = try session.activityType(appID: appID, name: name) {
                changes = schema.breakingChanges(from: old.schema)
                let running = try session.runningActivities(appID: appID, activityType: name, startedAfter: startedAfter)
                if !changes.isEmpty && running > 0 && !force {
                    throw ServiceError(
                        .conflict,
                        "\(running) running activit\(running == 1 ? "y" : "ies") of \(name) could no longer be decoded: \(changes.joined(separator: "; ")). Wait for them to end, or send force: true.",
                        fields: changes.map { change in
                            let field = String(change.prefix { $0 != ":" })
                            return .init(field: field, message: String(change.dropFirst(field.count + 1)).trimmingCharacters(in: .whitespaces))
                        })
                }
            }
            let created = try session.putActivityType(appID: appID, name: name, schema: schema, receipts: receipts, now: now)
            return (created, try session.activityType(appID: appID, name: name), changes)
        }
        guard let record else { throw ServiceError(.failed, "The activity type was not stored.") }
        return Registered(created: created, record: record, breakingChanges: changes)
    }

    /// A widget name goes with the expo-widgets format, and only with it.
    static func checkWidget(_ schema: ActivityTypeSchema) throws(ServiceError) {
        let message: String
        switch (schema.format, schema.widgetName) {
        case (.expoWidgets, nil): message = "is required for the expo-widgets format (the name passed to createLiveActivity)"
        case (.activitykit, .some): message = "only the expo-widgets format has a widget name"
        default: return
        }
        throw .invalid("The field widget_name is invalid: \(ServiceError.sentence(message))", field: "widget_name", message)
    }

    /// With receipts on, the content state's key `islet` is Islet's (the send's
    /// id): the type's schema may not declare it.
    static func checkReceiptsKey(_ schema: ActivityTypeSchema, receipts: Bool) throws(ServiceError) {
        guard receipts, schema.contentState[Receipts.key] != nil else { return }
        throw .invalid(
            "The field content_state.\(Receipts.key) is invalid: the key \(Receipts.key) is Islet's own (it carries a receipt's send_id).",
            field: "content_state.\(Receipts.key)", "is Islet's own key (it carries a receipt's send_id)")
    }

    /// Every registered type of the app, by name.
    public func list(appID: String) async throws(ServiceError) -> [ActivityTypeRecord] {
        try await environment.read { (session: any Stores) in try session.activityTypes(appID: appID) }
    }

    /// One registered type, or `notFound`.
    public func show(appID: String, name: String) async throws(ServiceError) -> ActivityTypeRecord {
        guard let record = try await environment.read({ (session: any Stores) in
            try session.activityType(appID: appID, name: name)
        }) else {
            throw Self.notRegistered(name)
        }
        return record
    }

    /// Removes a type's schema, or `notFound`.
    public func delete(appID: String, name: String) async throws(ServiceError) {
        guard try await environment.write({ (session: any Stores) in
            try session.deleteActivityType(appID: appID, name: name)
        }) else {
            throw Self.notRegistered(name)
        }
    }

    private static func notRegistered(_ name: String) -> ServiceError {
        ServiceError(.notFound, "\(name) is not a registered activity type.")
    }
}
