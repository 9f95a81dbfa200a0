/// What an app's `ActivityAttributes` type looks like to the device's decoder: the
/// attributes and content-state fields, their types, and how dates are encoded. With
/// it, Islet refuses a payload the device could not decode instead of letting APNs
/// accept it and the device drop it.
public struct ActivityTypeSchema: Sendable, Hashable {
    /// How the content state reaches the widget.
    public enum Format: String, Sendable, Hashable, CaseIterable {
        /// Plain ActivityKit `Codable`: the content state is the app's `ContentState`.
        case activitykit
        /// expo-widgets: the content state is `{name, props}`, `props` being the state
        /// as a JSON string, and starts name the `LiveActivityAttributes` type.
        case expoWidgets = "expo-widgets"
    }

    /// The attributes type expo-widgets declares on the device.
    public static let expoAttributesType = "LiveActivityAttributes"

    /// How the content state is carried.
    public var format: Format
    /// expo-widgets: the widget name the app passed to `createLiveActivity`.
    public var widgetName: String?
    /// The attributes' fields.
    public var attributes: [String: FieldSchema]
    /// The content state's fields.
    public var contentState: [String: FieldSchema]

    /// Creates a schema.
    public init(format: Format = .activitykit, widgetName: String? = nil, attributes: [String: FieldSchema], contentState: [String: FieldSchema]) {
        self.format = format
        self.widgetName = widgetName
        self.attributes = attributes
        self.contentState = contentState
    }
}

/// How a `Date` is written in JSON, as the device's `JSONDecoder` expects it.
public enum DateEncoding: String, Sendable, Hashable, CaseIterable {
    /// Swift's default: seconds since 2001-01-01 00:00 UTC, as a number.
    case secondsSince2001 = "seconds_since_2001"
    /// Seconds since 1970 (`.secondsSince1970`), as a number.
    case unix
    /// An ISO 8601 string without fractional seconds (`.iso8601`).
    case iso8601

    /// Seconds between 1970-01-01 and 2001-01-01.
    public static let referenceOffset: Double = 978_307_200
}

/// One field of a schema, as Swift's `Codable` decodes it.
public struct FieldSchema: Sendable, Hashable {
    /// The JSON shape the device's decoder expects.
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        case string, int, double, bool, date, url, object, array
    }

    /// The type.
    public var type: Kind
    /// Whether the key must be present (a non-optional property).
    public var required: Bool
    /// Whether `null` is accepted (an optional property).
    public var nullable: Bool
    /// For an object: its fields; `nil` for a free-form dictionary.
    public var fields: [String: FieldSchema]?
    /// For a date: its encoding; `nil` for Swift's default.
    public var dateEncoding: DateEncoding?
    /// For a string or int: the raw values of the app's enum.
    public var allowed: [JSONValue]?
    private var itemStorage: [FieldSchema]

    /// For an array: its elements.
    public var items: FieldSchema? {
        get { itemStorage.first }
        set { itemStorage = newValue.map { [$0] } ?? [] }
    }

    /// Creates a field; by default required and not nullable, as a non-optional
    /// property is.
    public init(
        _ type: Kind, required: Bool = true, nullable: Bool = false, fields: [String: FieldSchema]? = nil,
        items: FieldSchema? = nil, dateEncoding: DateEncoding? = nil, allowed: [JSONValue]? = nil
    ) {
        self.type = type
        self.required = required
        self.nullable = nullable
        self.fields = fields
        self.dateEncoding = dateEncoding
        self.allowed = allowed
        self.itemStorage = items.map { [$0] } ?? []
    }

    /// The encoding a date field uses.
    public var effectiveDateEncoding: DateEncoding { dateEncoding ?? .secondsSince2001 }
}
