import Foundation
import HTTPServer
import IsletService

/// Enforces each route's declared access before its handler runs: `.open` lets
/// anyone through; `.admin` takes only the admin token; `.server` and `.device` take
/// that key of the app named by the path's `app_id`, and hand the handler the app.
struct AuthenticationMiddleware: Middleware {
    let apps: AppService

    func respond(
        to request: RouteRequest, route: APIRoute, next: @Sendable (RouteRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        var request = request
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
