public import Foundation
public import IsletCore

/// An event to write in the transaction of the change it describes.
public struct NewEvent: Sendable, Hashable {
    /// The app it belongs to.
    public var appID: String
    /// What happened.
    public var type: EventType
    /// The activity it concerns, when one: events of one activity reach a webhook in
    /// the order they happened.
    public var activityID: String?
    /// When it happened.
    public var occurredAt: Date
    /// The data as given, or as the JSON text it was written as (the events a
    /// fan-out makes by the thousand are rendered straight to text).
    private var body: Body

    private enum Body: Sendable {
        case value(JSONValue)
        case text(String)
    }

    /// What a reader needs to know: ids and reasons, never whole tokens.
    public var data: JSONValue {
        get {
            switch body {
            case .value(let value): value
            case .text(let text): (try? JSONValue(parsing: Data(text.utf8))) ?? .null
            }
        }
        set { body = .value(newValue) }
    }

    /// The data as compact JSON text, members in sorted order (`JSONValue.jsonText`):
    /// what the store writes.
    public var dataText: String {
        switch body {
        case .value(let value): value.jsonText
        case .text(let text): text
        }
    }

    /// An event of `appID`.
    public init(appID: String, type: EventType, activityID: String?, occurredAt: Date, data: JSONValue) {
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.body = .value(data)
    }

    /// An event whose data is already JSON text as `JSONValue.jsonText` writes it
    /// (compact, members in sorted order), so that equal data has equal text.
    init(appID: String, type: EventType, activityID: String?, occurredAt: Date, dataText: String) {
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.body = .text(dataText)
    }

    /// Equal when every field is, the data compared as its text.
    public static func == (left: NewEvent, right: NewEvent) -> Bool {
        left.appID == right.appID && left.type == right.type && left.activityID == right.activityID
            && left.occurredAt == right.occurredAt && left.dataText == right.dataText
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(appID)
        hasher.combine(type)
        hasher.combine(activityID)
        hasher.combine(occurredAt)
        hasher.combine(dataText)
    }
}

/// An event as stored. Sequences grow in the order the transactions that wrote
/// them committed, so that a reader who resumes after one misses none.
public struct EventRecord: Sendable, Hashable {
    /// Its place in the outbox.
    public var sequence: Int64
    /// The app.
    public var appID: String
    /// What happened (as stored: a type an older or newer Islet wrote stays readable).
    public var type: String
    /// The activity it concerns.
    public var activityID: String?
    /// When it happened.
    public var occurredAt: Date
    /// The data as given, or as the JSON text it was stored as: an event read from the
    /// store is parsed only when its data is asked for, and is printed (to a stream,
    /// to a webhook) with its text spliced in.
    private var body: Body

    private enum Body: Sendable {
        case value(JSONValue)
        case text(String)
    }

    /// Its data (`null` for stored text that does not parse).
    public var data: JSONValue {
        get {
            switch body {
            case .value(let value): value
            case .text(let text): (try? JSONValue(parsing: Data(text.utf8))) ?? .null
            }
        }
        set { body = .value(newValue) }
    }

    /// Its data as JSON text.
    public var dataText: String {
        switch body {
        case .value(let value): value.jsonText
        case .text(let text): text
        }
    }

    /// Creates a record.
    public init(sequence: Int64, appID: String, type: String, activityID: String?, occurredAt: Date, data: JSONValue) {
        self.sequence = sequence
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.body = .value(data)
    }

    /// Creates a record whose data is the JSON text `dataText`, as the store keeps it
    /// (written by `NewEvent.dataText`).
    public init(sequence: Int64, appID: String, type: String, activityID: String?, occurredAt: Date, dataText: String) {
        self.sequence = sequence
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.body = .text(dataText)
    }

    /// Equal when every field is, the data compared as its text.
    public static func == (left: EventRecord, right: EventRecord) -> Bool {
        left.sequence == right.sequence && left.appID == right.appID && left.type == right.type
            && left.activityID == right.activityID && left.occurredAt == right.occurredAt
            && left.dataText == right.dataText
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(sequence)
        hasher.combine(appID)
        hasher.combine(type)
        hasher.combine(activityID)
        hasher.combine(occurredAt)
        hasher.combine(dataText)
    }

    /// The public id of the event at `sequence`.
    public static func id(_ sequence: Int64) -> String { "evt_\(sequence)" }

    /// The sequence of the public id `id`, when it is one.
    public static func sequence(of id: String) -> Int64? {
        guard id.hasPrefix("evt_"), let number = Int64(id.dropFirst(4)), number >= 0 else { return nil }
        return number
    }

    /// The public id.
    public var id: String { Self.id(sequence) }

    /// `json` as compact text, members sorted, the data's text spliced in as stored.
    public var jsonText: String {
        var object = JSONObjectWriter()
        object.string("app_id", appID)
        object.raw("data", dataText)
        object.string("id", id)
        object.string("occurred_at", RFC3339.string(occurredAt))
        object.string("type", type)
        return object.text
    }

    /// The event as readers see it: `{id, type, app_id, occurred_at, data}`.
    public var json: JSONValue {
        .object([
            "id": .string(id), "type": .string(type), "app_id": .string(appID),
            "occurred_at": .string(RFC3339.string(occurredAt)), "data": data,
        ])
    }
}
