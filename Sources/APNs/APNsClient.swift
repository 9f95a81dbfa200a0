import IsletSync
public import Foundation
import HTTP2
public import IsletCore
import IsletCrypto
import Synchronization

/// Where and how the APNs client connects, and when it pauses a failing host.
public struct APNsClientConfiguration: Sendable {
    /// The production endpoint (`APNsEnvironment.production.endpoint`).
    public var productionURL = Self.defaultURL(.production)
    /// The sandbox endpoint (`APNsEnvironment.sandbox.endpoint`).
    public var sandboxURL = Self.defaultURL(.sandbox)

    /// APNs's own endpoint for `environment`. A URL of a fixed scheme and a host name
    /// of letters and dots always parses.
    public static func defaultURL(_ environment: APNsEnvironment) -> URL {
        URL(string: environment.endpoint)!
    }
    /// PEM certificates to trust instead of the system's roots (for a simulator).
    public var trustRootsPEM: String?
    /// Connections per (signing key, environment).
    public var connectionsPerPool = 1
    /// Event-loop threads serving one pool's connections (at most one per
    /// connection). One thread carries tens of thousands of pushes a second; more
    /// only help when cores are idle.
    public var threadsPerPool = 1
    /// 503s or connection failures in a row that open a host's circuit breaker.
    public var breakerThreshold = 5
    /// How long an open breaker waits before it probes.
    public var breakerOpenDuration: TimeInterval = 10
    /// Keep-alive PING interval.
    public var pingInterval: Duration = .seconds(60)
    /// How long an attempt waits for a connection (reconnecting with backoff
    /// meanwhile) before it fails as a passing fault.
    public var connectTimeout: Duration = .seconds(10)
    /// Provider tokens are replaced after this long (APNs allows an hour).
    public var providerTokenMaximumAge: TimeInterval = 55 * 60
    /// Where broadcasts (iOS 18 channels) go in production; `nil`: the push host.
    /// Apple's pages name both the push host and `api-broadcast.push.apple.com`.
    public var broadcastProductionURL: URL?
    /// Where broadcasts go in the sandbox; `nil`: the push host.
    public var broadcastSandboxURL: URL?

    /// Apple's hosts, the system's roots.
    public init() {}

    /// The endpoint of `environment`.
    public func url(for environment: APNsEnvironment) -> URL {
        environment == .production ? productionURL : sandboxURL
    }

    /// The endpoint of broadcasts in `environment`.
    public func broadcastURL(for environment: APNsEnvironment) -> URL {
        (environment == .production ? broadcastProductionURL : broadcastSandboxURL) ?? url(for: environment)
    }
}

/// Sends pushes to APNs over HTTP/2: a pool of connections per (signing key,
/// environment), one provider token per key shared by its connections, a circuit
/// breaker per host, and one attempt per push, its answer classified by
/// `APNsFailurePolicy`. The client never sends a push again on its own (only the
/// HTTP/2 layer re-sends a request the server refused unprocessed): what follows an
/// answer, a refused key included, is the caller's to decide and remember (the
/// delivery's `RefusedCredentials`).
public final class APNsClient: Sendable {
    /// The configuration it was made with.
    public let configuration: APNsClientConfiguration
    private let clock: any WallClock
    private let pools = Lock<[PoolKey: Pool]>([:])
    private let tokens = Lock<[String: ProviderTokenManager]>([:])
    private let breakers = Lock<[String: CircuitBreaker]>([:])
    private let shuttingDown = Atomic<Bool>(false)
    /// Draws the jitter of reconnects.
    private let random: Lock<any RandomSource>

    /// Creates a client; connections open on first use. `clock` drives provider-token
    /// ages and the circuit breakers; `random` draws the jitter of the connections'
    /// reconnects (by default a generator seeded once from the system).
    public init(
        configuration: APNsClientConfiguration = APNsClientConfiguration(), clock: any WallClock = SystemWallClock(),
        random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max))
    ) {
        self.configuration = configuration
        self.clock = clock
        self.random = Lock(random)
    }

    /// Sends `request` with `key` to `environment`, once. Never throws: the result
    /// says what became of it.
    public func send(_ request: APNsRequest, key: APNsSigningKey, environment: APNsEnvironment) async -> APNsResult {
        await withCheckedContinuation { continuation in
            send(request, key: key, environment: environment) { continuation.resume(returning: $0) }
        }
    }

    /// Sends `request` like `send(_:key:environment:)` and calls `completion` with the
    /// result, on a connection's event-loop thread (keep it short). For callers that
    /// keep many pushes in flight without a task each.
    public func send(
        _ request: APNsRequest, key: APNsSigningKey, environment: APNsEnvironment,
        completion: @escaping @Sendable (APNsResult) -> Void
    ) {
        let pool: Pool
        do {
            pool = try self.pool(key: key, environment: environment, broadcast: request.channelID != nil)
        } catch {
            completion(APNsResult(
                disposition: NoAnswer.connectionFailed.disposition(), response: nil, error: error, attempts: 0, apnsID: request.apnsID))
            return
        }
        PushAttempt(client: self, request: request, pool: pool, completion: completion).start()
    }

    fileprivate var isShuttingDown: Bool { shuttingDown.load(ordering: .relaxed) }

    /// The provider token manager of `key` (one per key, shared by its pools).
    public func tokenManager(for key: APNsSigningKey) -> ProviderTokenManager {
        tokens.withLock { managers in
            if let manager = managers[key.identity] { return manager }
            let manager = ProviderTokenManager(signingKey: key, clock: clock, maximumAge: configuration.providerTokenMaximumAge)
            managers[key.identity] = manager
            return manager
        }
    }

    /// The circuit breaker of a host (`host:port`).
    public func breaker(for host: String) -> CircuitBreaker {
        breakers.withLock { breakers in
            if let breaker = breakers[host] { return breaker }
            let breaker = CircuitBreaker(
                failureThreshold: configuration.breakerThreshold, openDuration: configuration.breakerOpenDuration, clock: clock)
            breakers[host] = breaker
            return breaker
        }
    }

    /// Closes every connection after the requests in flight.
    public func shutdown() async {
        shuttingDown.store(true, ordering: .relaxed)
        let all = pools.withLock { pools -> [Pool] in
            defer { pools.removeAll() }
            return Array(pools.values)
        }
        for pool in all {
            for client in pool.clients { await client.shutdown() }
        }
    }

    private func pool(key: APNsSigningKey, environment: APNsEnvironment, broadcast: Bool) throws(APNsError) -> Pool {
        let name = PoolKey(key: key, environment: environment, broadcast: broadcast)
        return try pools.withLock { pools throws(APNsError) -> Pool in
            if let pool = pools[name] { return pool }
            let url = broadcast ? configuration.broadcastURL(for: environment) : configuration.url(for: environment)
            guard let host = url.host, url.scheme == "https" || url.scheme == "http" else {
                throw APNsError(.invalidConfiguration, "\(url) is not an https URL with a host")
            }
            let port = url.port ?? (url.scheme == "https" ? 443 : 80)
            var clients: [HTTP2Client] = []
            let connections = max(1, configuration.connectionsPerPool)
            let threads = (0..<min(connections, max(1, configuration.threadsPerPool))).map { _ in HTTP2ClientThread(name: "islet-apns") }
            for index in 0..<connections {
                var http2 = HTTP2ClientConfiguration(
                    host: host, port: port,
                    tls: url.scheme == "https" ? TLSClientConfiguration(trustRootsPEM: configuration.trustRootsPEM) : nil)
                http2.pingInterval = configuration.pingInterval
                http2.connectTimeout = configuration.connectTimeout
                http2.jitter = { [random] ceiling in random.withLock { Double.random(in: 0...max(0, ceiling), using: &$0) } }
                do {
                    clients.append(try HTTP2Client(configuration: http2, thread: threads[index % threads.count]))
                } catch {
                    throw APNsError(.invalidConfiguration, "\(error)")
                }
            }
            let hostKey = "\(host):\(port)"
            let groups = threads.indices.map { thread in
                (thread: threads[thread], clients: clients.indices.filter { $0 % threads.count == thread }.map { clients[$0] })
            }
            let pool = Pool(clients: clients, groups: groups, hostKey: hostKey, tokens: tokenManager(for: key), breaker: breaker(for: hostKey))
            pools[name] = pool
            return pool
        }
    }
}

/// Names the pool of one (signing key, environment), for pushes or broadcasts.
struct PoolKey: Hashable, Sendable {
    let identity: String
    let identityHash: Int
    let environment: APNsEnvironment
    let broadcast: Bool

    init(key: APNsSigningKey, environment: APNsEnvironment, broadcast: Bool = false) {
        identity = key.identity
        identityHash = key.identityHash
        self.environment = environment
        self.broadcast = broadcast
    }

    static func == (a: PoolKey, b: PoolKey) -> Bool {
        a.identityHash == b.identityHash && a.environment == b.environment && a.broadcast == b.broadcast
            && a.identity == b.identity
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(identityHash)
        hasher.combine(environment)
    }
}

/// The connections of one (signing key, environment), with the key's provider
/// tokens and the host's circuit breaker: all a push needs, found in one lookup.
final class Pool: Sendable {
    let clients: [HTTP2Client]
    /// The connections by the thread that serves them.
    let groups: [(thread: HTTP2ClientThread, clients: [HTTP2Client])]
    let hostKey: String
    let tokens: ProviderTokenManager
    let breaker: CircuitBreaker
    private let cursor = Atomic<Int>(0)

    init(
        clients: [HTTP2Client], groups: [(thread: HTTP2ClientThread, clients: [HTTP2Client])], hostKey: String,
        tokens: ProviderTokenManager, breaker: CircuitBreaker
    ) {
        self.clients = clients
        self.groups = groups
        self.hostKey = hostKey
        self.tokens = tokens
        self.breaker = breaker
    }

    /// The connection for the next push. From the completion of an answer, the
    /// connection that answered (it has just freed a stream, and a connection that
    /// refills its own streams writes fewer, larger batches); from another of the
    /// pool's threads, the next among that thread's connections, so that the push
    /// does not cross threads; otherwise the next, round robin.
    func next() -> HTTP2Client {
        if clients.count > 1 {
            for client in clients where client.isAnswering { return client }
        }
        let turn = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        if groups.count > 1 {
            for group in groups where group.thread.isCurrent { return group.clients[turn % group.clients.count] }
        }
        return clients[turn % clients.count]
    }
}

/// One push on its way: the circuit breaker's permit, the provider token, and the
/// HTTP/2 exchange itself: it writes the request's fields and reads APNs's answer
/// itself, so that a push costs one object.
/// `@unchecked Sendable`: `start` runs before the exchange is handed to the
/// connection, and the connection's thread alone calls the exchange's methods after
/// that, so its state is touched by one thread at a time.
private final class PushAttempt: HTTP2Exchange, @unchecked Sendable {
    let client: APNsClient
    let request: APNsRequest
    let pool: Pool
    let completion: @Sendable (APNsResult) -> Void
    /// 1 once the push is handed to a connection.
    var attempts = 0
    /// The provider token the attempt carries, and its header value.
    var providerToken = ""
    var authorization = ""
    // The answer being read.
    var answerID: String?
    var answerUniqueID: String?
    var answerBody: Data?

    init(client: APNsClient, request: APNsRequest, pool: Pool, completion: @escaping @Sendable (APNsResult) -> Void) {
        self.client = client
        self.request = request
        self.pool = pool
        self.completion = completion
        super.init(body: request.payload)
    }

    private var tokens: ProviderTokenManager { pool.tokens }
    private var breaker: CircuitBreaker { pool.breaker }

    private func finish(_ disposition: TransportDisposition, response: APNsResponse? = nil, error: APNsError? = nil) {
        completion(APNsResult(disposition: disposition, response: response, error: error, attempts: attempts, apnsID: request.apnsID))
    }

    func start() {
        if client.isShuttingDown {
            finish(NoAnswer.shuttingDown.disposition(), error: APNsError(.shutDown, "the client is shutting down"))
            return
        }
        let permit = breaker.permit()
        guard permit.allowed else {
            finish(
                NoAnswer.hostPaused.disposition(after: permit.retryAfter),
                error: APNsError(.circuitOpen, "\(pool.hostKey) keeps failing; paused for \(Int(permit.retryAfter.rounded(.up))) s"))
            return
        }
        do {
            (providerToken, authorization) = try tokens.current()
        } catch {
            breaker.recordNeutral()
            finish(
                NoAnswer.credentialsUnusable.disposition(),
                error: APNsError(.credentialsRejected, "cannot sign a provider token: \(error)"))
            return
        }
        attempts = 1
        pool.next().send(self)
    }

    // MARK: The HTTP/2 exchange of one attempt

    override func writeHead(_ head: HTTP2RequestHead) {
        if let channelID = request.channelID {
            // A broadcast: the bundle id in the path, the channel in a header, and
            // the expiration it must have (0 unless the channel stores a message).
            head.path(APNsPath.broadcastPrefix, request.bundleID)
            head.field(APNsHeaderName.authorization, authorization)
            head.field(APNsHeaderName.channelID, channelID)
            head.field(APNsHeaderName.pushType, request.pushType.rawValue)
            head.field(APNsHeaderName.priority, request.priority.rawValue)
            head.field(APNsHeaderName.id, request.apnsID, neverIndexed: true)
            head.field(APNsHeaderName.expiration, Int(request.expiration ?? 0))
            return
        }
        head.path(APNsPath.devicePrefix, request.deviceToken)
        head.field(APNsHeaderName.authorization, authorization)
        head.field(APNsHeaderName.topic, request.topic)
        head.field(APNsHeaderName.pushType, request.pushType.rawValue)
        head.field(APNsHeaderName.priority, request.priority.rawValue)
        // Differs on every push: a literal HPACK never indexes.
        head.field(APNsHeaderName.id, request.apnsID, neverIndexed: true)
        if let expiration = request.expiration { head.field(APNsHeaderName.expiration, Int(expiration)) }
        if let collapseID = request.collapseID { head.field(APNsHeaderName.collapseID, collapseID) }
    }

    override func attemptStarted() {
        answerID = nil
        answerUniqueID = nil
        answerBody = nil
    }

    override func answerField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        if HeaderBytes.equals(name, APNsHeaderName.id) {
            // APNs echoes the id it was given: no new string for it.
            answerID = HeaderBytes.equals(value, request.apnsID) ? request.apnsID : String(decoding: value, as: UTF8.self)
        } else if HeaderBytes.equals(name, APNsHeaderName.uniqueID) {
            answerUniqueID = String(decoding: value, as: UTF8.self)
        }
    }

    override func answerData(_ bytes: UnsafeRawBufferPointer) {
        if answerBody == nil { answerBody = Data() }
        answerBody!.append(contentsOf: bytes)
    }

    override func completed(_ outcome: Result<Int, any Error>) {
        switch outcome {
        case .success(let status):
            let answer = response(status: status)
            // An expired provider token is replaced here (at most once per 20
            // minutes, however many pushes carried it), so that the push may go again.
            let replaced = answer.reason == .expiredProviderToken && tokens.tokenExpired(providerToken)
            let disposition = APNsFailurePolicy.classify(answer, providerTokenReplaced: replaced)
            switch disposition {
            case .retry: breaker.recordFailure()
            case .delivered: breaker.recordSuccess()
            default: breaker.recordNeutral()
            }
            finish(disposition, response: answer)
        case .failure(let error):
            breaker.recordFailure()
            finish(NoAnswer.connectionFailed.disposition(), error: APNsError(.transport, APNsError.sentence(error, host: pool.hostKey)))
        }
    }

    /// APNs's answer: the status, the ids, and a failure's `reason` and `timestamp`
    /// from its JSON body.
    private func response(status: Int) -> APNsResponse {
        var reason: APNsReason?
        var timestamp: Date?
        if let answerBody, !answerBody.isEmpty, case .object(let body)? = try? JSONValue(parsing: answerBody) {
            if case .string(let text)? = body["reason"] { reason = APNsReason(rawValue: text) }
            if let milliseconds = body["timestamp"]?.doubleValue { timestamp = Date(timeIntervalSince1970: milliseconds / 1000) }
        }
        return APNsResponse(status: status, apnsID: answerID, uniqueID: answerUniqueID, reason: reason, timestamp: timestamp)
    }
}

extension APNsError {
    /// A failure of the connection under a push, as a sentence: what happened on the
    /// way to `host`, without the HTTP/2 layer's code names.
    static func sentence(_ error: any Error, host: String) -> String {
        guard let error = error as? HTTP2Error else { return "the push to \(host) failed: \(error)" }
        switch error.code {
        case .connectFailed: return "could not connect to \(host): \(error.message)"
        case .tlsFailed: return "the TLS handshake with \(host) failed: \(error.message)"
        case .protocolNegotiation: return "\(host) does not speak HTTP/2: \(error.message)"
        case .connectionLost: return "the connection to \(host) closed before it answered: \(error.message)"
        case .timedOut: return "\(host) did not answer in time: \(error.message)"
        case .streamReset: return "\(host) reset the request: \(error.message)"
        case .protocolError: return "\(host) broke the HTTP/2 protocol: \(error.message)"
        default: return "the push to \(host) failed: \(error.message)"
        }
    }
}
