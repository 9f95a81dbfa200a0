/// A problem with the database, in the store's terms.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case conflict, busy, unavailable, corrupt, secretsKeyMismatch }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The change collides with what is stored (a key or id already taken, a
        /// constraint broken): the caller may read again and decide.
        public static let conflict = Code(.conflict)
        /// The database is busy with other writers; trying again shortly may work.
        public static let busy = Code(.busy)
        /// The database cannot be reached (closed, unreachable, out of space).
        public static let unavailable = Code(.unavailable)
        /// A stored value that cannot be read back.
        public static let corrupt = Code(.corrupt)
        /// The secrets key the store was given does not open the sealed values the
        /// database holds: they were sealed under another key.
        public static let secretsKeyMismatch = Code(.secretsKeyMismatch)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// Which value, where.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "store \(code): \(message)" }
}
