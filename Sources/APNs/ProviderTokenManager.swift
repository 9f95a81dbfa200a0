import IsletSync
public import Foundation
public import IsletCore
public import IsletCrypto

/// An APNs signing key: the `.p8` key with its key id and team id.
public struct APNsSigningKey: Sendable {
    /// The key id (10 characters, from the Apple developer account).
    public let keyID: String
    /// The team id the key belongs to.
    public let teamID: String
    /// The private key.
    public let key: P256.SigningKey

    /// Identifies the key for pools and token caches: key id, team id and the public
    /// key's fingerprint, so replacing the `.p8` behind the same key id starts afresh.
    let identity: String
    /// ``identity``'s hash, worked out once: pools are found by it on every push.
    let identityHash: Int

    /// Creates a signing key.
    public init(keyID: String, teamID: String, key: P256.SigningKey) {
        self.keyID = keyID
        self.teamID = teamID
        self.key = key
        let fingerprint = Digest.sha256(Data(key.publicKey.pemRepresentation.utf8)).prefix(8)
            .map { String(format: "%02x", $0) }.joined()
        self.identity = "\(teamID)/\(keyID)/\(fingerprint)"
        self.identityHash = identity.hashValue
    }
}

/// Mints and caches the provider token (ES256 JWT) of one signing key. APNs refuses
/// tokens older than an hour and answers TooManyProviderTokenUpdates to a client that
/// changes tokens more often than every 20 minutes, so one token serves every
/// connection of the key for between 20 and `maximumAge` minutes.
public final class ProviderTokenManager: Sendable {
    /// The key tokens are signed with.
    public let signingKey: APNsSigningKey
    private let clock: any WallClock
    private let maximumAge: TimeInterval
    private let minimumAge: TimeInterval
    private let state = Lock<(token: String, authorization: String, issuedAt: Date, minted: Int)?>(nil)

    /// Creates a manager. `maximumAge` (default 55 minutes) is when a token is
    /// replaced on use; `minimumAge` (default 20 minutes) is the youngest token that
    /// may be replaced after APNs calls it expired.
    public init(
        signingKey: APNsSigningKey, clock: any WallClock = SystemWallClock(),
        maximumAge: TimeInterval = 55 * 60, minimumAge: TimeInterval = 20 * 60
    ) {
        self.signingKey = signingKey
        self.clock = clock
        self.maximumAge = maximumAge
        self.minimumAge = minimumAge
    }

    /// The token to send now, minting one when there is none or it is too old.
    public func currentToken() throws(CryptoError) -> String {
        try current().token
    }

    /// The current token and the `authorization` header value that carries it
    /// (`bearer <token>`), made once per token rather than once per push.
    func current() throws(CryptoError) -> (token: String, authorization: String) {
        let now = clock.now()
        return try state.withLock { state throws(CryptoError) -> (token: String, authorization: String) in
            if let current = state, now.timeIntervalSince(current.issuedAt) < maximumAge {
                return (current.token, current.authorization)
            }
            let fresh = try mint(at: now, minted: (state?.minted ?? 0) + 1)
            state = fresh
            return (fresh.token, fresh.authorization)
        }
    }

    /// After APNs answered ExpiredProviderToken to `rejected`: replaces the token if
    /// it is still the current one and at least `minimumAge` old. Answers whether the
    /// push should be tried once more (a newer token exists now).
    public func tokenExpired(_ rejected: String) -> Bool {
        let now = clock.now()
        return state.withLock { state -> Bool in
            guard let current = state else { return true }
            if current.token != rejected { return true }  // another caller already replaced it
            guard now.timeIntervalSince(current.issuedAt) >= minimumAge, let fresh = try? mint(at: now, minted: current.minted + 1) else {
                return false
            }
            state = fresh
            return true
        }
    }

    /// How many tokens this manager has minted.
    public var tokensMinted: Int { state.withLock { $0?.minted ?? 0 } }

    /// A new token issued at `date`, with its `authorization` value, as the
    /// `minted`th of this manager.
    private func mint(at date: Date, minted: Int) throws(CryptoError) -> (token: String, authorization: String, issuedAt: Date, minted: Int) {
        let token = try JSONWebToken.signES256(
            keyID: signingKey.keyID,
            claims: ["iss": .string(signingKey.teamID), "iat": .integer(Int64(date.timeIntervalSince1970))],
            key: signingKey.key)
        return (token, "bearer " + token, date, minted)
    }
}
