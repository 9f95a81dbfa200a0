/// The shape every APNs push token has: hexadecimal text of even length, 64 to 512
/// characters (32 to 256 bytes). Device tokens are 64 characters today, Live Activity
/// tokens longer; the bounds leave room for Apple to grow them.
public enum PushToken {
    /// The fewest characters a token has.
    public static let minimumLength = 64
    /// The most characters a token has.
    public static let maximumLength = 512

    /// Checks `token`'s shape; the error says what is wrong without repeating it.
    public static func validate(_ token: some StringProtocol) throws(PushTokenError) {
        var text = String(token)
        let (length, isHex) = text.withUTF8 { bytes in (bytes.count, bytes.allSatisfy { Hex.isDigit($0) }) }
        guard length > 0 else { throw PushTokenError(.empty, length: 0) }
        guard isHex else { throw PushTokenError(.notHexadecimal, length: length) }
        guard length % 2 == 0 else { throw PushTokenError(.oddLength, length: length) }
        guard length >= minimumLength else { throw PushTokenError(.tooShort, length: length) }
        guard length <= maximumLength else { throw PushTokenError(.tooLong, length: length) }
    }

    /// Whether `token` has the shape of a push token.
    public static func isWellFormed(_ token: some StringProtocol) -> Bool {
        do {
            try validate(token)
            return true
        } catch {
            return false
        }
    }

    /// A random token of `byteCount` bytes, as lowercase hex, drawn from `generator`.
    public static func make(byteCount: Int = 32, using generator: inout some RandomNumberGenerator) -> String {
        String(unsafeUninitializedCapacity: byteCount * 2) { text in
            var word: UInt64 = 0
            for index in 0..<byteCount {
                if index % 8 == 0 { word = generator.next() }
                let byte = UInt8(truncatingIfNeeded: word >> ((index % 8) * 8))
                text[index * 2] = Hex.utf8Digit(byte >> 4)
                text[index * 2 + 1] = Hex.utf8Digit(byte & 0x0F)
            }
            return byteCount * 2
        }
    }
}

/// A push token of the wrong shape. The description gives the length and the rule
/// broken, never the token.
public struct PushTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Which rule the token breaks; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case empty, notHexadecimal, oddLength, tooShort, tooLong }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The token is empty.
        public static let empty = Code(.empty)
        /// The token has a character that is not a hex digit.
        public static let notHexadecimal = Code(.notHexadecimal)
        /// The token has an odd number of hex digits, so it is not whole bytes.
        public static let oddLength = Code(.oddLength)
        /// The token is shorter than ``PushToken/minimumLength``.
        public static let tooShort = Code(.tooShort)
        /// The token is longer than ``PushToken/maximumLength``.
        public static let tooLong = Code(.tooLong)

        /// The code's name.
        public var description: String { base.rawValue }
    }

    /// The rule broken.
    public let code: Code
    /// How many characters the token has.
    public let length: Int

    /// Creates an error.
    public init(_ code: Code, length: Int) {
        self.code = code
        self.length = length
    }

    /// One sentence naming the rule broken.
    public var description: String {
        switch code {
        case .empty: "the push token is empty"
        case .notHexadecimal: "the push token (\(length) characters) is not hexadecimal"
        case .oddLength: "the push token has an odd number of hex digits (\(length))"
        case .tooShort: "the push token has \(length) hex digits, fewer than \(PushToken.minimumLength)"
        default: "the push token has \(length) hex digits, more than \(PushToken.maximumLength)"
        }
    }
}
