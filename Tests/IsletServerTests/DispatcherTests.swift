import Foundation
import HTTPServer
import IsletCore
import IsletLog
@testable import IsletServer
import IsletService
import IsletSync
import IsletTesting
import Testing

/// The router enforces what each route declares: these call the dispatcher in
/// process (no socket), on an application that was built and never started.
@Suite("Routes declare, the router enforces")
struct DispatcherTests {
    static let adminToken = "islet_admin_dispatcher_tests_0123456789"

    /// An application (never started) and a dispatcher over its routes.
    struct Rig {
        let application: Application
        let routes: [APIRoute]
        let dispatcher: Dispatcher

        func call(_ method: String, _ path: String, key: String? = nil, headers: HTTPHeaders = [:], body: String = "") async -> HTTPResponse {
            var headers = headers
            if let key { headers.set("Authorization", "Bearer \(key)") }
            return await dispatcher.handle(HTTPRequest(method: method, path: path, headers: headers, body: Data(body.utf8)))
        }

        /// A fresh app; answers its id and keys.
        func app() async throws -> (id: String, serverKey: String, deviceKey: String) {
            let created = try await application.services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false))
            return (created.app.id, created.serverKey, created.deviceKey)
        }
    }

    func withRig(middleware extra: [any Middleware] = [], _ body: (Rig) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            var configuration = Configuration()
            configuration.port = 0
            configuration.dataDirectory = dir.path
            configuration.adminToken = Self.adminToken
            let logger = Logger(level: .error, format: .logfmt, sink: MemoryLogSink())
            let application = try buildApplication(configuration, logger: logger)
            let services = application.services
            let routes = APIRoutes.all(services: services, delivery: nil, requestMetrics: nil)
            let router = Dispatcher.router(
                routes: routes, middleware: APIRoutes.middleware(services: services) + extra, logger: logger)
            let rig = Rig(
                application: application, routes: routes,
                dispatcher: Dispatcher(router: router, logger: logger, metrics: nil, random: SeededRandomSource(seed: 7)))
            do {
                try await body(rig)
            } catch {
                await application.shutdown()
                throw error
            }
            await application.shutdown()
        }
    }

    /// The pattern with every `{name}` filled with a value of its format.
    static func path(_ pattern: String, appID: String) -> String {
        pattern.split(separator: "/", omittingEmptySubsequences: false).map { segment -> String in
            switch segment {
            case "{app_id}": appID
            case "{activity_type}": "DeliveryAttributes"
            case let name where name.hasPrefix("{"): "x-1"
            default: String(segment)
            }
        }.joined(separator: "/")
    }

    @Test func everyRouteThatDeclaresAKeyRefusesARequestWithoutOne() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let guarded = rig.routes.filter { $0.access != .open }
            #expect(guarded.count > 15)
            for route in guarded {
                let response = await rig.call(route.method, Self.path(route.pattern, appID: app.id))
                #expect(response.status == 401, "\(route.method) \(route.pattern) answered \(response.status) without a key")
                #expect(response.headers["WWW-Authenticate"] != nil)
            }
        }
    }

    @Test func everyRouteTakesOnlyTheKeyItDeclares() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            for route in rig.routes where route.access != .open {
                let path = Self.path(route.pattern, appID: app.id)
                let wrong: [String] = switch route.access {
                case .admin: [app.serverKey, app.deviceKey]
                case .server: [Self.adminToken, app.deviceKey]
                case .device: [Self.adminToken, app.serverKey]
                case .open: []
                }
                for key in wrong {
                    let response = await rig.call(route.method, path, key: key)
                    #expect(response.status == 403, "\(route.method) \(route.pattern) answered \(response.status) to a key it does not declare")
                }
            }
        }
    }

    @Test func anotherAppsKeyFindsNoSuchApp() async throws {
        try await withRig { rig in
            let mine = try await rig.app()
            let theirs = try await rig.app()
            let response = await rig.call("GET", "/v1/apps/\(theirs.id)/activities", key: mine.serverKey)
            #expect(response.status == 404)
            let allowed = await rig.call("GET", "/v1/apps/\(mine.id)/activities", key: mine.serverKey)
            #expect(allowed.status == 200)
        }
    }

    @Test func openRoutesNeedNoKey() async throws {
        try await withRig { rig in
            for route in rig.routes where route.access == .open {
                let response = await rig.call(route.method, route.pattern)
                #expect(response.status == 200, "\(route.pattern) answered \(response.status)")
            }
        }
    }

    /// A middleware after authentication (where rate limits go) sees the caller the
    /// route let through, and can refuse before the handler runs.
    struct Recorder: Middleware {
        let seen: Lock<[String]>

        func respond(
            to request: RouteRequest, route: APIRoute, next: @Sendable (RouteRequest) async throws -> HTTPResponse
        ) async throws -> HTTPResponse {
            let who: String = switch request.caller {
            case .anyone: "anyone"
            case .admin: "admin"
            case .app(let app): app.id
            }
            seen.withLock { $0.append("\(route.pattern) \(who)") }
            if request.http.headers["X-Refuse"] != nil {
                throw Problem(status: 429, detail: "Slow down.")
            }
            return try await next(request)
        }
    }

    @Test func laterMiddlewareSeesTheAuthenticatedCallerAndCanRefuse() async throws {
        let seen = Lock<[String]>([])
        let appID = Lock<String>("")
        try await withRig(middleware: [Recorder(seen: seen)]) { rig in
            let app = try await rig.app()
            appID.withLock { $0 = app.id }
            _ = await rig.call("GET", "/v1/apps/\(app.id)/activity-types", key: app.serverKey)
            _ = await rig.call("GET", "/v1/apps", key: Self.adminToken)
            _ = await rig.call("GET", "/healthz")
            let unauthenticated = await rig.call("GET", "/v1/apps")
            #expect(unauthenticated.status == 401)
            let refused = await rig.call("GET", "/v1/apps", key: Self.adminToken, headers: ["X-Refuse": "1"])
            #expect(refused.status == 429)
            #expect(refused.headers["Content-Type"] == "application/problem+json")
        }
        // The unauthenticated request never reached it.
        #expect(seen.withLock { $0 } == [
            "/v1/apps/{app_id}/activity-types \(appID.withLock { $0 })", "/v1/apps admin", "/healthz anyone",
            "/v1/apps admin",
        ])
    }

    @Test func everyAnswerCarriesARequestID() async throws {
        try await withRig { rig in
            let given = await rig.call("GET", "/healthz", headers: ["X-Request-Id": "abc-123.def_4"])
            #expect(given.headers["X-Request-Id"] == "abc-123.def_4")
            let minted = await rig.call("GET", "/healthz")
            let id = try #require(minted.headers["X-Request-Id"])
            #expect(id.count == 16 && id.allSatisfy(\.isHexDigit))
            let forged = await rig.call("GET", "/healthz", headers: ["X-Request-Id": "a b\"c=d"])
            #expect(forged.headers["X-Request-Id"] != "a b\"c=d")
            let unmatched = await rig.call("GET", "/nowhere")
            #expect(unmatched.status == 404)
            #expect(unmatched.headers["X-Request-Id"]?.count == 16)
            #expect(minted.headers["X-Request-Id"] != unmatched.headers["X-Request-Id"])
        }
    }

    @Test func domainErrorsBecomeProblemsInOnePlace() {
        let cases: [(ServiceError.Code, Int)] = [
            (.invalid, 422), (.unauthenticated, 401), (.forbidden, 403), (.notFound, 404), (.conflict, 409),
            (.unavailable, 503), (.failed, 500),
        ]
        for (code, status) in cases {
            let response = ErrorRendering.response(
                ServiceError(code, "Because.", fields: [.init(field: "a.b", message: "is wrong")]), route: "GET /x",
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()))
            #expect(response.status == status)
            let json = try? JSONValue(parsing: response.body)
            #expect(json?["detail"]?.stringValue == "Because.")
            #expect(json?["errors"]?.arrayValue?.first?["field"]?.stringValue == "a.b")
        }
    }
}
