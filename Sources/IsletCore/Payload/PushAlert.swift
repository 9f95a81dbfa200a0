/// The alert of a Live Activity push: a title and a body, both required by
/// ActivityKit, and an optional sound. A start must carry one, or the device never
/// shows the activity; on an update or an end it lights the screen.
public struct PushAlert: Sendable, Hashable {
    /// A piece of alert text: literal, or a key into the app's `Localizable.strings`
    /// with arguments for its format specifiers.
    public enum Text: Sendable, Hashable, ExpressibleByStringLiteral {
        /// Text shown as given.
        case literal(String)
        /// A localization key and the arguments for its `%@` specifiers.
        case localized(key: String, arguments: [String] = [])

        /// Literal text.
        public init(stringLiteral value: String) { self = .literal(value) }

        /// Whether there is nothing to show: an empty string or an empty key.
        public var isEmpty: Bool {
            switch self {
            case .literal(let text): text.isEmpty
            case .localized(let key, _): key.isEmpty
            }
        }
    }

    /// The first line, `aps.alert.title`.
    public var title: Text
    /// The text below it, `aps.alert.body`.
    public var body: Text
    /// A sound file in the app bundle, or `default`; `aps.alert.sound`.
    public var sound: String?

    /// Creates an alert.
    public init(title: Text, body: Text, sound: String? = nil) {
        self.title = title
        self.body = body
        self.sound = sound
    }
}
