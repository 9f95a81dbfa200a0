import IsletSync
public import FCM
public import Foundation
public import IsletCore
public import IsletLog
public import Storage

/// Sends claimed FCM pushes (token kind `fcm`: an Android device's data messages)
/// through an `FCMClient`, with each app's service account read from the store and
/// its access tokens kept per version of the app's credentials. FCM's answers come
/// back as `TransportResult`s already in the neutral terms (`FCMFailurePolicy`).
/// Refusals of an app's credentials are remembered in `RefusedCredentials`: FCM's
/// own until the credentials change, the token endpoint's for
/// ``tokenRefusalHold``.
///
/// A push's stored content is its data message: `payload` the data (a JSON object of
/// strings), `priority` 10 for FCM's `high` (else `normal`), `collapseID` the
/// collapse key, and `expiration` when it stops being worth delivering (the TTL).
public final class FCMTransport: PushTransport {
    /// The client messages go through.
    public let client: FCMClient
    private let store: any Store
    private let exchange: any FCMTokenExchange
    private let clock: any WallClock
    /// The clock a message's time to its answer is measured on.
    private let latencyClock: any Clock<Duration>
    private let accounts = Lock<[String: CachedAccount]>([:])
    /// Whether a token URI may name a loopback, private or link-local address.
    private let allowPrivateTokenURIs: Bool
    private let logger: Logger?
    /// When each app's failing token endpoint was last logged.
    private let tokenWarnings = Lock<[String: Date]>([:])
    /// The credentials refused, shared with the APNs transport.
    private let refusals: RefusedCredentials

    /// How long a refusal by the token endpoint stands: sends meanwhile are answered
    /// with it, without an exchange; then one is tried again (a clock set right, a
    /// key restored).
    public static let tokenRefusalHold: TimeInterval = 60

    /// How long a failing token endpoint goes without another log line, per app.
    public static let tokenWarningInterval: TimeInterval = 60

    /// How long a message without an expiration is kept for an offline device.
    public static let defaultTTL: Int64 = 8 * 3600
    /// The longest FCM keeps a message: four weeks.
    public static let maxTTL: Int64 = 28 * 86_400

    /// An app's account and its tokens, or why there are none.
    struct CachedAccount: Sendable {
        let updatedAt: Date
        let account: FCMServiceAccount?
        let tokens: FCMAccessTokens?
        let problem: String?
        var passing = false
        /// Why the account's token URI may not be used, when it may not.
        var tokenURIProblem: String?
    }

    /// A transport over `client`, reading apps' service accounts from `store` and
    /// exchanging their assertions through `exchange`. A stored token URI is checked
    /// again before it is used (https, no credentials, and a numeric host only when
    /// public, or private with `allowPrivateTokenURIs`; the exchange's client checks
    /// the addresses a name leads to); a token endpoint that fails is logged to
    /// `logger`, at most once per ``tokenWarningInterval`` per app. Refused
    /// credentials are remembered in `refusals` (by default a memory of its own).
    public init(
        client: FCMClient, store: any Store, exchange: any FCMTokenExchange, clock: any WallClock = SystemWallClock(),
        allowPrivateTokenURIs: Bool = false, logger: Logger? = nil, latencyClock: any Clock<Duration> = ContinuousClock(),
        refusals: RefusedCredentials? = nil
    ) {
        self.refusals = refusals ?? RefusedCredentials(clock: clock)
        self.latencyClock = latencyClock
        self.client = client
        self.store = store
        self.exchange = exchange
        self.clock = clock
        self.allowPrivateTokenURIs = allowPrivateTokenURIs
        self.logger = logger
    }

    public func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void) {
        let cached = account(appID: push.appID)
        guard let account = cached.account, let tokens = cached.tokens else {
            if let problem = cached.tokenURIProblem { warnOfTokenEndpoint(appID: push.appID, cause: problem) }
            completion(TransportResult(
                disposition: (cached.passing ? NoAnswer.credentialsUnreadable : .credentialsUnusable).disposition(),
                reason: cached.passing ? "transport" : "credentialsRejected", attempts: 0))
            return
        }
        let credentials = RefusedCredentials.Subject(service: .fcm, appID: push.appID, version: cached.updatedAt)
        if let refused = refusals.refusal(of: credentials) {
            completion(TransportResult(disposition: NoAnswer.credentialsUnusable.disposition(), reason: refused.reason, attempts: 0))
            return
        }
        guard let message = Self.message(push, now: clock.now()) else {
            completion(TransportResult(disposition: NoAnswer.contentUnusable.disposition(), reason: "InvalidData", attempts: 0))
            return
        }
        let client = client
        let sinceSent = latencyClock.stopwatch()
        Task {
            let result = await client.send(message, account: account, tokens: tokens)
            if let failure = result.tokenFailure { self.warnOfTokenEndpoint(appID: push.appID, cause: failure.message) }
            // FCM's own refusal of a send stops the app's messages until its
            // credentials change; the token endpoint's stands a while (a clock set
            // right again, a key restored, and messages go again).
            if result.disposition == .credentialsRejected {
                if let response = result.response {
                    self.refusals.record(credentials, reason: response.errorCode ?? "credentialsRejected")
                } else if result.tokenFailure?.refusesCredentials == true {
                    self.refusals.record(
                        credentials, reason: "credentialsRejected", until: self.clock.now().addingTimeInterval(Self.tokenRefusalHold))
                }
            }
            let elapsed = sinceSent()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            completion(TransportResult(
                disposition: result.disposition, status: result.response?.status,
                reason: result.response?.errorCode
                    ?? (result.response == nil ? (result.disposition == .credentialsRejected ? "credentialsRejected" : "transport") : nil),
                serviceMessageID: result.response?.messageName, attempts: result.attempts, latency: seconds))
        }
    }

    /// The FCM message of `push`, or `nil` when its stored data is not an object
    /// of strings.
    public static func message(_ push: ClaimedPush, now: Date) -> FCMMessage? {
        guard let object = (try? JSONValue(parsing: push.content.payload))?.objectValue else { return nil }
        var data: [String: String] = [:]
        for (key, value) in object {
            guard let text = value.stringValue else { return nil }
            data[key] = text
        }
        // FCM keeps a message four weeks at most.
        // (Compared before subtracting: a stored expiration of any size gives a TTL.)
        let seconds = Int64(saturating: now.timeIntervalSince1970)
        let ttl = min(maxTTL, push.content.expiration.map { $0 <= seconds ? 0 : $0 - seconds } ?? defaultTTL)
        return FCMMessage(
            token: push.token, data: data, priority: push.content.priority == .immediate ? "high" : "normal", ttl: ttl,
            collapseKey: push.content.collapseID)
    }

    /// The service account of an app and its tokens, made once per version of its
    /// credentials.
    func account(appID: String) -> CachedAccount {
        let app: AppRecord?
        do {
            app = try store.readNow { try $0.app(id: appID) }
        } catch {
            return CachedAccount(updatedAt: .distantPast, account: nil, tokens: nil, problem: "cannot read the app: \(error)", passing: true)
        }
        guard let app else {
            return CachedAccount(updatedAt: .distantPast, account: nil, tokens: nil, problem: "the app no longer exists")
        }
        if let cached = accounts.withLock({ $0[appID] }), cached.updatedAt == app.updatedAt { return cached }
        let entry: CachedAccount
        if let fcm = app.fcm, let refused = tokenURIRefusal(fcm.tokenURI) {
            // Saved before this check existed, or by a node that allowed private
            // addresses: no assertion is posted to it.
            let problem = "its token URI is refused: \(refused)"
            entry = CachedAccount(updatedAt: app.updatedAt, account: nil, tokens: nil, problem: problem, tokenURIProblem: problem)
        } else if let fcm = app.fcm {
            let account = FCMServiceAccount(
                projectID: fcm.projectID, clientEmail: fcm.clientEmail, privateKeyPEM: fcm.privateKeyPEM,
                privateKeyID: fcm.privateKeyID, tokenURI: fcm.tokenURI)
            do {
                let tokens = try FCMAccessTokens(account: account, exchange: exchange, clock: clock)
                entry = CachedAccount(updatedAt: app.updatedAt, account: account, tokens: tokens, problem: nil)
            } catch {
                entry = CachedAccount(
                    updatedAt: app.updatedAt, account: nil, tokens: nil, problem: "the service account's key does not parse: \(error)")
            }
        } else {
            entry = CachedAccount(updatedAt: app.updatedAt, account: nil, tokens: nil, problem: "the app has no FCM service account")
        }
        accounts.withLock { $0[appID] = entry }
        return entry
    }

    /// Why a token URI may not be posted to, by its text alone.
    func tokenURIRefusal(_ uri: String) -> String? {
        switch HTTPSEndpoint.parse(uri) {
        case .failure(let refusal): return "it \(refusal.message)"
        case .success(let endpoint):
            return endpoint.literalRefusal(allowPrivate: allowPrivateTokenURIs).map {
                "\($0)\(allowPrivateTokenURIs ? "" : " (private addresses need --fcm-allow-private)")"
            }
        }
    }

    /// Logs that an app's token endpoint failed, unless it was logged less than
    /// ``tokenWarningInterval`` ago: sends retry often, and the log says it once.
    private func warnOfTokenEndpoint(appID: String, cause: String) {
        let now = clock.now()
        let due = tokenWarnings.withLock { warned -> Bool in
            if let last = warned[appID], now.timeIntervalSince(last) < Self.tokenWarningInterval, now >= last { return false }
            warned[appID] = now
            return true
        }
        guard due else { return }
        logger?.warning(
            "no FCM access token for the app: its service account's token endpoint failed", ("app", .string(appID)),
            ("cause", .string(cause)))
    }
}

/// The transports of every kind of push, as one: FCM pushes (an Android device's
/// data messages) go to `fcm`, every other kind to `apns`. Each answer is the
/// transport's own, already in the neutral terms.
public struct PushTransports: PushTransport {
    /// APNs: tokens of every iOS kind and broadcast channels.
    public let apns: any PushTransport
    /// FCM: Android devices.
    public let fcm: any PushTransport

    /// Routes between `apns` and `fcm`.
    public init(apns: any PushTransport, fcm: any PushTransport) {
        self.apns = apns
        self.fcm = fcm
    }

    public func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void) {
        (push.tokenKind == .fcm ? fcm : apns).send(push, completion: completion)
    }

    public func send(_ pushes: [ClaimedPush], completion: @escaping @Sendable (ClaimedPush, TransportResult) -> Void) {
        // Most batches are one kind: handed on whole.
        let android = pushes.filter { $0.tokenKind == .fcm }
        if android.isEmpty { return apns.send(pushes, completion: completion) }
        if android.count == pushes.count { return fcm.send(pushes, completion: completion) }
        apns.send(pushes.filter { $0.tokenKind != .fcm }, completion: completion)
        fcm.send(android, completion: completion)
    }
}
