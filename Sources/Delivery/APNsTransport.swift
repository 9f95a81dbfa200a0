import IsletSync
public import APNs
public import Foundation
import IsletCore
import IsletCrypto
public import Storage

/// Sends claimed pushes to APNs through an `APNsClient`: it builds each
/// `APNsRequest`, signs with the app's key (read from the store, and parsed once per
/// version of the app's credentials) and hands back every `APNsResult` as a
/// `TransportResult`. A key APNs refused (`APNsFailurePolicy.standingRefusal`) is
/// remembered in `RefusedCredentials` until the app's credentials change: its
/// pushes are answered with the refusal, not sent. The client is shut down by
/// whoever made it.
public final class APNsTransport: PushTransport {
    /// The client pushes go through.
    public let client: APNsClient
    private let store: any Store
    private let keys = Lock<[String: CachedKey]>([:])
    /// The clock a push's time to its answer is measured on.
    private let latencyClock: any Clock<Duration>
    /// The credentials refused, shared with the FCM transport.
    private let refusals: RefusedCredentials

    /// An app's signing key, or why there is none.
    struct CachedKey: Sendable {
        let updatedAt: Date
        let key: APNsSigningKey?
        let problem: String?
        /// The app could not be read: a passing fault, not a refusal.
        var passing = false
    }

    /// A transport over `client`, reading apps' credentials from `store`, timing
    /// each push's answer on `latencyClock`, remembering refused keys in `refusals`
    /// (by default a memory of its own).
    public init(
        client: APNsClient, store: any Store, latencyClock: any Clock<Duration> = ContinuousClock(),
        refusals: RefusedCredentials? = nil
    ) {
        self.refusals = refusals ?? RefusedCredentials()
        self.client = client
        self.store = store
        self.latencyClock = latencyClock
    }

    /// Sends one push.
    public func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void) {
        send(push, key: signingKey(appID: push.appID)) { _, result in completion(result) }
    }

    /// Sends pushes claimed together, reading each app's credentials once.
    public func send(_ pushes: [ClaimedPush], completion: @escaping @Sendable (ClaimedPush, TransportResult) -> Void) {
        guard let first = pushes.first else { return }
        // Most batches are one app's fan-out: no set, no dictionary.
        var keysByApp: [String: CachedKey] = [first.appID: signingKey(appID: first.appID)]
        for push in pushes where keysByApp[push.appID] == nil {
            keysByApp[push.appID] = signingKey(appID: push.appID)
        }
        for push in pushes {
            send(push, key: keysByApp[push.appID]!, completion: completion)
        }
    }

    private func send(
        _ push: ClaimedPush, key cached: CachedKey, completion: @escaping @Sendable (ClaimedPush, TransportResult) -> Void
    ) {
        guard let key = cached.key else {
            completion(push, Self.unsendable(problem: cached.problem ?? "the app has no APNs credentials", passing: cached.passing))
            return
        }
        let credentials = RefusedCredentials.Subject(service: .apns, appID: push.appID, version: cached.updatedAt)
        if let refused = refusals.refusal(of: credentials) {
            completion(push, Self.unsendable(
                problem: "APNs refused this signing key (\(refused.reason)); replace the credentials", passing: false))
            return
        }
        var request = APNsRequest(
            deviceToken: push.token, topic: push.content.topic, pushType: push.content.pushType,
            priority: push.content.priority, expiration: push.content.expiration, apnsID: push.apnsID,
            collapseID: push.content.collapseID, payload: push.content.payload)
        if push.tokenKind == .channel {
            // One broadcast to every subscriber of the channel, whose id the push
            // carries as its token. A channel that stores no message takes only
            // expiration 0, which its send's content already says.
            request.deviceToken = ""
            request.channelID = push.token
        }
        let sinceSent = latencyClock.stopwatch()
        let refusals = refusals
        client.send(request, key: key, environment: push.environment) { result in
            if let response = result.response, let reason = APNsFailurePolicy.standingRefusal(response) {
                refusals.record(credentials, reason: reason)
            }
            let elapsed = sinceSent()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            completion(push, Self.result(result, latency: seconds))
        }
    }

    /// The result of a push that could not be signed: a passing fault when the app
    /// could not be read, a refusal of the credentials otherwise. Nothing was sent.
    public static func unsendable(problem: String, passing: Bool) -> TransportResult {
        result(
            APNsResult(
                disposition: (passing ? NoAnswer.credentialsUnreadable : .credentialsUnusable).disposition(), response: nil,
                error: APNsError(passing ? .transport : .credentialsRejected, problem), attempts: 0, apnsID: ""),
            latency: 0)
    }

    /// `result` as a transport's result: its disposition is already the neutral one
    /// (`APNsFailurePolicy`).
    public static func result(_ result: APNsResult, latency: TimeInterval) -> TransportResult {
        TransportResult(
            disposition: result.disposition, status: result.response?.status, reason: reason(result),
            serviceMessageID: result.response?.uniqueID, attempts: result.attempts, latency: latency)
    }

    /// The reason recorded for `result`: APNs's, or the client's error code.
    public static func reason(_ result: APNsResult) -> String? {
        if let reason = result.response?.reason { return reason.rawValue }
        if let error = result.error { return "\(error.code)" }
        if let status = result.response?.status, status != 200 { return "HTTP \(status)" }
        return nil
    }

    /// The signing key of an app, parsed once per version of its credentials.
    func signingKey(appID: String) -> CachedKey {
        let app: AppRecord?
        do {
            app = try store.readNow { try $0.app(id: appID) }
        } catch {
            return CachedKey(updatedAt: .distantPast, key: nil, problem: "cannot read the app: \(error)", passing: true)
        }
        guard let app else { return CachedKey(updatedAt: .distantPast, key: nil, problem: "the app no longer exists") }
        if let cached = keys.withLock({ $0[appID] }), cached.updatedAt == app.updatedAt { return cached }
        let entry: CachedKey
        if let credentials = app.credentials {
            do {
                let key = try P256.SigningKey(pemRepresentation: credentials.privateKeyPEM)
                entry = CachedKey(
                    updatedAt: app.updatedAt,
                    key: APNsSigningKey(keyID: credentials.keyID, teamID: credentials.teamID, key: key), problem: nil)
            } catch {
                entry = CachedKey(updatedAt: app.updatedAt, key: nil, problem: "the APNs private key does not parse: \(error)")
            }
        } else {
            entry = CachedKey(updatedAt: app.updatedAt, key: nil, problem: "the app has no APNs credentials")
        }
        keys.withLock { $0[appID] = entry }
        return entry
    }
}
