import Foundation
import HTTPServer
import IsletLog

/// Turns a request into a response: finds the route, runs it, answers 404 and 405 in
/// the problem shape, and logs one line per request (with the route's pattern, never
/// the ids in the path).
struct Dispatcher: Sendable {
    let router: Router
    let logger: Logger
    let metrics: RequestMetrics?

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let started = ContinuousClock.now
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
        metrics?.record(method: request.method, route: route, status: response.status)
        let elapsed = ContinuousClock.now - started
        let milliseconds = Double(elapsed.components.seconds) * 1000 + Double(elapsed.components.attoseconds) / 1e15
        let level: LogLevel = response.status >= 500 ? .error : .info
        if logger.isEnabled(level) {
            logger.log(level, "request", [
                ("method", .string(request.method)), ("route", .string(route)),
                ("status", .int(response.status)), ("ms", .double((milliseconds * 1000).rounded() / 1000)),
            ])
        }
        return response
    }
}
