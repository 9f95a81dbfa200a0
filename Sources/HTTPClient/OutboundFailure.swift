/// An outbound request that got no HTTP answer. Messages name the host and the cause
/// (libcurl's words), never the URL's path or query, which may hold a secret.
public struct OutboundFailure: Error, Sendable, Equatable, CustomStringConvertible {
    /// Why there was no answer; new kinds may be added.
    public struct Kind: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case refusedAddress, timeout, connect, tls, resolve, invalidRequest, shutDown, other }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The host's address is one webhooks may not reach (loopback, private,
        /// metadata…), checked on the address actually connected to; nothing was sent.
        public static let refusedAddress = Kind(.refusedAddress)
        /// The request took longer than its timeout; it may or may not have arrived.
        public static let timeout = Kind(.timeout)
        /// No TCP connection could be made (refused, unreachable); nothing was sent.
        public static let connect = Kind(.connect)
        /// The TLS handshake or the certificate check failed; nothing was sent.
        public static let tls = Kind(.tls)
        /// The host name did not resolve; nothing was sent.
        public static let resolve = Kind(.resolve)
        /// The request cannot be sent as given: a malformed URL, a scheme other than
        /// http or https, a header with a line break.
        public static let invalidRequest = Kind(.invalidRequest)
        /// The client shut down before the request finished, or had already.
        public static let shutDown = Kind(.shutDown)
        /// Anything else: the connection broke, the answer was not HTTP…
        public static let other = Kind(.other)

        /// The kind's name.
        public var description: String { base.rawValue }
    }

    /// Why there was no answer.
    public var kind: Kind
    /// What happened, for logs and for the people who own the receiver.
    public var message: String

    /// Creates a failure.
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    /// The kind and the message.
    public var description: String { "outbound request \(kind): \(message)" }
}
