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
    /// Whether its devices are asked to say which send they showed: each start,
    /// update and end carries `"islet": {"send_id": …}` in its content state.
    public var receipts: Bool

    /// Creates a record.
    public init(name: String, schema: ActivityTypeSchema, createdAt: Date, updatedAt: Date, receipts: Bool = false) {
        self.name = name
        self.schema = schema
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.receipts = receipts
    }
}
