import HTTPServer
public import IsletCore
public import IsletLog
import Foundation
import Storage
import Synchronization

/// A running Islet: its store, its HTTP API and its shutdown sequence. Built by
/// `buildApplication`, which `islet serve` and the tests both use.
public final class Application: Sendable {
    /// The configuration it was built from.
    public let configuration: Configuration
    /// The root logger.
    public let logger: Logger
    let database: SQLiteDatabase
    let server: HTTPServer
    private let stopState = Mutex(StopState())

    private struct StopState {
        var requested = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    init(configuration: Configuration, logger: Logger, database: SQLiteDatabase, router: Router) {
        self.configuration = configuration
        self.logger = logger
        self.database = database
        var http = HTTPServerConfiguration()
        http.host = configuration.host
        http.port = configuration.port
        http.maxBodyBytes = configuration.maxBodyBytes
        http.threads = configuration.httpThreads
        let dispatcher = Dispatcher(router: router, logger: logger)
        self.server = HTTPServer(
            configuration: http,
            bodyTooLarge: { limit in
                Problem(status: 413, detail: "The request body is larger than \(limit) bytes.").response
            },
            handler: { request in await dispatcher.handle(request) })
    }

    /// The port the API listens on (after `start`).
    public var port: Int { server.port }

    /// Starts serving HTTP. Answers the bound port.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        logger.notice(
            "listening", ("url", .string("http://\(Application.urlHost(configuration.host)):\(port)")),
            ("database", .string(database.path)), ("version", .string(IsletVersion.current)))
        return port
    }

    /// Starts, waits until `requestShutdown` is called (from a signal handler, say),
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

    /// Stops accepting requests, lets those in flight finish (within the grace
    /// period), then closes the store.
    public func shutdown() async {
        await server.shutdown(gracePeriod: .milliseconds(Int(configuration.shutdownGraceSeconds * 1000)))
        database.close()
        logger.notice("stopped")
    }

    static func urlHost(_ host: String) -> String {
        host.contains(":") ? "[\(host)]" : host
    }
}

/// Builds the application described by `configuration`: prepares the data folder,
/// opens and migrates the database, and wires the routes. Nothing listens until
/// `start` or `run`.
public func buildApplication(
    _ configuration: Configuration,
    logger: Logger? = nil,
    clock: any WallClock = SystemWallClock()
) throws(ConfigurationError) -> Application {
    let logger = logger ?? Logger(level: configuration.logLevel, format: configuration.logFormat, clock: clock)
    try configuration.prepareFilesystem()
    let database: SQLiteDatabase
    do {
        database = try SQLiteDatabase(path: configuration.resolvedDatabasePath, migrations: IsletSchema.migrations)
    } catch let error as SQLiteError {
        throw ConfigurationError(.unusable, setting: "--database (ISLET_DATABASE)", message: "\(configuration.resolvedDatabasePath): \(error.message)")
    } catch {
        throw ConfigurationError(.unusable, setting: "--database (ISLET_DATABASE)", message: "\(configuration.resolvedDatabasePath): \(error)")
    }
    var router = Router()
    SystemRoutes(database: database).register(in: &router)
    return Application(configuration: configuration, logger: logger, database: database, router: router)
}
