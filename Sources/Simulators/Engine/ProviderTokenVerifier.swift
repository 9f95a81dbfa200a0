import IsletSync
import Foundation
import HTTP2
import IsletCore
import IsletCrypto

/// Checks provider tokens (ES256 JWTs) against the trusted keys.
///
/// A token's signature, key and team never change, so each verdict is cached by the
/// token's text: a client reuses one token for up to an hour, and the signature is
/// checked once, not on every push. The few `authorization` values seen last are
/// remembered whole, so that the usual request (a connection sending the token it
/// sent before) is matched by one comparison, without parsing the header or hashing
/// the token. The time rules (age, clock skew) depend on now and are applied on every
/// request by ``check(authorization:now:)``.
final class ProviderTokenVerifier: Sendable {
    /// What a token is, apart from time. A valid token may carry warnings: what
    /// APNs accepts but a stricter server might refuse (see ``verify(_:)``).
    enum Verdict: Sendable {
        case valid(issuedAt: Int64, warnings: [String])
        case refused(reason: APNsReason, note: String)
    }

    /// A token that passed every check, with its warnings.
    struct Accepted {
        var token: String
        var warnings: [String]
    }

    /// An `authorization` value seen lately, with its token and the token's verdict.
    private struct Recent {
        var authorization: String
        var token: String
        var verdict: Verdict
    }

    private struct Cache {
        var verdicts: [String: Verdict] = [:]
        var recent: [Recent] = []
        var nextRecent = 0
    }

    private let keys: Lock<[String: TrustedKey]>
    private let environment: APNsEnvironment
    private let lifetime: Double
    private let allowedSkew: Double
    private let cache = Lock(Cache())
    private static let cacheLimit = 1024
    /// How many `authorization` values are remembered whole: one per signing key a
    /// client is likely to use at once.
    private static let recentLimit = 4

    init(configuration: SimulatorConfiguration) {
        keys = Lock(Dictionary(configuration.trustedKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last }))
        environment = configuration.environment
        lifetime = configuration.providerTokenLifetime
        allowedSkew = configuration.allowedClockSkew
    }

    /// Adds (or replaces, by key id) a trusted key. Cached verdicts are forgotten, so
    /// a token refused for an unknown key is judged again.
    func trust(_ key: TrustedKey) {
        keys.withLock { $0[key.keyID] = key }
        cache.withLock { $0 = Cache() }
    }

    /// Checks the provider token in the `authorization` header `value` as APNs would
    /// at `now`, and answers it: 403 MissingProviderToken or InvalidProviderToken
    /// for a header that carries no bearer token (see
    /// ``RequestChecks/bearerToken(_:)``), then 403 InvalidProviderToken,
    /// BadEnvironmentKeyIdInToken or ExpiredProviderToken for the token itself.
    func check(authorization value: String?, now: Date) throws(Refusal) -> Accepted {
        let token: String
        let verdict: Verdict
        if let value, let recent = recent(value) {
            (token, verdict) = (recent.token, recent.verdict)
        } else {
            token = try RequestChecks.bearerToken(value)
            verdict = self.verdict(for: token)
            if let value { remember(Recent(authorization: value, token: token, verdict: verdict)) }
        }
        return Accepted(token: token, warnings: try check(verdict, now: now))
    }

    /// Refuses a token of `verdict` as APNs would at `now`; answers its warnings.
    private func check(_ verdict: Verdict, now: Date) throws(Refusal) -> [String] {
        let issuedAt: Int64
        let warnings: [String]
        switch verdict {
        case .refused(let reason, let note): throw Refusal(reason, note)
        case .valid(let iat, let notes): (issuedAt, warnings) = (iat, notes)
        }
        let age = now.timeIntervalSince1970 - Double(issuedAt)
        if age < -allowedSkew {
            throw Refusal(
                .invalidProviderToken,
                "the provider token's iat lies \(Int(-age)) s in the future; iat is Unix seconds, not milliseconds")
        }
        if age > lifetime {
            throw Refusal(
                .expiredProviderToken,
                "the provider token was issued \(Int(age)) s ago; a token is valid for \(Int(lifetime)) s")
        }
        return warnings
    }

    /// ``check(authorization:now:)`` for the first `authorization` header of
    /// `fields`: a header seen lately is recognised from its bytes, without making
    /// a string of it.
    func check(authorizationIn fields: HeaderFields, now: Date) throws(Refusal) -> Accepted {
        let known = fields.withAuthorization { bytes -> Recent? in
            guard let bytes else { return nil }
            return cache.withLock { cache in
                cache.recent.first { HeaderBytes.equals(bytes, $0.authorization) }
            }
        }
        guard let known else { return try check(authorization: fields.authorization, now: now) }
        return Accepted(token: known.token, warnings: try check(known.verdict, now: now))
    }

    private func recent(_ authorization: String) -> Recent? {
        cache.withLock { cache in
            cache.recent.first { $0.authorization.utf8.count == authorization.utf8.count && $0.authorization == authorization }
        }
    }

    private func remember(_ entry: Recent) {
        cache.withLock { cache in
            if cache.recent.count < Self.recentLimit {
                cache.recent.append(entry)
            } else {
                cache.recent[cache.nextRecent] = entry
                cache.nextRecent = (cache.nextRecent + 1) % Self.recentLimit
            }
        }
    }

    private func verdict(for token: String) -> Verdict {
        if let cached = cache.withLock({ $0.verdicts[token] }) { return cached }
        let fresh = verify(token)
        cache.withLock { cache in
            if cache.verdicts.count >= Self.cacheLimit { cache.verdicts.removeAll(keepingCapacity: true) }
            cache.verdicts[token] = fresh
        }
        return fresh
    }

    /// Judges a token apart from time, refusing only what APNs refuses: a token
    /// that is no JWT, not ES256, without a `kid` header naming a trusted key,
    /// whose signature does not verify, without the key's team as `iss`, or
    /// without an `iat`; a key kept to the other environment. Whatever else a token
    /// carries is accepted, as APNs accepts it: a `typ` header, claims besides `iss`
    /// and `iat` (APNSwift repeats `kid` among them), JSON with whitespace and line
    /// breaks. What APNs accepts but a stricter JWT verifier would refuse is
    /// accepted with a warning: a DER-encoded signature (pushy), an `iat` written
    /// as a string of whole seconds (APNSwift 6.4 and older) or with a fraction.
    private func verify(_ compact: String) -> Verdict {
        let token: JSONWebToken
        do {
            token = try JSONWebToken(parsing: compact)
        } catch {
            return .refused(reason: .invalidProviderToken, note: "the provider token is not a JWT (\(error.reason))")
        }
        guard token.header["alg"] == .string("ES256") else {
            return .refused(reason: .invalidProviderToken, note: "the provider token's alg must be ES256")
        }
        guard let keyID = token.header["kid"]?.stringValue else {
            return .refused(reason: .invalidProviderToken, note: "the provider token has no kid header")
        }
        guard let key = keys.withLock({ $0[keyID] }) else {
            return .refused(reason: .invalidProviderToken, note: "the key id \(keyID) is not one this simulator trusts")
        }
        var warnings: [String] = []
        if !token.isValidES256(using: key.publicKey) {
            guard token.isValidDEREncodedES256(using: key.publicKey) else {
                return .refused(reason: .invalidProviderToken, note: "the provider token's signature does not verify with key \(keyID)")
            }
            warnings.append(
                "the provider token's signature is DER-encoded (as Java's SHA256withECDSA writes it), not the 64-byte r || s "
                    + "of RFC 7518; APNs accepts it (pushy sends it), a strict JWT verifier would refuse it")
        }
        guard let issuer = token.claims["iss"]?.stringValue else {
            return .refused(reason: .invalidProviderToken, note: "the provider token has no iss claim (the team id)")
        }
        guard issuer == key.teamID else {
            return .refused(reason: .invalidProviderToken, note: "the provider token names team \(issuer), but key \(keyID) belongs to team \(key.teamID)")
        }
        let issuedAt: Int64
        switch token.claims["iat"] {
        case .integer(let seconds)?:
            issuedAt = seconds
        case .string(let text)?:
            guard let seconds = Self.wholeSeconds(text) else {
                return .refused(reason: .invalidProviderToken, note: "the provider token's iat \"\(text)\" is not a number of seconds")
            }
            issuedAt = seconds
            warnings.append(
                "the provider token's iat is the string \"\(text)\": RFC 7519 makes iat a JSON number; APNs accepts whole "
                    + "seconds in a string (APNSwift 6.4 and older send them), a stricter server might refuse it")
        case .number(let seconds)? where seconds.isFinite && abs(seconds) < 1e15:
            issuedAt = Int64(seconds.rounded(.down))
            warnings.append(
                "the provider token's iat \(seconds) has a fraction of a second; APNs documents whole seconds since 1970, "
                    + "a stricter server might refuse it")
        default:
            return .refused(reason: .invalidProviderToken, note: "the provider token has no iat claim in seconds since 1970")
        }
        if let allowed = key.environments, !allowed.contains(environment) {
            return .refused(reason: .badEnvironmentKeyIdInToken, note: "key \(keyID) may not push to the \(environment.rawValue) environment")
        }
        return .valid(issuedAt: issuedAt, warnings: warnings)
    }

    /// The seconds a string `iat` holds: ASCII digits only, at most 15 of them.
    private static func wholeSeconds(_ text: String) -> Int64? {
        guard !text.isEmpty, text.utf8.count <= 15, text.utf8.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else { return nil }
        return Int64(text)
    }
}

/// What the engine remembers of one connection: the provider token it uses, since
/// when, and whether any token was ever valid on it.
struct ConnectionState {
    var token: String?
    var tokenFirstUsed: Date?
    var authenticated = false

    /// Accepts `token` (already verified) at `now`, or refuses a change that comes
    /// less than `interval` seconds after the current token was first used: 429
    /// TooManyProviderTokenUpdates.
    mutating func use(_ token: String, now: Date, interval: Double) throws(Refusal) {
        if token == self.token { return }
        if let first = tokenFirstUsed, now.timeIntervalSince(first) < interval {
            let elapsed = Int(now.timeIntervalSince(first))
            throw Refusal(
                .tooManyProviderTokenUpdates,
                "the connection switched provider tokens \(elapsed) s after first using the previous one; one switch per \(Int(interval)) s is allowed")
        }
        self.token = token
        tokenFirstUsed = now
        authenticated = true
    }
}
