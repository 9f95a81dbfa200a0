/// A push refused before it was sent, because APNs or ActivityKit would refuse it, or
/// worse, accept it and then do nothing on the device.
///
/// The ``field`` names where the fault is, in the payload's own spelling
/// (`aps.content-state`, `aps.alert.title`, `aps.stale-date`) or as the header it
/// becomes (`apns-priority`, `apns-topic`). The ``description`` names the field and
/// the rule; it never carries a push token, which the builders never see.
public struct PayloadError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule the push breaks; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case missing, empty, notAnObject, notAllowed, inThePast, looksLikeMilliseconds, beforeEpoch
            case notFinite, outOfRange, invalidPriority, invalidBundleID, tooLong, notNewer, tooLarge
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A field the push needs is absent.
        public static let missing = Code(.missing)
        /// A field is present but has nothing in it (an empty string or object).
        public static let empty = Code(.empty)
        /// A field that must be a JSON object is something else.
        public static let notAnObject = Code(.notAnObject)
        /// A field this kind of push may not carry.
        public static let notAllowed = Code(.notAllowed)
        /// A date that must lie in the future lies before `now`.
        public static let inThePast = Code(.inThePast)
        /// A date at or above 1e11 Unix seconds (the year 5138): almost surely
        /// milliseconds where seconds belong.
        public static let looksLikeMilliseconds = Code(.looksLikeMilliseconds)
        /// A date before 1970.
        public static let beforeEpoch = Code(.beforeEpoch)
        /// A number that is NaN or infinite, which JSON cannot carry.
        public static let notFinite = Code(.notFinite)
        /// A number outside the range the field allows.
        public static let outOfRange = Code(.outOfRange)
        /// An `apns-priority` this kind of push may not use.
        public static let invalidPriority = Code(.invalidPriority)
        /// A bundle id that cannot make an `apns-topic`.
        public static let invalidBundleID = Code(.invalidBundleID)
        /// A value longer than APNs allows.
        public static let tooLong = Code(.tooLong)
        /// An `aps.timestamp` not strictly newer than the activity's last one: the
        /// device would drop the push.
        public static let notNewer = Code(.notNewer)
        /// An encoded payload larger than APNs accepts.
        public static let tooLarge = Code(.tooLarge)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// Which rule the push breaks.
    public let code: Code
    /// Where the fault is: a JSON path into the payload, as `aps.alert.title`, or a
    /// header name, as `apns-priority`.
    public let field: String
    /// Why the value is refused, in one sentence.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// The field and the rule it breaks, as `aps.stale-date: …`.
    public var description: String { "\(field): \(message)" }
}
