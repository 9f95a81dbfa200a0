import Foundation
import HTTPServer
import IsletService

/// Enforces each route's declared access before its handler runs: `.open` lets
/// anyone through; `.admin` takes only the admin token; `.server` and `.device` take
/// that key of the app named by the path's `app_id`, and hand the handler the app.
///
/// A request without `Authorization` that carries a dashboard session cookie is
/// authenticated by its session instead (the session service's rules): an admin
/// session may call the admin routes and every app's server routes, an app session
/// only its own app's server routes, and no session the device routes. Every change
/// made with a session (any method but `GET` and `HEAD`) must carry the session's
/// `X-CSRF-Token`.
struct AuthenticationMiddleware: Middleware {
    let apps: AppService
    let sessions: SessionService

    func respond(
        to request: RouteRequest, route: APIRoute, next: @Sendable (RouteRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        var request = request
        if route.access != .open, route.access != .device, request.http.headers["Authorization"] == nil,
            let token = DashboardCookie.token(request.http)
        {
            request.caller = try await sessionCaller(token: token, request: request, route: route)
            return try await next(request)
        }
        switch route.access {
        case .open:
            request.caller = .anyone
        case .admin:
            try await apps.requireAdmin(key: try Self.bearer(request.http))
            request.caller = .admin
        case .server, .device:
            let app = try await apps.requireApp(
                key: try Self.bearer(request.http), appID: request.parameters["app_id"] ?? "",
                kind: route.access == .server ? .server : .device)
            request.caller = .app(app)
        }
        return try await next(request)
    }

    /// The caller a dashboard session stands for on `route`, after its CSRF check.
    private func sessionCaller(token: String, request: RouteRequest, route: APIRoute) async throws -> Caller {
        let session = try await sessions.session(token: token)
        try sessions.requireCSRF(
            session, method: request.http.method, token: request.http.headers[SessionService.csrfHeader])
        let access: SessionAccess = route.access == .admin ? .admin : .server(appID: request.parameters["app_id"] ?? "")
        switch try await sessions.authorize(session, for: access) {
        case .admin: return .admin
        case .app(let app): return .app(app)
        }
    }

    /// The bearer key of `request`, or 401.
    static func bearer(_ request: HTTPRequest) throws(Problem) -> String {
        guard let header = request.headers["Authorization"] else {
            throw Problem(status: 401, detail: "An Authorization: Bearer <key> header is required.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
            throw Problem(status: 401, detail: "The Authorization header must be Bearer <key>.")
        }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }
}
