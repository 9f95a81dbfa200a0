#if DEBUG
import IsletSync
import Foundation
import HTTPServer
import IsletCore
import IsletCrypto
import IsletLog
@testable import IsletServer

/// Request bodies through the API's own routes, as the HTTP server hands them over:
/// the strict body reader and every route's reading of its fields (activity start,
/// update and end, devices and their tokens, apps and their credentials, activity
/// types and their schemas, notifications). The first byte picks the route; the
/// rest is the body. No answer may be a 500, whatever the body.
///
/// The app the routes act on has no APNs credentials, so that a start, an update or
/// a notification stops after reading its body, before anything is queued; a second
/// app takes the PATCHes, which may give it credentials.
public enum RequestBodyFuzz {
    static let adminToken = "fuzz-admin-token-0123456789"

    /// Keeps the last error line, to explain a 500.
    final class LastErrorSink: LogSink {
        let last = Lock<String?>(nil)
        func write(line: String) { last.withLock { $0 = line } }
    }

    private struct Setup: @unchecked Sendable {
        let dispatcher: Dispatcher
        let sink: LastErrorSink
        let appID: String
        let serverKey: String
        let deviceKey: String
        let patchedAppID: String
        let application: Application
    }

    /// The data folder, removed when the process exits.
    private static let directory = FileManager.default.temporaryDirectory.appendingPathComponent("islet-fuzz-\(getpid())")

    private static let setup: Setup = {
        try? FileManager.default.removeItem(at: directory)
        try! FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(at: RequestBodyFuzz.directory) }
        var configuration = Configuration()
        configuration.port = 0
        configuration.dataDirectory = directory.path
        configuration.adminToken = adminToken
        configuration.apnsSandboxURL = "https://127.0.0.1:9"
        configuration.apnsProductionURL = "https://127.0.0.1:9"
        let sink = LastErrorSink()
        let clock = ManualWallClock()
        let logger = Logger(level: .error, format: .logfmt, sink: sink, clock: clock)
        // Built and never started: no listener, no delivery; the routes run in process.
        let application = try! buildApplication(configuration, logger: logger, clock: clock)
        // The application's own services and routes, with a dispatcher of the fuzzer's.
        let services = application.services
        let router = Dispatcher.router(
            routes: APIRoutes.all(services: services, delivery: application.delivery, requestMetrics: nil),
            middleware: APIRoutes.middleware(services: services), logger: logger)
        let dispatcher = Dispatcher(router: router, logger: logger, metrics: nil)
        func call(_ method: String, _ path: String, key: String, _ body: String) -> (Int, JSONValue) {
            let response = wait {
                await dispatcher.handle(HTTPRequest(
                    method: method, path: path, headers: ["Authorization": "Bearer \(key)"], body: Data(body.utf8)))
            }
            return (response.status, (try? JSONValue(parsing: response.body)) ?? .null)
        }
        let (status, app) = call("POST", "/v1/apps", key: adminToken, #"{"name":"Fuzz","bundle_id":"com.example.fuzz"}"#)
        precondition(status == 201, "cannot create the fuzz app: \(status) \(app)")
        let (_, patched) = call("POST", "/v1/apps", key: adminToken, #"{"name":"Patched","bundle_id":"com.example.patched"}"#)
        let appID = app["id"]!.stringValue!
        let deviceKey = app["device_key"]!.stringValue!
        // A device with a push-to-start token and an activity of its own, so that
        // the routes that need them get past their lookups.
        _ = call("PUT", "/v1/apps/\(appID)/devices/phone-1", key: deviceKey, #"{"platform":"ios","environment":"sandbox"}"#)
        _ = call(
            "PUT", "/v1/apps/\(appID)/devices/phone-1/push-to-start/DeliveryAttributes", key: deviceKey,
            #"{"token":"\#(String(repeating: "ab", count: 32))"}"#)
        _ = call(
            "PUT", "/v1/apps/\(appID)/devices/phone-1/activities/order-1", key: deviceKey,
            #"{"activity_type":"DeliveryAttributes","token":"\#(String(repeating: "cd", count: 32))"}"#)
        return Setup(
            dispatcher: dispatcher, sink: sink, appID: appID, serverKey: app["server_key"]!.stringValue!,
            deviceKey: deviceKey, patchedAppID: patched["id"]!.stringValue!, application: application)
    }()

    /// The routes that read a body: method, path, and whose key calls it.
    private enum Caller { case admin, server, device }
    private static func routes(_ setup: Setup) -> [(String, String, Caller)] {
        let app = "/v1/apps/\(setup.appID)"
        return [
            ("POST", "\(app)/activities", .server),
            ("POST", "\(app)/activities/order-1/update", .server),
            ("POST", "\(app)/activities/order-1/end", .server),
            ("POST", "\(app)/notifications", .server),
            ("PUT", "\(app)/activity-types/FuzzAttributes", .server),
            ("PUT", "\(app)/devices/phone-2", .device),
            ("PUT", "\(app)/devices/phone-1/push-to-start/DeliveryAttributes", .device),
            ("PUT", "\(app)/devices/phone-1/activities/order-2", .device),
            ("POST", "\(app)/devices/phone-1/activities/order-3/end", .device),
            ("POST", "/v1/apps", .admin),
            ("PATCH", "/v1/apps/\(setup.patchedAppID)", .admin),
        ]
    }

    public static func run(_ bytes: UnsafeRawBufferPointer) {
        guard let selector = bytes.first else { return }
        let setup = self.setup
        let routes = self.routes(setup)
        let (method, path, caller) = routes[Int(selector) % routes.count]
        let key = switch caller {
        case .admin: adminToken
        case .server: setup.serverKey
        case .device: setup.deviceKey
        }
        let request = HTTPRequest(
            method: method, path: path, headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"],
            body: Data(bytes.dropFirst()))
        let dispatcher = setup.dispatcher
        let response = wait { await dispatcher.handle(request) }
        if fuzzVerbose { print(method, path, response.status, String(decoding: response.body.prefix(300), as: UTF8.self)) }
        guard response.status < 500 else {
            fatalError("\(method) \(path) answered \(response.status): \(setup.sink.last.withLock { $0 ?? "" })")
        }
        guard (try? JSONValue(parsing: response.body)) != nil || response.body.isEmpty else {
            fatalError("\(method) \(path) answered a body that is not JSON")
        }
    }

    /// Runs `body` to its end from a thread that is not the concurrency pool's.
    static func wait<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let result = Lock<T?>(nil)
        let semaphore = DispatchSemaphore(value: 0)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            semaphore.signal()
        }
        semaphore.wait()
        return result.withLock { $0! }
    }
}
#else
/// Needs the debug build's testable modules.
public enum RequestBodyFuzz {
    public static func run(_ bytes: UnsafeRawBufferPointer) {}
}
#endif
