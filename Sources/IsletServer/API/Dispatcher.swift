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
    /// Whether the client address logged is the proxy's word (`ClientAddress`).
    let trustForwardedFor: Bool
    /// Who may call each route (`METHOD pattern`), and the check of a request's
    /// head against it: what `admission` decides by.
    private let access: [String: RouteAccess]
    private let authentication: AuthenticationMiddleware?
    /// The clock a request's time is measured on.
    private let clock: any Clock<Duration>

    init(
        router: Router, logger: Logger, metrics: RequestMetrics?, largeBodyRoutes: Set<String> = [],
        trustForwardedFor: Bool = false, routes: [APIRoute] = [], authentication: AuthenticationMiddleware? = nil,
        random: any RandomSource = SeededRandomSource(seed: .random(in: .min ... .max)),
        clock: any Clock<Duration> = ContinuousClock()
    ) {
        self.router = router
        self.clock = clock
        self.trustForwardedFor = trustForwardedFor
        self.access = Dictionary(routes.map { ("\($0.method) \($0.pattern)", $0.access) }, uniquingKeysWith: { first, _ in first })
        self.authentication = authentication
        self.largeBodyRoutes = largeBodyRoutes
        largeBodyMethods = Set(largeBodyRoutes.map { $0.prefix { $0 != " " } })
        self.logger = logger
        self.metrics = metrics
        self.random = Lock(random)
    }

    /// A router serving `routes`, each behind `middleware`; a request's client
    /// address is read as `ClientAddress` says (`trustForwardedFor`).
    static func router(
        routes: [APIRoute], middleware: [any Middleware], logger: Logger, trustForwardedFor: Bool = false
    ) -> Router {
        var router = Router()
        for route in routes {
            let chain = MiddlewareChain.compose(middleware, route: route)
            let name = "\(route.method) \(route.pattern)"
            router.add(route.method, route.pattern) { request, parameters in
                let routeRequest = RouteRequest(
                    http: request, parameters: parameters, caller: .anyone,
                    requestID: request.headers[requestIDHeader] ?? "",
                    clientAddress: ClientAddress.of(request, trustForwardedFor: trustForwardedFor))
                var response: HTTPResponse
                do {
                    response = try await chain(routeRequest)
                } catch {
                    response = ErrorRendering.response(error, route: name, logger: logger)
                }
                if route.carriesSecret { response.headers.set("Cache-Control", "no-store") }
                return response
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
        let elapsed = clock.stopwatch()
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
            response = Self.methodNotAllowed(request, allowed: allowed)
        case .notFound:
            route = RequestMetrics.unmatchedRoute
            response = Self.notFound(request)
        }
        return finish(request, route: route, response: response, requestID: requestID, elapsed: elapsed)
    }

    /// Whether the body of a request is read, decided from its head: a request
    /// that would be refused (no such route, no key or a wrong one, another app's
    /// key, a session that is not one) is answered now, without its body, and
    /// logged and counted like any other. One that passes counts its body against
    /// its app's buffered bytes.
    func admission(_ head: HTTPRequestHead) -> HTTPAdmission {
        let elapsed = clock.stopwatch()
        var headRequest = HTTPRequest(method: head.method, path: head.path, headers: head.headers, remoteHost: head.remoteHost)
        let requestID = Self.acceptable(headRequest.headers[Self.requestIDHeader]) ?? mintRequestID()
        headRequest.headers.set(Self.requestIDHeader, requestID)
        let request = headRequest
        let pattern: String
        let appID: String
        switch router.match(method: head.method, path: head.path) {
        case .found(_, let parameters, let found):
            pattern = found
            appID = parameters["app_id"] ?? ""
        case .methodNotAllowed(let allowed, let found):
            return .refuse(finish(
                request, route: found, response: Self.methodNotAllowed(request, allowed: allowed), requestID: requestID,
                elapsed: elapsed))
        case .notFound:
            return .refuse(finish(
                request, route: RequestMetrics.unmatchedRoute, response: Self.notFound(request), requestID: requestID,
                elapsed: elapsed))
        }
        // HEAD is answered by the GET route, and checked as it is.
        let declared = access["\(head.method) \(pattern)"] ?? (head.method == "HEAD" ? access["GET \(pattern)"] : nil)
        guard let authentication, let access = declared else { return .admit(budget: Self.anonymousBudget) }
        let client = ClientAddress.of(request, trustForwardedFor: trustForwardedFor)
        let answer: @Sendable (AuthenticationMiddleware.HeadCheck) -> HTTPAdmission? = { check in
            switch check {
            case .pass(let appID):
                // An app's backend and its devices (whose key is public) each have
                // a share of their own; requests no key vouches for share one.
                guard let appID else { return .admit(budget: access == .open ? Self.anonymousBudget : nil) }
                return .admit(budget: access == .device ? "\(appID)/device" : appID)
            case .fail(let error):
                let response = ErrorRendering.response(error, route: pattern, logger: logger)
                return .refuse(finish(request, route: pattern, response: response, requestID: requestID, elapsed: elapsed))
            case .wait: return nil
            }
        }
        let check = authentication.admit(request, access: access, appID: appID, clientAddress: client)
        if let decided = answer(check) { return decided }
        guard case .wait(let decide) = check else { return .admit(budget: nil) }
        return .check {
            var check = await decide()
            while case .wait(let next) = check { check = await next() }
            return answer(check) ?? .admit(budget: nil)
        }
    }

    /// The budget of the bodies of requests that no key vouches for (the open
    /// routes, a sign-in): however many, they hold no more than one app may.
    static let anonymousBudget = "anonymous"

    private static func methodNotAllowed(_ request: HTTPRequest, allowed: [String]) -> HTTPResponse {
        var response = Problem(
            status: 405, detail: "\(request.method.prefix(64)) is not allowed on \(request.path); use \(allowed.joined(separator: ", ")).").response
        response.headers.set("Allow", allowed.joined(separator: ", "))
        return response
    }

    private static func notFound(_ request: HTTPRequest) -> HTTPResponse {
        Problem(status: 404, detail: "There is no route \(request.path).").response
    }

    /// Stamps the request id on `response`, counts it and logs it.
    private func finish(
        _ request: HTTPRequest, route: String, response: HTTPResponse, requestID: String, elapsed: () -> Duration
    ) -> HTTPResponse {
        var response = response
        response.headers.set(Self.requestIDHeader, requestID)
        metrics?.record(method: request.method, route: route, status: response.status)
        let took = elapsed()
        let milliseconds = Double(took.components.seconds) * 1000 + Double(took.components.attoseconds) / 1e15
        let level: LogLevel = response.status >= 500 ? .error : .info
        if logger.isEnabled(level) {
            logger.log(level, "request", [
                ("method", .string(RequestMetrics.methodLabel(request.method))), ("route", .string(route)),
                ("status", .int(response.status)), ("ms", .double((milliseconds * 1000).rounded() / 1000)),
                ("request_id", .string(requestID)),
                ("client", .string(ClientAddress.of(request, trustForwardedFor: trustForwardedFor))),
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
