import HTTPServer

/// One step around every route handler: it sees the request (and the route's
/// declaration) before the handler, may refuse it by throwing, may change what the
/// handler receives, and sees the answer. The router runs the chain in order:
/// authentication first; rate limits and a dashboard session take their places
/// after it.
protocol Middleware: Sendable {
    /// Answers `request` for `route`, usually by calling `next`.
    func respond(
        to request: RouteRequest, route: APIRoute,
        next: @Sendable (RouteRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse
}

/// The middleware chain and the handler, as one function.
enum MiddlewareChain {
    /// `route`'s handler behind `middleware` (the first runs first).
    static func compose(
        _ middleware: [any Middleware], route: APIRoute
    ) -> @Sendable (RouteRequest) async throws -> HTTPResponse {
        // Innermost, after every middleware step: the route's declarations read the
        // request, so that the handler finds the checked query and the body schema.
        // The path's ids come before the query (a bad one is answered alone, as the
        // handler answers it); what the route checks beside the query is answered
        // with it.
        var next: @Sendable (RouteRequest) async throws -> HTTPResponse = { request in
            var request = request
            if !route.query.isEmpty {
                try PathValues.check(request.parameters, pattern: route.pattern)
                request.query = try QueryValues(
                    request.http, declared: route.query, alsoFaults: route.alsoChecks?(request.http) ?? [])
            }
            request.bodySchema = route.body
            return try await route.handler(request)
        }
        for step in middleware.reversed() {
            let inner = next
            next = { request in try await step.respond(to: request, route: route, next: inner) }
        }
        return next
    }
}
