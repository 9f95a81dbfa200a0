public import Foundation
public import IsletCore

/// A registered activity type: its schema and when it was stored.
public struct ActivityTypeRecord: Sendable, Hashable {
    /// The type's name (the `attributes-type`).
    public var name: String
    /// Its schema.
    public var schema: ActivityTypeSchema
    /// When it was first registered.
    public var createdAt: Date
    /// When it was last replaced.
    public var updatedAt: Date

    /// Creates a record.
    public init(name: String, schema: ActivityTypeSchema, createdAt: Date, updatedAt: Date) {
        self.name = name
        self.schema = schema
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

extension SQLiteSession {
    /// The activity type `name` of `appID`.
    public func activityType(appID: String, name: String) throws -> ActivityTypeRecord? {
        try query(
            "SELECT activity_type, schema, created_at, updated_at FROM activity_types WHERE app_id = ? AND activity_type = ?",
            [appID, name]
        ).first.map(Self.activityTypeRecord)
    }

    /// Every activity type of `appID`, by name.
    public func activityTypes(appID: String) throws -> [ActivityTypeRecord] {
        try query(
            "SELECT activity_type, schema, created_at, updated_at FROM activity_types WHERE app_id = ? ORDER BY activity_type",
            [appID]
        ).map(Self.activityTypeRecord)
    }

    /// Stores (or replaces) a type. Answers whether it is new.
    public func putActivityType(appID: String, name: String, schema: ActivityTypeSchema, now: Date) throws -> Bool {
        let existed = try activityType(appID: appID, name: name) != nil
        try run(
            """
            INSERT INTO activity_types (app_id, activity_type, schema, created_at, updated_at) VALUES (?1, ?2, ?3, ?4, ?4)
            ON CONFLICT (app_id, activity_type) DO UPDATE SET schema = excluded.schema, updated_at = excluded.updated_at
            """, [appID, name, schema.json.jsonText, now.unixMilliseconds])
        return !existed
    }

    /// Removes a type. Answers whether it existed.
    public func deleteActivityType(appID: String, name: String) throws -> Bool {
        try run("DELETE FROM activity_types WHERE app_id = ? AND activity_type = ?", [appID, name]) > 0
    }

    /// How many activities of a type have not ended (and started after
    /// `startedAfter`, so that those past every window do not count).
    public func runningActivities(appID: String, activityType: String, startedAfter: Date) throws -> Int {
        Int(try query(
            """
            SELECT count(*) AS n FROM activities
            WHERE app_id = ? AND activity_type = ? AND status != 'ended' AND started_at > ?
            """, [appID, activityType, startedAfter.unixMilliseconds]
        ).first?.int64("n") ?? 0)
    }

    private static func activityTypeRecord(_ row: SQLiteRow) throws -> ActivityTypeRecord {
        guard let json = try row.json("schema"), let schema = ActivityTypeSchema(stored: json) else {
            throw StoreError(.corrupt, "activity type schema does not parse")
        }
        return ActivityTypeRecord(
            name: try row.string("activity_type"), schema: schema, createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"))
    }
}
