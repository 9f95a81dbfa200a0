public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    /// The activity type `name` of `appID`.
    public func activityType(appID: String, name: String) throws -> ActivityTypeRecord? {
        try query(
            """
            SELECT activity_type, schema, created_at, updated_at, receipts FROM activity_types
            WHERE app_id = \(appID) AND activity_type = \(name)
            """
        ).first.map(Self.activityTypeRecord)
    }

    /// Every activity type of `appID`, by name.
    public func activityTypes(appID: String) throws -> [ActivityTypeRecord] {
        try query(
            """
            SELECT activity_type, schema, created_at, updated_at, receipts FROM activity_types
            WHERE app_id = \(appID) ORDER BY activity_type
            """
        ).map(Self.activityTypeRecord)
    }

    /// Stores (or replaces) a type. Answers whether it is new: the insert that
    /// creates it, or else the update that replaces it, each one statement that
    /// reads and writes the row at once.
    public func putActivityType(
        appID: String, name: String, schema: ActivityTypeSchema, receipts: Bool, now: Date
    ) throws -> Bool {
        let millis = now.unixMilliseconds
        let text = schema.json.jsonText
        let created = try run(
            """
            INSERT INTO activity_types (app_id, activity_type, schema, created_at, updated_at, receipts)
            VALUES (\(appID), \(name), \(text), \(millis), \(millis), \(receipts))
            ON CONFLICT (app_id, activity_type) DO NOTHING
            """) > 0
        if !created {
            try run(
                """
                UPDATE activity_types SET schema = \(text), updated_at = \(millis), receipts = \(receipts)
                WHERE app_id = \(appID) AND activity_type = \(name)
                """)
        }
        return created
    }

    /// Removes a type. Answers whether it existed.
    public func deleteActivityType(appID: String, name: String) throws -> Bool {
        try run("DELETE FROM activity_types WHERE app_id = \(appID) AND activity_type = \(name)") > 0
    }

    /// How many activities of a type have not ended (and started after
    /// `startedAfter`, so that those past every window do not count).
    public func runningActivities(appID: String, activityType: String, startedAfter: Date) throws -> Int {
        Int(try query(
            """
            SELECT count(*) AS n FROM activities
            WHERE app_id = \(appID) AND activity_type = \(activityType) AND status != 'ended'
                AND started_at > \(startedAfter.unixMilliseconds)
            """
        ).first?.int64("n") ?? 0)
    }

    private static func activityTypeRecord(_ row: SQLRow) throws -> ActivityTypeRecord {
        guard let json = try row.json("schema"), let schema = ActivityTypeSchema(stored: json) else {
            throw StoreError(.corrupt, "activity type schema does not parse")
        }
        return ActivityTypeRecord(
            name: try row.string("activity_type"), schema: schema, createdAt: try row.date("created_at"),
            updatedAt: try row.date("updated_at"), receipts: try row.bool("receipts"))
    }
}
