public import Foundation
public import IsletCore
public import IsletCrypto

/// Posts a form to a token endpoint: how an assertion reaches it (libcurl in the
/// server, which speaks HTTP/1.1 and HTTP/2 alike).
public protocol FCMTokenExchange: Sendable {
    /// POSTs `form` (`application/x-www-form-urlencoded`) to `url`; answers the
    /// status and body, or why no answer came.
    func post(url: String, form: String) async -> Result<(status: Int, body: Data), FCMTokenError>
}

/// Why no access token came: the endpoint refused the assertion (`status` set,
/// OAuth's `error` when it gave one), or could not be reached.
public struct FCMTokenError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The token endpoint's HTTP status; `nil` when no answer came.
    public var status: Int?
    /// OAuth's `error` (`invalid_grant`, …).
    public var error: String?
    /// What happened, in one sentence.
    public var message: String

    /// Creates an error.
    public init(status: Int?, error: String?, message: String) {
        self.status = status
        self.error = error
        self.message = message
    }

    /// Whether the credentials themselves were refused (400, 401 or 403, as OAuth
    /// answers a bad grant or client), rather than the endpoint throttling, failing
    /// or being out of reach (a passing fault).
    public var refusesCredentials: Bool { status.map { [400, 401, 403].contains($0) } ?? false }

    public var description: String { message }
}

/// The OAuth 2.0 access tokens of one service account for FCM's HTTP v1 API: an
/// RS256 assertion (`iss` the account, `scope` firebase.messaging, `aud` the token
/// URI, an hour at most) exchanged at the token URI. A token is kept until shortly
/// before it expires and shared by every send of the account; concurrent callers
/// wait for one exchange. A token FCM refused (401) is dropped, so that the next
/// caller fetches a new one; a token fetched to replace a refused one and refused in
/// its turn is not (`invalidate` says so: the credentials are wrong). Refusals of
/// the credentials are remembered by the caller (the delivery's `RefusedCredentials`),
/// not here: each call to `token()` without a token kept asks the endpoint.
public actor FCMAccessTokens {
    /// The scope FCM's HTTP v1 API needs.
    public static let scope = "https://www.googleapis.com/auth/firebase.messaging"
    /// The lifetime asked for (Google's most).
    public static let assertionLifetime: TimeInterval = 3600

    private let account: FCMServiceAccount
    private let key: RSA.SigningKey
    private let exchange: any FCMTokenExchange
    private let clock: any WallClock
    /// How long before expiry a token is replaced.
    private let refreshMargin: TimeInterval
    private var current: (token: String, expiresAt: Date, refreshAt: Date)?
    private var pending: Task<Result<(token: String, expiresAt: Date), FCMTokenError>, Never>?
    /// Whether the next token fetched replaces one FCM refused.
    private var replacing = false
    /// The last token fetched to replace a refused one, and when.
    private var replacement: (token: String, fetchedAt: Date)?
    /// How long a replacement stays on probation: refused within it, it says the
    /// credentials are wrong; refused later (having served), it is replaced again.
    public static let replacementProbation: TimeInterval = 60
    /// Exchanges made, for tests and metrics.
    public private(set) var exchanges = 0

    /// Tokens for `account`, signed with its key, exchanged through `exchange`.
    public init(
        account: FCMServiceAccount, exchange: any FCMTokenExchange, clock: any WallClock = SystemWallClock(),
        refreshMargin: TimeInterval = 300
    ) throws(CryptoError) {
        self.account = account
        self.key = try RSA.SigningKey(pemRepresentation: account.privateKeyPEM)
        self.exchange = exchange
        self.clock = clock
        self.refreshMargin = refreshMargin
    }

    /// A token valid for a while yet: the kept one, or a new one.
    public func token() async throws(FCMTokenError) -> String {
        if let current, clock.now() < current.refreshAt { return current.token }
        let task: Task<Result<(token: String, expiresAt: Date), FCMTokenError>, Never>
        if let pending {
            task = pending
        } else {
            let (account, key, exchange, now) = (account, key, exchange, clock.now())
            exchanges += 1
            task = Task { await Self.fetch(account: account, key: key, exchange: exchange, now: now) }
            pending = task
        }
        let result = await task.value
        if pending == task { pending = nil }
        switch result {
        case .success(let fresh):
            if replacing {
                replacement = (fresh.token, clock.now())
                replacing = false
            }
            // A waiter resuming late never puts back an older token.
            if current.map({ $0.expiresAt < fresh.expiresAt }) ?? true {
                // Replaced the margin before it expires, or halfway through a short life.
                let life = fresh.expiresAt.timeIntervalSince(clock.now())
                current = (fresh.token, fresh.expiresAt, fresh.expiresAt.addingTimeInterval(-min(refreshMargin, life / 2)))
            }
            return fresh.token
        case .failure(let error):
            throw error
        }
    }

    /// Drops `token` after FCM refused it (unless a newer one replaced it already),
    /// and answers whether the message may go again at once with another: `false`
    /// when `token` itself was fetched to replace a refused one less than
    /// ``replacementProbation`` ago, since a token just earned and refused says the
    /// credentials are wrong, and another would be too.
    @discardableResult
    public func invalidate(_ token: String) -> Bool {
        if let replacement, replacement.token == token {
            let age = clock.now().timeIntervalSince(replacement.fetchedAt)
            if age >= 0, age < Self.replacementProbation { return false }
        }
        if current?.token == token {
            current = nil
            replacing = true
        }
        return true
    }

    /// The signed assertion of `account` at `now`.
    public static func assertion(account: FCMServiceAccount, key: RSA.SigningKey, now: Date) throws(CryptoError) -> String {
        let issued = Int64(now.timeIntervalSince1970.rounded(.down))
        return try JSONWebToken.signRS256(
            keyID: account.privateKeyID,
            claims: [
                "iss": .string(account.clientEmail), "scope": .string(scope), "aud": .string(account.tokenURI),
                "iat": .integer(issued), "exp": .integer(issued + Int64(assertionLifetime)),
            ],
            key: key)
    }

    private static func fetch(
        account: FCMServiceAccount, key: RSA.SigningKey, exchange: any FCMTokenExchange, now: Date
    ) async -> Result<(token: String, expiresAt: Date), FCMTokenError> {
        let assertion: String
        do {
            assertion = try Self.assertion(account: account, key: key, now: now)
        } catch {
            return .failure(FCMTokenError(status: nil, error: nil, message: "the assertion could not be signed: \(error)"))
        }
        let form = "grant_type=" + formEncoded("urn:ietf:params:oauth:grant-type:jwt-bearer") + "&assertion=" + assertion
        switch await exchange.post(url: account.tokenURI, form: form) {
        case .failure(let error):
            return .failure(error)
        case .success(let answer):
            let json = try? JSONValue(parsing: answer.body)
            guard answer.status == 200 else {
                let oauth = json?["error"]?.stringValue
                let described = json?["error_description"]?.stringValue.map { ": \($0)" } ?? ""
                return .failure(FCMTokenError(
                    status: answer.status, error: oauth,
                    message: "the token endpoint refused the assertion (\(answer.status)\(oauth.map { " \($0)" } ?? "")\(described))"))
            }
            guard let token = json?["access_token"]?.stringValue, !token.isEmpty else {
                return .failure(FCMTokenError(status: answer.status, error: nil, message: "the token endpoint answered no access_token"))
            }
            let lifetime = json?["expires_in"]?.doubleValue ?? assertionLifetime
            return .success((token, now.addingTimeInterval(lifetime)))
        }
    }

    /// `text` with everything but unreserved characters percent-encoded.
    static func formEncoded(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}
