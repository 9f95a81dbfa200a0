public import Foundation
public import IsletCore

/// An event's data: a value as given, or the JSON text it was written as (the events
/// a fan-out makes by the thousand are rendered straight to text, and an event read
/// from the store is parsed only when its value is asked for). Equal data is equal
/// text: both forms compare and hash as `text`, compact with members in sorted order
/// (`JSONValue.jsonText`).
public struct EventData: Sendable, Hashable {
    private enum Form: Sendable {
        case value(JSONValue)
        case text(String)
    }

    private var form: Form

    /// Data holding `value`.
    public init(_ value: JSONValue) { form = .value(value) }

    /// Data that is already the JSON text `text`, written as `JSONValue.jsonText`
    /// writes it, so that equal data has equal text.
    public init(text: String) { form = .text(text) }

    /// The value (`null` for text that does not parse).
    public var value: JSONValue {
        switch form {
        case .value(let value): value
        case .text(let text): (try? JSONValue(parsing: Data(text.utf8))) ?? .null
        }
    }

    /// The JSON text: what the store writes and what readers are sent.
    public var text: String {
        switch form {
        case .value(let value): value.jsonText
        case .text(let text): text
        }
    }

    public static func == (left: EventData, right: EventData) -> Bool { left.text == right.text }

    public func hash(into hasher: inout Hasher) { hasher.combine(text) }
}

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
    /// What a reader needs to know: ids and reasons, never whole tokens.
    public var content: EventData

    /// The data's value.
    public var data: JSONValue {
        get { content.value }
        set { content = EventData(newValue) }
    }

    /// The data as the JSON text the store writes.
    public var dataText: String { content.text }

    /// An event of `appID`.
    public init(appID: String, type: EventType, activityID: String?, occurredAt: Date, data: JSONValue) {
        self.init(appID: appID, type: type, activityID: activityID, occurredAt: occurredAt, content: EventData(data))
    }

    /// An event whose data is already JSON text as `JSONValue.jsonText` writes it.
    init(appID: String, type: EventType, activityID: String?, occurredAt: Date, dataText: String) {
        self.init(appID: appID, type: type, activityID: activityID, occurredAt: occurredAt, content: EventData(text: dataText))
    }

    init(appID: String, type: EventType, activityID: String?, occurredAt: Date, content: EventData) {
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.content = content
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
    /// Its data, kept as the text the store holds until its value is asked for: it is
    /// printed (to a stream, to a webhook) with that text spliced in.
    public var content: EventData

    /// Its data's value (`null` for stored text that does not parse).
    public var data: JSONValue {
        get { content.value }
        set { content = EventData(newValue) }
    }

    /// Its data as JSON text.
    public var dataText: String { content.text }

    /// Creates a record.
    public init(sequence: Int64, appID: String, type: String, activityID: String?, occurredAt: Date, data: JSONValue) {
        self.init(sequence: sequence, appID: appID, type: type, activityID: activityID, occurredAt: occurredAt, content: EventData(data))
    }

    /// Creates a record whose data is the JSON text `dataText`, as the store keeps it
    /// (written by `NewEvent.dataText`).
    public init(sequence: Int64, appID: String, type: String, activityID: String?, occurredAt: Date, dataText: String) {
        self.init(sequence: sequence, appID: appID, type: type, activityID: activityID, occurredAt: occurredAt, content: EventData(text: dataText))
    }

    /// Creates a record of `content`.
    public init(sequence: Int64, appID: String, type: String, activityID: String?, occurredAt: Date, content: EventData) {
        self.sequence = sequence
        self.appID = appID
        self.type = type
        self.activityID = activityID
        self.occurredAt = occurredAt
        self.content = content
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
