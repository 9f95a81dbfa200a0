import Foundation
import IsletCore
import IsletCrypto
import Synchronization

/// Checks provider tokens (ES256 JWTs) against the trusted keys.
///
/// A token's signature, key and team never change, so each verdict is cached by the
/// token's text: a client reuses one token for up to an hour, and the signature is
/// checked once, not on every push. The time rules (age, clock skew) depend on now
/// and are applied on every request by ``check(_:now:)``.
final class ProviderTokenVerifier: Sendable {
    /// What a token is, apart from time.
    enum Verdict: Sendable {
        case valid(issuedAt: Int64)
        case refused(reason: APNsReason, note: String)
    }

    private let keys: [String: TrustedKey]
    private let environment: APNsEnvironment
    private let lifetime: Double
    private let allowedSkew: Double
    private let cache = Mutex<[String: Verdict]>([:])
    private static let cacheLimit = 1024

    init(configuration: SimulatorConfiguration) {
        keys = Dictionary(configuration.trustedKeys.map { ($0.keyID, $0) }, uniquingKeysWith: { _, last in last })
        environment = configuration.environment
        lifetime = configuration.providerTokenLifetime
        allowedSkew = configuration.allowedClockSkew
    }

    /// Refuses `token` as APNs would at `now`: 403 InvalidProviderToken,
    /// BadEnvironmentKeyIdInToken or ExpiredProviderToken.
    func check(_ token: String, now: Date) throws(Refusal) {
        let issuedAt: Int64
        switch verdict(for: token) {
        case .refused(let reason, let note): throw Refusal(reason, note)
        case .valid(let iat): issuedAt = iat
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
    }

    private func verdict(for token: String) -> Verdict {
        if let cached = cache.withLock({ $0[token] }) { return cached }
        let fresh = verify(token)
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll(keepingCapacity: true) }
            cache[token] = fresh
        }
        return fresh
    }

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
        guard let key = keys[keyID] else {
            return .refused(reason: .invalidProviderToken, note: "the key id \(keyID) is not one this simulator trusts")
        }
        guard token.isValidES256(using: key.publicKey) else {
            return .refused(reason: .invalidProviderToken, note: "the provider token's signature does not verify with key \(keyID)")
        }
        guard let issuer = token.claims["iss"]?.stringValue else {
            return .refused(reason: .invalidProviderToken, note: "the provider token has no iss claim (the team id)")
        }
        guard issuer == key.teamID else {
            return .refused(reason: .invalidProviderToken, note: "the provider token names team \(issuer), but key \(keyID) belongs to team \(key.teamID)")
        }
        guard let issuedAt = token.claims["iat"]?.integerValue else {
            return .refused(reason: .invalidProviderToken, note: "the provider token has no integer iat claim")
        }
        if let allowed = key.environments, !allowed.contains(environment) {
            return .refused(reason: .badEnvironmentKeyIdInToken, note: "key \(keyID) may not push to the \(environment.rawValue) environment")
        }
        return .valid(issuedAt: issuedAt)
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
