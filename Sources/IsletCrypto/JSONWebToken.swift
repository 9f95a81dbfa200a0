public import Foundation
import IsletCore

/// A value in a JWT header or claim set. Islet's tokens carry only strings and
/// integers (APNs: `alg`, `kid`, `iss`, `iat`); a token read from elsewhere may
/// also hold other numbers (an `iat` with a fraction of a second).
public enum JWTValue: Sendable, Hashable, CustomStringConvertible {
    case string(String)
    case integer(Int64)
    /// A number that is not a 64-bit integer, as JSON wrote it.
    case number(Double)

    /// The string, when this is one.
    public var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer, when this is one.
    public var integerValue: Int64? {
        if case .integer(let i) = self { return i }
        return nil
    }

    public var description: String {
        switch self {
        case .string(let s): s
        case .integer(let i): String(i)
        case .number(let n): String(n)
        }
    }
}

/// A compact JSON Web Token (RFC 7519) signed with ES256.
public struct JSONWebToken: Sendable {
    /// The protected header.
    public let header: [String: JWTValue]
    /// The claim set.
    public let claims: [String: JWTValue]
    /// `base64url(header) "." base64url(claims)`: the bytes the signature covers.
    public let signingInput: String
    /// The signature bytes (raw `r || s` for ES256).
    public let signature: Data

    /// Signs a token with ES256. `alg` is set in the header; `kid` too when given.
    /// Keys are written in sorted order, so equal inputs give equal tokens up to the
    /// signature's randomness.
    public static func signES256(
        keyID: String?,
        claims: [String: JWTValue],
        key: P256.SigningKey
    ) throws(CryptoError) -> String {
        var header: [String: JWTValue] = ["alg": .string("ES256"), "typ": .string("JWT")]
        if let keyID { header["kid"] = .string(keyID) }
        let input = Base64URL.encode(encodeObject(header)) + "." + Base64URL.encode(encodeObject(claims))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    /// Signs a token with RS256 (a service account's OAuth 2.0 assertion). `alg` is
    /// set in the header; `kid` too when given.
    public static func signRS256(
        keyID: String?,
        claims: [String: JWTValue],
        key: RSA.SigningKey
    ) throws(CryptoError) -> String {
        var header: [String: JWTValue] = ["alg": .string("RS256"), "typ": .string("JWT")]
        if let keyID { header["kid"] = .string(keyID) }
        let input = Base64URL.encode(encodeObject(header)) + "." + Base64URL.encode(encodeObject(claims))
        let signature = try key.signature(for: Data(input.utf8))
        return input + "." + Base64URL.encode(signature)
    }

    /// Parses a compact token without checking its signature.
    public init(parsing compact: String) throws(CryptoError) {
        let parts = compact.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3 else {
            throw CryptoError(.malformedToken, "a JWT has three dot-separated parts, this one has \(parts.count)")
        }
        guard let headerData = Base64URL.decode(parts[0]), let header = JSONWebToken.decodeObject(headerData) else {
            throw CryptoError(.malformedToken, "the JWT header is not base64url JSON")
        }
        guard let claimData = Base64URL.decode(parts[1]), let claims = JSONWebToken.decodeObject(claimData) else {
            throw CryptoError(.malformedToken, "the JWT claims are not base64url JSON")
        }
        guard let signature = Base64URL.decode(parts[2]) else {
            throw CryptoError(.malformedToken, "the JWT signature is not base64url")
        }
        self.header = header
        self.claims = claims
        self.signingInput = "\(parts[0]).\(parts[1])"
        self.signature = signature
    }

    /// Whether the header says ES256 and the signature verifies with `key`.
    public func isValidES256(using key: P256.VerifyingKey) -> Bool {
        header["alg"] == .string("ES256") && key.isValidSignature(signature, for: Data(signingInput.utf8))
    }

    /// Whether the header says RS256 and the signature verifies with `key`.
    public func isValidRS256(using key: RSA.VerifyingKey) -> Bool {
        header["alg"] == .string("RS256") && key.isValidSignature(signature, for: Data(signingInput.utf8))
    }

    /// Whether the header says ES256 and the signature, in the DER form that
    /// OpenSSL and Java's `SHA256withECDSA` write rather than the raw `r || s` that
    /// RFC 7518 asks for, verifies with `key`.
    public func isValidDEREncodedES256(using key: P256.VerifyingKey) -> Bool {
        header["alg"] == .string("ES256") && key.isValidDERSignature(signature, for: Data(signingInput.utf8))
    }

    static func encodeObject(_ object: [String: JWTValue]) -> Data {
        var text = "{"
        for (index, key) in object.keys.sortedByScalars().enumerated() {
            if index > 0 { text += "," }
            text += JSONText.quoted(key) + ":"
            switch object[key]! {
            case .string(let s): text += JSONText.quoted(s)
            case .integer(let i): text += String(i)
            case .number(let n): text += n.isFinite ? String(n) : "null"
            }
        }
        return Data((text + "}").utf8)
    }

    /// Reads a JSON object (RFC 8259: any whitespace, members in any order) of
    /// strings and numbers; other members are skipped (a verifier only needs the ones
    /// it knows).
    private static func decodeObject(_ data: Data) -> [String: JWTValue]? {
        guard let members = (try? JSONValue(parsing: data))?.objectValue else { return nil }
        var result: [String: JWTValue] = [:]
        for (key, value) in members {
            switch value {
            case .string(let s): result[key] = .string(s)
            case .integer(let i): result[key] = .integer(i)
            case .double(let d): result[key] = .number(d)
            default: break
            }
        }
        return result
    }
}
