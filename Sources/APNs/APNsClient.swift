public import Foundation
import HTTP2
public import IsletCore
import IsletCrypto
import Synchronization

/// Where and how the APNs client connects, and how hard it retries.
public struct APNsClientConfiguration: Sendable {
    /// The production endpoint (`https://api.push.apple.com`, port 443).
    public var productionURL = URL(string: "https://api.push.apple.com")!
    /// The sandbox endpoint (`https://api.sandbox.push.apple.com`, port 443).
    public var sandboxURL = URL(string: "https://api.sandbox.push.apple.com")!
    /// PEM certificates to trust instead of the system's roots (for a simulator).
    public var trustRootsPEM: String?
    /// Connections per (signing key, environment).
    public var connectionsPerPool = 1
    /// Attempts per push, the first included, for retryable failures.
    public var maxAttempts = 5
    /// No retry starts after this long from the first attempt.
    public var retryDeadline: TimeInterval = 60
    /// Backoff before the second attempt; doubles each time, with full jitter.
    public var backoffBase: TimeInterval = 0.1
    /// Longest backoff.
    public var backoffMax: TimeInterval = 10
    /// 503s or connection failures in a row that open a host's circuit breaker.
    public var breakerThreshold = 5
    /// How long an open breaker waits before it probes.
    public var breakerOpenDuration: TimeInterval = 10
    /// Keep-alive PING interval.
    public var pingInterval: Duration = .seconds(60)
    /// Provider tokens are replaced after this long (APNs allows an hour).
    public var providerTokenMaximumAge: TimeInterval = 55 * 60

    /// Apple's hosts, the system's roots.
    public init() {}

    /// The endpoint of `environment`.
    public func url(for environment: APNsEnvironment) -> URL {
        environment == .production ? productionURL : sandboxURL
    }
}

/// Sends pushes to APNs over HTTP/2: a pool of connections per (signing key,
/// environment), one provider token per key shared by its connections, retries
/// with backoff and jitter that keep the `apns-id`, a circuit breaker per host, and
/// every answer classified by `APNsFailurePolicy`.
public final class APNsClient: Sendable {
    /// The configuration it was made with.
    public let configuration: APNsClientConfiguration
    private let clock: any WallClock
    private let pools = Mutex<[String: Pool]>([:])
    private let tokens = Mutex<[String: ProviderTokenManager]>([:])
    private let breakers = Mutex<[String: CircuitBreaker]>([:])
    private let refusedKeys = Mutex<[String: String]>([:])
    private let shuttingDown = Atomic<Bool>(false)

    /// Creates a client; connections open on first use. `clock` drives provider-token
    /// ages and the circuit breakers.
    public init(configuration: APNsClientConfiguration = APNsClientConfiguration(), clock: any WallClock = SystemWallClock()) {
        self.configuration = configuration
        self.clock = clock
    }

    /// Sends `request` with `key` to `environment`, retrying passing faults within
    /// the configured attempts and deadline. Never throws: the result says what
    /// happened and what to do.
    public func send(_ request: APNsRequest, key: APNsSigningKey, environment: APNsEnvironment) async -> APNsResult {
        let identity = key.identity
        if let reason = refusedKeys.withLock({ $0[identity] }) {
            return APNsResult(
                disposition: .credentialsRejected, response: nil,
                error: APNsError(.credentialsRejected, "APNs refused this signing key (\(reason)); replace the credentials"),
                attempts: 0, apnsID: request.apnsID)
        }
        let pool: Pool
        do {
            pool = try self.pool(key: key, environment: environment)
        } catch {
            return APNsResult(disposition: .retry, response: nil, error: error, attempts: 0, apnsID: request.apnsID)
        }
        let tokenManager = tokenManager(for: key)
        let breaker = breaker(for: pool.hostKey)
        let started = clock.now()
        var attempts = 0
        var refreshed = false
        var lastResponse: APNsResponse?
        var lastError: APNsError?
        while true {
            if shuttingDown.load(ordering: .relaxed) {
                return APNsResult(disposition: .retry, response: lastResponse, error: APNsError(.shutDown, "the client is shutting down"), attempts: attempts, apnsID: request.apnsID)
            }
            // Wait out an open breaker, within the deadline.
            while true {
                let permit = breaker.permit()
                if permit.allowed { break }
                if clock.now().timeIntervalSince(started) + permit.retryAfter > configuration.retryDeadline {
                    return APNsResult(
                        disposition: .retry, response: lastResponse,
                        error: APNsError(.circuitOpen, "\(pool.hostKey) keeps failing; paused for \(Int(permit.retryAfter.rounded(.up))) s"),
                        attempts: attempts, apnsID: request.apnsID)
                }
                try? await Task.sleep(for: .milliseconds(Int(max(1, min(permit.retryAfter, 1) * 1000))))
            }
            attempts += 1
            let providerToken: String
            do {
                providerToken = try tokenManager.currentToken()
            } catch {
                breaker.recordNeutral()
                return APNsResult(disposition: .credentialsRejected, response: nil, error: APNsError(.credentialsRejected, "cannot sign a provider token: \(error)"), attempts: attempts, apnsID: request.apnsID)
            }
            let disposition: APNsDisposition
            do {
                let response = try await pool.next().send(Self.http2Request(request, providerToken: providerToken))
                let answer = Self.apnsResponse(response)
                lastResponse = answer
                lastError = nil
                disposition = APNsFailurePolicy.classify(answer)
            } catch let error as HTTP2Error {
                lastError = APNsError(.transport, error.description)
                lastResponse = nil
                disposition = .retry
            } catch {
                return APNsResult(disposition: .retry, response: lastResponse, error: APNsError(.shutDown, "cancelled"), attempts: attempts, apnsID: request.apnsID)
            }
            switch disposition {
            case .retry:
                breaker.recordFailure()
            case .delivered:
                breaker.recordSuccess()
            default:
                breaker.recordNeutral()
            }
            switch disposition {
            case .refreshProviderToken:
                if !refreshed && tokenManager.tokenExpired(providerToken) {
                    refreshed = true
                    continue
                }
                return APNsResult(disposition: .credentialsRejected, response: lastResponse, error: nil, attempts: attempts, apnsID: request.apnsID)
            case .credentialsRejected:
                refusedKeys.withLock { $0[identity] = lastResponse?.reason.map { "\($0)" } ?? "403" }
                return APNsResult(disposition: .credentialsRejected, response: lastResponse, error: nil, attempts: attempts, apnsID: request.apnsID)
            case .retry:
                let elapsed = clock.now().timeIntervalSince(started)
                let ceiling = min(configuration.backoffMax, configuration.backoffBase * pow(2, Double(attempts - 1)))
                let delay = Double.random(in: 0...ceiling)
                guard attempts < configuration.maxAttempts, elapsed + delay < configuration.retryDeadline else {
                    return APNsResult(disposition: .retry, response: lastResponse, error: lastError, attempts: attempts, apnsID: request.apnsID)
                }
                try? await Task.sleep(for: .milliseconds(Int(delay * 1000)))
            default:
                return APNsResult(disposition: disposition, response: lastResponse, error: lastError, attempts: attempts, apnsID: request.apnsID)
            }
        }
    }

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

    /// Lets a refused signing key be used again (after its credentials were fixed).
    public func forgetRefusal(of key: APNsSigningKey) {
        _ = refusedKeys.withLock { $0.removeValue(forKey: key.identity) }
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

    private func pool(key: APNsSigningKey, environment: APNsEnvironment) throws(APNsError) -> Pool {
        let name = "\(key.identity)@\(environment.rawValue)"
        return try pools.withLock { pools throws(APNsError) -> Pool in
            if let pool = pools[name] { return pool }
            let url = configuration.url(for: environment)
            guard let host = url.host, url.scheme == "https" || url.scheme == "http" else {
                throw APNsError(.invalidConfiguration, "\(url) is not an https URL with a host")
            }
            let port = url.port ?? (url.scheme == "https" ? 443 : 80)
            var clients: [HTTP2Client] = []
            for _ in 0..<max(1, configuration.connectionsPerPool) {
                var http2 = HTTP2ClientConfiguration(
                    host: host, port: port,
                    tls: url.scheme == "https" ? TLSClientConfiguration(trustRootsPEM: configuration.trustRootsPEM) : nil)
                http2.pingInterval = configuration.pingInterval
                do {
                    clients.append(try HTTP2Client(configuration: http2))
                } catch {
                    throw APNsError(.invalidConfiguration, "\(error)")
                }
            }
            let pool = Pool(clients: clients, hostKey: "\(host):\(port)")
            pools[name] = pool
            return pool
        }
    }

    static func http2Request(_ request: APNsRequest, providerToken: String) -> HTTP2Request {
        var headers: [(name: String, value: String)] = [
            (APNsHeaderName.authorization, "bearer \(providerToken)"),
            (APNsHeaderName.topic, request.topic),
            (APNsHeaderName.pushType, request.pushType.rawValue),
            (APNsHeaderName.priority, String(request.priority.rawValue)),
            (APNsHeaderName.id, request.apnsID),
        ]
        if let expiration = request.expiration {
            headers.append((APNsHeaderName.expiration, String(expiration)))
        }
        if let collapseID = request.collapseID { headers.append((APNsHeaderName.collapseID, collapseID)) }
        return HTTP2Request(method: "POST", path: APNsPath.device(request.deviceToken), headers: headers, body: request.payload)
    }

    static func apnsResponse(_ response: HTTP2Response) -> APNsResponse {
        var reason: APNsReason?
        var timestamp: Date?
        if !response.body.isEmpty, case .object(let body)? = try? JSONValue(parsing: response.body) {
            if case .string(let text)? = body["reason"] { reason = APNsReason(rawValue: text) }
            if let milliseconds = body["timestamp"]?.doubleValue { timestamp = Date(timeIntervalSince1970: milliseconds / 1000) }
        }
        return APNsResponse(
            status: response.status, apnsID: response.header(APNsHeaderName.id),
            uniqueID: response.header(APNsHeaderName.uniqueID), reason: reason, timestamp: timestamp)
    }
}

/// The connections of one (signing key, environment).
final class Pool: Sendable {
    let clients: [HTTP2Client]
    let hostKey: String
    private let cursor = Atomic<Int>(0)

    init(clients: [HTTP2Client], hostKey: String) {
        self.clients = clients
        self.hostKey = hostKey
    }

    /// The next connection, round robin.
    func next() -> HTTP2Client {
        clients[cursor.wrappingAdd(1, ordering: .relaxed).oldValue % clients.count]
    }
}
