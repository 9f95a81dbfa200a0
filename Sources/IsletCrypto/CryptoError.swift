internal import COpenSSL

/// A failure in key handling, signing or verification. Its description names what
/// went wrong and never includes key material.
public struct CryptoError: Error, Sendable, CustomStringConvertible {
    /// What kind of failure this is; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String {
            case invalidKey, unsupportedKey, signingFailed, invalidSignature, malformedToken, randomUnavailable
            case sealingFailed, unsealingFailed
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The key text is not a PEM key OpenSSL can read.
        public static let invalidKey = Code(.invalidKey)
        /// The key parsed but is not of the kind required (for example not P-256).
        public static let unsupportedKey = Code(.unsupportedKey)
        /// OpenSSL refused to sign.
        public static let signingFailed = Code(.signingFailed)
        /// A signature is not in the expected encoding.
        public static let invalidSignature = Code(.invalidSignature)
        /// A JSON Web Token is not three base64url parts with JSON objects.
        public static let malformedToken = Code(.malformedToken)
        /// The system's random source failed.
        public static let randomUnavailable = Code(.randomUnavailable)
        /// OpenSSL refused to encrypt a value.
        public static let sealingFailed = Code(.sealingFailed)
        /// A sealed value does not open: a wrong key, a changed value, or no sealed
        /// value at all.
        public static let unsealingFailed = Code(.unsealingFailed)

        public var description: String { base.rawValue }
    }

    /// The kind of failure.
    public let code: Code
    /// A human-readable explanation, free of secrets: one sentence for people.
    public let reason: String
    /// OpenSSL's own error strings (as `error:1E08010C:DECODER routines::unsupported`),
    /// for logs and bug reports; never part of `reason` or `description`.
    public let openSSLDetail: String?

    /// Creates an error.
    public init(_ code: Code, _ reason: String, openSSLDetail: String? = nil) {
        self.code = code
        self.reason = reason
        self.openSSLDetail = openSSLDetail
    }

    /// The reason, as a sentence a user can act on.
    public var description: String { reason }

    /// An error that keeps OpenSSL's own explanation of its most recent failure aside;
    /// empties the thread's OpenSSL error queue so that stale entries never leak into
    /// a later message.
    static func openSSL(_ code: Code, _ reason: String) -> CryptoError {
        let detail = drainOpenSSLErrors()
        return CryptoError(code, reason, openSSLDetail: detail.isEmpty ? nil : detail)
    }
}

/// Reads and clears this thread's OpenSSL error queue, newest last.
func drainOpenSSLErrors() -> String {
    var messages: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        ERR_error_string_n(code, &buffer, buffer.count)
        messages.append(String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))
    }
    return messages.joined(separator: "; ")
}
