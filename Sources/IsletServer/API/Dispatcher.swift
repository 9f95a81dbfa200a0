import Foundation
import HTTPServer
import IsletCore
import IsletLog
import IsletSync

/// Turns a request into a response. Around everything: the request's id (the
/// client's `X-Request-Id` when it is a plain token, else a fresh one; echoed in
/// the answer), one log line per request (with the route's pattern, never the ids
/// in the path) and the request counters. Then the route: 404 and 405 in the
/// problem shape, or the route's middleware chain and handler, whose errors are
/// rendered in one place.
struct Dispatcher: Sendable {
    static let requestIDHeader = "X-Request-Id"

    let router: Router
    let logger: Logger
    let metrics: RequestMetrics?
    /// The routes (`METHOD pattern`) that declare a large body.
    let largeBodyRoutes: Set<String>
    /// The methods of those routes: a request of another method is not matched for it.
    private let largeBodyMethods: Set<Substring>
    /// Draws request ids.
    private let random: Lock<any RandomSource>

    init(
        router: Router, logger: Logger, metrics: RequestMetrics?, largeBodyRoutes: Set<String> = [],
        random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max))
    ) {
        self.router = router
        self.largeBodyRoutes = largeBodyRoutes
        largeBodyMethods = Set(largeBodyRoutes.map { $0.prefix { $0 != " " } })
        self.logger = logger
        self.metrics = metrics
        self.random = Lock(random)
    }

    /// A router serving `routes`, each behind `middleware`.
    static func router(routes: [APIRoute], middleware: [any Middleware], logger: Logger) -> Router {
        var router = Router()
        for route in routes {
            let chain = MiddlewareChain.compose(middleware, route: route)
            let name = "\(route.method) \(route.pattern)"
            router.add(route.method, route.pattern) { request, parameters in
                let routeRequest = RouteRequest(
                    http: request, parameters: parameters, caller: .anyone,
                    requestID: request.headers[requestIDHeader] ?? "")
                do {
                    return try await chain(routeRequest)
                } catch {
                    return ErrorRendering.response(error, route: name, logger: logger)
                }
            }
        }
        return router
    }

    /// The routes of `routes` that declare a large body, as `largeBodyRoutes` holds them.
    static func largeBodyRoutes(_ routes: [APIRoute]) -> Set<String> {
        Set(routes.filter(\.largeBody).map { "\($0.method) \($0.pattern)" })
    }

    /// Whether the route a request reaches declares a large body: asked before the
    /// body is read, so that the server knows how much of it to take.
    func takesLargeBody(method: String, path: String) -> Bool {
        // Most requests are of a method no large-body route has (a GET, say): no match.
        guard largeBodyMethods.contains(Substring(method)),
            case .found(_, _, let pattern) = router.match(method: method, path: path)
        else {
            return false
        }
        return largeBodyRoutes.contains("\(method) \(pattern)")
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
        var request = request
        let requestID = Self.acceptable(request.headers[Self.requestIDHeader]) ?? mintRequestID()
        request.headers.set(Self.requestIDHeader, requestID)
        var response: HTTPResponse
        let route: String
        switch router.match(method: request.method, path: request.path) {
        case .found(let handler, let parameters, let pattern):
            route = pattern
            response = await handler(request, parameters)
        case .methodNotAllowed(let allowed, let pattern):
            route = pattern
            response = Problem(status: 405, detail: "\(request.method) is not allowed on \(request.path); use \(allowed.joined(separator: ", ")).").response
            response.headers.set("Allow", allowed.joined(separator: ", "))
        case .notFound:
            route = "unmatched"
            response = Problem(status: 404, detail: "There is no route \(request.path).").response
        }
        response.headers.set(Self.requestIDHeader, requestID)
        metrics?.record(method: request.method, route: route, status: response.status)
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let level: LogLevel = response.status >= 500 ? .error : .info
        if logger.isEnabled(level) {
            logger.log(level, "request", [
                ("method", .string(request.method)), ("route", .string(route)),
                ("status", .int(response.status)), ("ms", .double((milliseconds * 1000).rounded() / 1000)),
                ("request_id", .string(requestID)),
            ])
        }
        return response
    }

    /// A client's request id, when it is 1 to 128 letters, digits, `.`, `_` or `-`
    /// (anything else could forge log fields or headers).
    static func acceptable(_ id: String?) -> String? {
        guard let id, (1...128).contains(id.utf8.count) else { return nil }
        let allowed = id.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == 0x2E || byte == 0x5F || byte == 0x2D
        }
        return allowed ? id : nil
    }

    /// 16 hex digits.
    private func mintRequestID() -> String {
        let value = random.withLock { $0.next() }
        let hex = String(value, radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
