/// A failure of an HTTP/2 connection or stream. Descriptions name the peer and the
/// cause, never request contents.
public struct HTTP2Error: Error, Sendable, CustomStringConvertible, Equatable {
    /// What failed; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidConfiguration, connectFailed, tlsFailed, protocolNegotiation, connectionLost
            case streamReset, protocolError, timedOut, shutDown, requestRejected
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The configuration cannot work (unreadable certificate, bad address).
        public static let invalidConfiguration = Code(.invalidConfiguration)
        /// No TCP connection could be made.
        public static let connectFailed = Code(.connectFailed)
        /// The TLS handshake or certificate check failed.
        public static let tlsFailed = Code(.tlsFailed)
        /// The peer did not agree to speak HTTP/2 (ALPN).
        public static let protocolNegotiation = Code(.protocolNegotiation)
        /// The connection closed while the request was in flight; the peer may or may
        /// not have processed it.
        public static let connectionLost = Code(.connectionLost)
        /// The peer reset the stream (`errorCode` tells why).
        public static let streamReset = Code(.streamReset)
        /// The peer broke the HTTP/2 protocol.
        public static let protocolError = Code(.protocolError)
        /// No answer within the deadline.
        public static let timedOut = Code(.timedOut)
        /// The client or server is shutting down.
        public static let shutDown = Code(.shutDown)
        /// The request could not be sent as given (for example a malformed header).
        public static let requestRejected = Code(.requestRejected)

        public var description: String { base.rawValue }
    }

    /// What failed.
    public let code: Code
    /// Details.
    public let message: String
    /// The HTTP/2 error code of a reset stream or a GOAWAY, when there was one.
    public let errorCode: UInt32?

    /// Creates an error.
    public init(_ code: Code, _ message: String, errorCode: UInt32? = nil) {
        self.code = code
        self.message = message
        self.errorCode = errorCode
    }

    /// Whether the request certainly did not reach the peer's application, so that
    /// sending it again cannot duplicate it.
    public var isSafeToRetry: Bool {
        code == .connectFailed || code == .tlsFailed || code == .protocolNegotiation
            || (code == .streamReset && errorCode == 7)  // REFUSED_STREAM
    }

    public var description: String {
        if let errorCode { return "http2 \(code) (error code \(errorCode)): \(message)" }
        return "http2 \(code): \(message)"
    }
}
