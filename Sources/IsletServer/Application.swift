import IsletSync
import IsletThreads
public import APNs
public import Delivery
import FCM
import Foundation
import HTTPClient
import HTTPServer
import IsletBackground
import IsletCore
public import IsletLog
public import IsletService
public import Storage

/// A running Islet: its store, its domain services, its delivery worker and APNs
/// client, its HTTP API, an embedded APNs when one was given, and its shutdown
/// sequence. Built by `buildApplication`, which `islet serve` and the tests both use.
///
/// Everything that runs or must be closed is a `BackgroundService` of one
/// `ServiceRunner`, declared in the order it starts; a shutdown stops them in
/// reverse: the API (no new connections, requests in flight finish), the
/// timekeeper, the history's purge, the event feed, the webhook dispatcher, the
/// delivery worker (pushes in flight get their answers), then the webhook client,
/// the APNs client, the embedded APNs and the database (its WAL checkpointed).
public final class Application: Sendable {
    /// The configuration it was built from.
    public let configuration: Configuration
    /// The root logger.
    public let logger: Logger
    /// The registry and queue.
    public let store: any Store
    /// The domain services the routes (and clock-driven work) call.
    public let services: Services
    /// The worker sending queued pushes.
    public let delivery: DeliveryWorker
    /// The APNs client the worker sends with.
    public let client: APNsClient
    /// The sender of webhook deliveries.
    public let webhooks: WebhookDispatcher
    /// The HTTP client webhooks are sent with.
    let webhookClient: HTTPClient
    /// The newest events, for the event streams of this node.
    public let feed: EventFeed
    /// The in-process simulators, APNs and FCM (`--simulator`), already listening, and where.
    public let embeddedSimulators: (simulators: any EmbeddedSimulators, endpoint: EmbeddedSimulatorEndpoints)?
    /// The admin token, when this start generated it: written into the data folder
    /// by `start` once the API listens (a start that fails leaves no token behind,
    /// so the next one generates and shows its own), to be shown once.
    public let generatedAdminToken: String?
    /// The demo app of `--simulator`, with fresh keys.
    public let demo: DemoApp?
    let server: HTTPServer
    let timekeeper: Timekeeper
    /// The loop that deletes old history.
    let historyKeeper: HistoryKeeper
    /// The services, in the order they start (and the reverse of their stop).
    private let runner: ServiceRunner
    private let stopState = Lock(StopState())

    private struct StopState {
        var started = false
        var requested = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// What `buildApplication` made of one configuration, handed over whole.
    struct Parts {
        var configuration: Configuration
        var logger: Logger
        var store: any Store
        var services: Services
        var delivery: DeliveryWorker
        var client: APNsClient
        var channelClient: APNsChannelClient
        var webhooks: WebhookDispatcher
        var webhookClient: HTTPClient
        var feed: EventFeed
        var fcmClient: FCMClient
        var fcmTokenClient: HTTPClient
        var embeddedSimulators: (simulators: any EmbeddedSimulators, endpoint: EmbeddedSimulatorEndpoints)?
        var generatedAdminToken: String?
        var demo: DemoApp?
        var sleeper: any Sleeper
        /// The timekeeper's doorbell, rung when timed work is added or moved.
        var timers: Doorbell
        var dispatcher: Dispatcher
        /// The SQLite database's lock, released once the store is closed.
        var databaseLock: DatabaseLock?
    }

    init(_ parts: Parts) {
        configuration = parts.configuration
        logger = parts.logger
        store = parts.store
        services = parts.services
        delivery = parts.delivery
        client = parts.client
        webhooks = parts.webhooks
        webhookClient = parts.webhookClient
        feed = parts.feed
        embeddedSimulators = parts.embeddedSimulators
        generatedAdminToken = parts.generatedAdminToken
        demo = parts.demo
        // What the closures below keep: the parts, not `self`.
        let configuration = parts.configuration
        let services = parts.services
        let sleeper = parts.sleeper
        let dispatcher = parts.dispatcher
        let store = parts.store
        let databaseLock = parts.databaseLock
        let embeddedSimulators = parts.embeddedSimulators
        let client = parts.client
        let channelClient = parts.channelClient
        let webhookClient = parts.webhookClient
        let fcmClient = parts.fcmClient
        let fcmTokenClient = parts.fcmTokenClient
        self.timekeeper = Timekeeper(services: services, sleeper: sleeper, doorbell: parts.timers)
        self.historyKeeper = HistoryKeeper(history: services.history, sleeper: sleeper)
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodyBytes = configuration.maxBodyBytes
        let largeLimit = max(configuration.maxBodyBytes, configuration.maxTimelineBodyBytes)
        let smallLimit = configuration.maxBodyBytes
        http.bodyLimit = { method, path in
            dispatcher.takesLargeBody(method: method, path: path) ? largeLimit : smallLimit
        }
        http.threads = configuration.httpThreads
        // A body is read only for a request that would be answered: its key, app
        // and route are checked from its head first.
        http.admission = { head in dispatcher.admission(head) }
        http.maxBufferedBodyBytes = configuration.maxBufferedBodyBytes
        http.maxBufferedBodyBytesPerBudget = configuration.maxBufferedBodyBytesPerApp
        http.bodyTimeout = .milliseconds(Int(configuration.bodyTimeoutSeconds * 1000))
        let server = HTTPServer(
            configuration: http,
            refusal: { refusal in Self.problem(refusal).response },
            handler: { request in await dispatcher.handle(request) })
        self.server = server
        // What is only closed comes first, so that it is closed last, after
        // everything that uses it has stopped.
        let resources: [any BackgroundService] = [
            // Closing joins the store's threads (and checkpoints SQLite's log): on a
            // thread of its own, not one of the concurrency pool's.
            // The SQLite database's lock goes with it.
            ClosingService {
                await runOnOwnThread(named: "islet-db-close") { store.close() }
                databaseLock?.release()
            },
            ClosingService { await embeddedSimulators?.simulators.shutdown() },
            ClosingService { await client.shutdown() },
            ClosingService { await channelClient.shutdown() },
            ClosingService { await webhookClient.shutdown() },
            ClosingService { await fcmClient.shutdown() },
            ClosingService { await fcmTokenClient.shutdown() },
        ]
        // Nothing runs before `start`: a shutdown without one closes the resources
        // (each service's `stopUnstarted`), in the same reverse order.
        runner = ServiceRunner(
            resources + [
                parts.delivery, parts.webhooks, parts.feed, historyKeeper, RefusalKeeper(limiter: services.rateLimits, sleeper: sleeper), timekeeper,
                APIService(server: server, grace: configuration.shutdownGraceSeconds),
            ])
    }

    /// What the HTTP server refuses by itself, as problem+json.
    static func problem(_ refusal: HTTPServerRefusal) -> Problem {
        switch refusal {
        case .bodyTooLarge(let limit):
            Problem(status: 413, detail: "The request body is larger than \(limit) bytes.")
        case .bodyTimeout(let seconds):
            Problem(status: 408, detail: "The request body did not arrive within \(seconds.formatted()) s of its headers.")
        case .bodiesBuffered(let retryAfter):
            Problem(
                status: 503, detail: "The server holds too many request bodies now (for this app or in all); try again shortly.",
                retryAfter: retryAfter)
        case .badRequest(let detail):
            Problem(status: 400, detail: detail)
        }
    }

    /// Bytes of request bodies the API holds now, in all or for one app.
    public func bufferedBodyBytes(appID: String? = nil) -> Int { server.bufferedBodyBytes(budget: appID) }

    /// The port the API listens on (after `start`).
    public var port: Int { server.port }

    /// Starts the services in order, the HTTP API last (once; later calls change
    /// nothing). Answers the bound port.
    @discardableResult
    public func start() throws -> Int {
        guard stopState.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started
        }) else { return server.port }
        try runner.start()
        let port = server.port
        if let generatedAdminToken {
            try AdminToken.save(generatedAdminToken, configuration)
        }
        logger.notice(
            "listening", ("url", .string(url(port: port))),
            ("database", .string(store.location)), ("version", .string(IsletVersion.current)))
        return port
    }

    /// Starts (unless started), waits until `requestShutdown` is called (from a signal handler, say),
    /// then shuts down in order.
    public func run() async throws {
        try start()
        await waitForShutdownRequest()
        await shutdown()
    }

    /// Asks a running `run()` to shut down. Safe to call from any thread, many times.
    public func requestShutdown(reason: String) {
        let waiters = stopState.withLock { state -> [CheckedContinuation<Void, Never>] in
            guard !state.requested else { return [] }
            state.requested = true
            defer { state.waiters = [] }
            return state.waiters
        }
        logger.notice("shutting down", ("reason", .string(reason)))
        for waiter in waiters { waiter.resume() }
    }

    private func waitForShutdownRequest() async {
        await withCheckedContinuation { continuation in
            let already = stopState.withLock { state -> Bool in
                if state.requested { return true }
                state.waiters.append(continuation)
                return false
            }
            if already { continuation.resume() }
        }
    }

    /// Shuts down in order (the runner's, in reverse): stops accepting requests and
    /// lets those in flight finish, lets the pushes in flight get their answers,
    /// closes the APNs connections and the embedded APNs, then closes the store.
    /// Pushes still queued stay queued for the next start.
    public func shutdown() async {
        await runner.stop()
        logger.notice("stopped")
    }

    /// The API's URL on `port`, as a client would write it.
    public func url(port: Int) -> String {
        "http://\(Application.urlHost(configuration.host)):\(port)"
    }

    static func urlHost(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}

/// The API as a service: listening is its preparation (a port in use fails the
/// start); its stop refuses new connections and lets the requests in flight finish,
/// up to `grace` seconds.
private struct APIService: BackgroundService {
    let server: HTTPServer
    let grace: Double

    func prepare() throws { _ = try server.start() }

    func run() async {
        await waitForCancellation()
        await server.shutdown(gracePeriod: .milliseconds(Int(grace * 1000)))
    }
}
