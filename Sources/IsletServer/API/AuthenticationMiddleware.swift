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
    /// Counts refused admin tokens per client address.
    let signIns: SignInLimiter?

    func respond(
        to request: RouteRequest, route: APIRoute, next: @Sendable (RouteRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        var request = request
        request.caller = try await caller(
            request.http, access: route.access, appID: request.parameters["app_id"] ?? "", clientAddress: request.clientAddress)
        return try await next(request)
    }

    /// Who `request` speaks for on a route of `access` (of the app `appID`), or the
    /// refusal: a dashboard session (after its CSRF check) when the request has no
    /// `Authorization` and carries a session cookie, else the bearer key.
    func caller(_ request: HTTPRequest, access: RouteAccess, appID: String, clientAddress: String) async throws -> Caller {
        if access != .open, access != .device, request.headers["Authorization"] == nil, let token = DashboardCookie.token(request) {
            return try await sessionCaller(token: token, request: request, access: access, appID: appID)
        }
        switch access {
        case .open:
            return .anyone
        case .admin:
            try await apps.requireAdmin(key: try Self.bearer(request), from: clientAddress, signIns: signIns)
            return .admin
        case .server, .device:
            let app = try await apps.requireApp(
                key: try Self.bearer(request), appID: appID, kind: access == .server ? .server : .device)
            return .app(app)
        }
    }

    /// The same check as `caller`, made from a request's head before its body is
    /// read: an app key this node already knows passes at once; anything else
    /// (a key to look up, a session, the admin token) is checked after a wait.
    /// Answers who may send the body (the app, whose buffered bytes it counts
    /// against), or the refusal.
    func admit(_ head: HTTPRequest, access: RouteAccess, appID: String, clientAddress: String) -> HeadCheck {
        if access == .open { return .pass(appID: nil) }
        if access != .admin, let key = try? Self.bearer(head),
            apps.knownApp(key: key, appID: appID, kind: access == .server ? .server : .device) != nil
        {
            return .pass(appID: appID)
        }
        return .wait { [self] in
            do {
                switch try await caller(head, access: access, appID: appID, clientAddress: clientAddress) {
                case .app(let app): return .pass(appID: app.id)
                case .admin, .anyone: return .pass(appID: nil)
                }
            } catch {
                return .fail(error)
            }
        }
    }

    /// What `admit` decides.
    enum HeadCheck: Sendable {
        /// The body may be read; it counts against `appID`'s buffered bytes.
        case pass(appID: String?)
        /// The request is refused.
        case fail(any Error)
        /// The decision needs a wait.
        case wait(@Sendable () async -> HeadCheck)
    }

    /// The caller a dashboard session stands for on `route`, after its CSRF check.
    private func sessionCaller(token: String, request: HTTPRequest, access: RouteAccess, appID: String) async throws -> Caller {
        let session = try await sessions.session(token: token)
        try sessions.requireCSRF(session, method: request.method, token: request.headers[SessionService.csrfHeader])
        let access: SessionAccess = access == .admin ? .admin : .server(appID: appID)
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
        let key = parts.count == 2 ? parts[1].trimmingOptionalWhitespace() : ""
        guard parts.count == 2, parts[0].lowercased() == "bearer", !key.isEmpty else {
            throw Problem(status: 401, detail: "The Authorization header must be Bearer <key>.")
        }
        return String(key)
    }
}
