import HTTPServer
import Storage

/// Who is calling, as the authentication middleware established it.
enum Caller: Sendable {
    /// Nobody in particular: an open route.
    case anyone
    /// The admin token.
    case admin
    /// One of the app's keys (of the kind the route declares).
    case app(AppRecord)
}

/// What a route handler receives: the request, its path parameters, the caller the
/// route's declared access let through, and the request's id.
struct RouteRequest: Sendable {
    /// The HTTP request.
    let http: HTTPRequest
    /// The values of the pattern's `{name}` segments.
    let parameters: PathParameters
    /// Who is calling.
    var caller: Caller
    /// The request's id (also in the `X-Request-Id` answer header and the log line).
    let requestID: String
    /// The address the request came from (`ClientAddress`): what per-address
    /// limits count.
    var clientAddress: String = "unknown"
    /// The route's declared query parameters, checked, by name.
    var query = QueryValues()
    /// The route's declared body schema.
    var bodySchema: BodySchema?

    /// The body, read by the schema the route declares (`APIRoute.body`): 415,
    /// 400 or 422 as `RequestBody` says. A route that declares no body has none
    /// to read.
    func body() throws(Problem) -> RequestBody {
        guard let bodySchema else { preconditionFailure("a route read a body it does not declare") }
        return try RequestBody(http, schema: bodySchema)
    }

    /// The authenticated app of a route declared `.server` or `.device` (the router
    /// runs no such handler without one).
    var app: AppRecord {
        guard case .app(let app) = caller else {
            preconditionFailure("a server- or device-key route ran without an authenticated app")
        }
        return app
    }
}
