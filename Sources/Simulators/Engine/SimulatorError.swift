/// A request to the simulator's own control surface (its configuration, token
/// registration) that cannot be honoured. APNs answers are never errors: they are
/// ``SimulatorResponse`` values.
public struct SimulatorError: Error, Sendable, Hashable, CustomStringConvertible {
    /// What is wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case invalidFailRate, invalidFailStatus, malformedToken, tokenKindConflict, unknownChannel }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// A fault injection rate outside 0.0–1.0.
        public static let invalidFailRate = Code(.invalidFailRate)
        /// A fault injection status other than 500, 503 or 429.
        public static let invalidFailStatus = Code(.invalidFailStatus)
        /// A token to register that is not of push token shape.
        public static let malformedToken = Code(.malformedToken)
        /// A token to register that the simulator already knows as another kind.
        public static let tokenKindConflict = Code(.tokenKindConflict)
        /// A broadcast channel the simulator does not have.
        public static let unknownChannel = Code(.unknownChannel)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// What is wrong.
    public let code: Code
    /// One sentence saying what is wrong, without tokens or keys.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The code and the message.
    public var description: String { "\(code): \(message)" }
}
