import IsletSync
public import APNs
public import APNsSimulator
public import Delivery
import Foundation
import HTTPServer
public import IsletCore
import IsletCrypto
public import IsletLog
import SQLiteStorage
public import Storage

/// A running Islet: its store, its delivery worker and APNs client, its HTTP API,
/// the embedded simulator when asked for, and its shutdown sequence. Built by
/// `buildApplication`, which `islet serve` and the tests both use.
public final class Application: Sendable {
    /// The configuration it was built from.
    public let configuration: Configuration
    /// The root logger.
    public let logger: Logger
    /// The registry and queue.
    public let store: any Store
    /// The worker sending queued pushes.
    public let delivery: DeliveryWorker
    /// The APNs client the worker sends with.
    public let client: APNsClient
    /// The in-process simulator (`--simulator`), already listening.
    public let simulator: APNsSimulator?
    /// The admin token, when this start generated it: written into the data folder
    /// by `start` once the API listens (a start that fails leaves no token behind,
    /// so the next one generates and shows its own), to be shown once.
    public let generatedAdminToken: String?
    /// The demo app of `--simulator`, with fresh keys.
    public let demo: DemoApp?
    let server: HTTPServer
    let scheduledEnds: ScheduledEnds
    private let stopState = Lock(StopState())

    private struct StopState {
        var started = false
        var requested = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(
        configuration: Configuration, logger: Logger, store: any Store, delivery: DeliveryWorker, client: APNsClient,
        simulator: APNsSimulator?, generatedAdminToken: String?, demo: DemoApp?, router: Router, metrics: RequestMetrics,
        scheduledEnds: ScheduledEnds
    ) {
        self.scheduledEnds = scheduledEnds
        self.configuration = configuration
        self.logger = logger
        self.store = store
        self.delivery = delivery
        self.client = client
        self.simulator = simulator
        self.generatedAdminToken = generatedAdminToken
        self.demo = demo
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodyBytes = configuration.maxBodyBytes
        http.threads = configuration.httpThreads
        let dispatcher = Dispatcher(router: router, logger: logger, metrics: metrics)
        self.server = HTTPServer(
            configuration: http,
            bodyTooLarge: { limit in
                Problem(status: 413, detail: "The request body is larger than \(limit) bytes.").response
            },
            handler: { request in await dispatcher.handle(request) })
    }

    /// The port the API listens on (after `start`).
    public var port: Int { server.port }

    /// Starts the delivery worker and the HTTP API (once; later calls change
    /// nothing). Answers the bound port.
    @discardableResult
    public func start() throws -> Int {
        guard stopState.withLock({ state -> Bool in
            defer { state.started = true }
            return !state.started
        }) else { return server.port }
        try delivery.start()
        scheduledEnds.start()
        let port = try server.start()
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

    /// Shuts down in order: stops accepting requests and lets those in flight finish,
    /// lets the pushes in flight get their answers, closes the APNs connections and
    /// the simulator, then closes the store. Pushes still queued stay queued for the
    /// next start.
    public func shutdown() async {
        let grace = configuration.shutdownGraceSeconds
        await server.shutdown(gracePeriod: .milliseconds(Int(grace * 1000)))
        await scheduledEnds.stop()
        await delivery.shutdown(grace: grace)
        await client.shutdown()
        await simulator?.shutdown()
        store.close()
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

/// The demo app `--simulator` creates on first start: its id and keys (fresh on
/// every start, since only their hashes are stored), for the walk-through.
public struct DemoApp: Sendable {
    /// The app id.
    public let appID: String
    /// Its bundle id.
    public let bundleID: String
    /// The server key.
    public let serverKey: String
    /// The device key.
    public let deviceKey: String
    /// Whether this start created it.
    public let created: Bool
}

/// Builds the application described by `configuration`: prepares the data folder,
/// opens and migrates the database, reads the admin token, starts the embedded
/// simulator when asked for, and wires the routes. The API does not listen and no
/// push is sent until `start` or `run`.
public func buildApplication(
    _ configuration: Configuration,
    logger: Logger? = nil,
    clock: any WallClock = SystemWallClock()
) throws(ConfigurationError) -> Application {
    let logger = logger ?? Logger(level: configuration.logLevel, format: configuration.logFormat, clock: clock)
    let created = try configuration.prepareFilesystem()
    let store: any Store
    do {
        store = try SQLiteStore(path: configuration.resolvedDatabasePath)
    } catch {
        // Nothing of a start that failed stays behind: the folders it made go again.
        Configuration.removeFolders(created)
        let reason = (error as? StoreError)?.message ?? "\(error)"
        throw ConfigurationError(.unusable, setting: "--database (ISLET_DATABASE)", message: "\(configuration.resolvedDatabasePath): \(reason)")
    }
    do throws(ConfigurationError) {
        return try assemble(configuration, logger: logger, clock: clock, store: store)
    } catch {
        store.close()
        throw error
    }
}

/// The rest of `buildApplication`, once the store is open.
private func assemble(
    _ configuration: Configuration, logger: Logger, clock: any WallClock, store: any Store
) throws(ConfigurationError) -> Application {
    let (adminToken, generated) = try AdminToken.load(configuration)

    var simulator: APNsSimulator?
    var clientConfiguration = APNsClientConfiguration()
    if configuration.simulator {
        var options = APNsSimulatorOptions()
        options.host = "127.0.0.1"
        options.port = configuration.simulatorPort
        options.inspectPort = configuration.simulatorInspectPort
        do {
            let embedded = try APNsSimulator(options: options, clock: clock)
            let ports = try embedded.start()
            simulator = embedded
            clientConfiguration.productionURL = URL(string: "https://127.0.0.1:\(ports.apns)")!
            clientConfiguration.sandboxURL = clientConfiguration.productionURL
            clientConfiguration.trustRootsPEM = embedded.caCertificatePEM
            logger.notice(
                "APNs simulator running in-process", ("apns", .string("https://127.0.0.1:\(ports.apns)")),
                ("inspect", .string(ports.inspect.map { "http://127.0.0.1:\($0)" } ?? "none")))
        } catch {
            throw ConfigurationError(.unusable, setting: "--simulator (ISLET_SIMULATOR)", message: "cannot start the simulator: \(error)")
        }
    } else {
        clientConfiguration.productionURL = URL(string: configuration.apnsProductionURL)!
        clientConfiguration.sandboxURL = URL(string: configuration.apnsSandboxURL)!
        if let caFile = configuration.apnsCAFile {
            guard let pem = FileManager.default.contents(atPath: caFile), !pem.isEmpty else {
                throw ConfigurationError(.unusable, setting: "--apns-ca-file (ISLET_APNS_CA_FILE)", message: "cannot read \(caFile)")
            }
            clientConfiguration.trustRootsPEM = String(decoding: pem, as: UTF8.self)
        }
    }
    let client = APNsClient(configuration: clientConfiguration, clock: clock)
    var deliveryConfiguration = DeliveryConfiguration()
    deliveryConfiguration.lifecycle = configuration.lifecycleWindows
    deliveryConfiguration.maxInFlight = configuration.deliveryMaxInFlight
    let delivery = DeliveryWorker(store: store, client: client, configuration: deliveryConfiguration, clock: clock, logger: logger)

    let trust: @Sendable (APNsCredentials) -> Void = { [simulator] credentials in
        guard let simulator, let key = try? P256.SigningKey(pemRepresentation: credentials.privateKeyPEM) else { return }
        simulator.engine.trust(TrustedKey(keyID: credentials.keyID, teamID: credentials.teamID, publicKey: key.publicKey))
    }
    var demo: DemoApp?
    if simulator != nil {
        do {
            for app in try store.readNow({ try $0.apps() }) {
                if let credentials = app.credentials { trust(credentials) }
            }
            demo = try DemoApp.prepare(store: store, clock: clock)
            if let credentials = try store.readNow({ try $0.app(id: demo!.appID) })?.credentials { trust(credentials) }
        } catch {
            throw ConfigurationError(.unusable, setting: "--simulator (ISLET_SIMULATOR)", message: "cannot prepare the demo app: \(error)")
        }
    }

    let requestMetrics = RequestMetrics()
    let context = ServerContext(
        store: store, delivery: delivery, clock: clock, lifecycle: ActivityLifecycle(windows: configuration.lifecycleWindows),
        logger: logger, adminTokenHash: Digest.sha256(Data(adminToken.utf8)), idempotencyWindow: deliveryConfiguration.idempotencyRetention,
        credentialsChanged: trust, requestMetrics: requestMetrics)
    let routes = APIRoutes.all(context: context)
    var router = Router()
    for route in routes {
        router.add(route.method, route.pattern, route.routerHandler(logger: logger))
    }
    return Application(
        configuration: configuration, logger: logger, store: store, delivery: delivery, client: client,
        simulator: simulator, generatedAdminToken: generated ? adminToken : nil, demo: demo, router: router,
        metrics: requestMetrics, scheduledEnds: ScheduledEnds(context: context))
}

/// Every route of the API, in the order the OpenAPI document lists them.
enum APIRoutes {
    static func all(context: ServerContext) -> [APIRoute] {
        let document = Lock<JSONValue>(.null)
        let system = SystemRoutes(
            store: context.store, delivery: context.delivery, requestMetrics: context.requestMetrics,
            document: { document.withLock { $0 } })
        let routes = system.routes + AppRoutes(context: context).routes + DeviceRoutes(context: context).routes
            + ActivityTypeRoutes(context: context).routes + ActivityRoutes(context: context).routes
            + NotificationRoutes(context: context).routes
        document.withLock { $0 = OpenAPIDocument.make(routes: routes) }
        return routes
    }
}

/// The admin token: configured, or generated once into the data folder.
enum AdminToken {
    /// The configured token, the one kept in the data folder, or a new one
    /// (`generated`), which `save` writes once the server has started with it.
    static func load(_ configuration: Configuration) throws(ConfigurationError) -> (token: String, generated: Bool) {
        if let token = configuration.adminToken { return (token, false) }
        let path = configuration.adminTokenPath
        if let data = FileManager.default.contents(atPath: path) {
            let token = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard token.count >= 16 else {
                throw ConfigurationError(.unusable, setting: "--admin-token (ISLET_ADMIN_TOKEN)", message: "\(path) holds no usable token; delete it to have one generated")
            }
            return (token, false)
        }
        do {
            return ("islet_admin_" + Base64URL.encode(try SecureRandom.bytes(32)), true)
        } catch {
            throw ConfigurationError(.unusable, setting: "--admin-token (ISLET_ADMIN_TOKEN)", message: "cannot generate a token: \(error)")
        }
    }

    /// Writes a generated token into the data folder (mode 0600), never over a
    /// file that is already there.
    static func save(_ token: String, _ configuration: Configuration) throws(ConfigurationError) {
        let path = configuration.adminTokenPath
        let fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else {
            throw ConfigurationError(
                .unusable, setting: "--admin-token (ISLET_ADMIN_TOKEN)", message: "cannot write \(path): \(String(cString: strerror(errno)))")
        }
        defer { close(fd) }
        let bytes = Array((token + "\n").utf8)
        let written = bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) }
        guard written == bytes.count, fsync(fd) == 0 else {
            unlink(path)
            throw ConfigurationError(.unusable, setting: "--admin-token (ISLET_ADMIN_TOKEN)", message: "cannot write \(path)")
        }
    }
}

extension DemoApp {
    static let bundleID = "dev.islet.demo"

    /// Creates the demo app, or gives the existing one fresh keys.
    static func prepare(store: any Store, clock: any WallClock) throws -> DemoApp {
        let serverKey = try AppKeys.generate(.server)
        let deviceKey = try AppKeys.generate(.device)
        let now = clock.now()
        let existing = try store.readNow { try $0.apps() }.first { $0.bundleID == bundleID && $0.name == "Demo" }
        if var app = existing {
            app.serverKeyHash = Authentication.hash(serverKey)
            app.deviceKeyHash = Authentication.hash(deviceKey)
            app.updatedAt = max(now, app.updatedAt.addingTimeInterval(0.001))
            let rotated = app
            try store.writeNow { try $0.updateApp(rotated) }
            return DemoApp(appID: app.id, bundleID: bundleID, serverKey: serverKey, deviceKey: deviceKey, created: false)
        }
        let signingKey = try P256.SigningKey.generate()
        let app = AppRecord(
            id: try AppKeys.appID(), name: "Demo", bundleID: bundleID,
            credentials: APNsCredentials(teamID: "DEMOTEAM01", keyID: "DEMOKEY001", privateKeyPEM: signingKey.pemRepresentation),
            serverKeyHash: Authentication.hash(serverKey), deviceKeyHash: Authentication.hash(deviceKey),
            createdAt: now, updatedAt: now)
        try store.writeNow { try $0.insertApp(app) }
        return DemoApp(appID: app.id, bundleID: bundleID, serverKey: serverKey, deviceKey: deviceKey, created: true)
    }
}
