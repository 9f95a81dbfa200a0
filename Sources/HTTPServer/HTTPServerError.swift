/// A failure to start or run the HTTP server.
public struct HTTPServerError: Error, Sendable, CustomStringConvertible {
    /// The failure class; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case addressResolution, bind, listen, daemonStart, alreadyStarted }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host name did not resolve to an address.
        public static let addressResolution = Code(.addressResolution)
        /// The address could not be bound (in use, not local, no permission).
        public static let bind = Code(.bind)
        /// The socket could not listen.
        public static let listen = Code(.listen)
        /// libmicrohttpd refused to start.
        public static let daemonStart = Code(.daemonStart)
        /// `start` was called twice.
        public static let alreadyStarted = Code(.alreadyStarted)

        public var description: String { base.rawValue }
    }

    /// The failure class.
    public let code: Code
    /// What happened, with the address and the system's reason.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { message }
}
