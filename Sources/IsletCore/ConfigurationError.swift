/// A setting that cannot be used. Its description is one line naming the setting (as
/// a flag and as an environment variable), where the value came from and why it is
/// refused, so that a failed start says exactly what to fix.
public struct ConfigurationError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What is wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case unknownOption, missingValue, invalidValue, unusable }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A flag that no setting has.
        public static let unknownOption = Code(.unknownOption)
        /// A flag given without its value.
        public static let missingValue = Code(.missingValue)
        /// A value of the wrong form or out of range.
        public static let invalidValue = Code(.invalidValue)
        /// A well-formed value that does not work here (a folder that cannot be
        /// created, a file that cannot be opened).
        public static let unusable = Code(.unusable)

        public var description: String { base.rawValue }
    }

    /// What is wrong.
    public let code: Code
    /// The setting's flag, as `--port`, or the unknown option as given.
    public let setting: String
    /// Why the value is refused.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, setting: String, message: String) {
        self.code = code
        self.setting = setting
        self.message = message
    }

    public var description: String {
        switch code {
        case .unknownOption: "unknown option \(setting): \(message)"
        default: "invalid setting \(setting): \(message)"
        }
    }
}
