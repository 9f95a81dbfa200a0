import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The dashboard, served by Islet itself: the page, its script and its style, and
/// its session routes. These routes are outside the documented `/v1` API: they are
/// served beside it, never listed in the OpenAPI document.
///
/// The page, script and style are the files of Dashboard/Assets/ (`dashboard.html`,
/// `dashboard.js`, `dashboard.css`), compiled into the binary by the EmbedAssets
/// plugin as `EmbeddedAssets` and served byte for byte, so that Islet needs no build
/// step, no network and no file at run time. The page has no inline script or style,
/// so that its Content-Security-Policy can forbid both.
///
/// - `GET /dashboard`: the single-page application, under a Content-Security-Policy
///   that allows only its own script and style.
/// - `POST /dashboard/session` (`{token}` as JSON, or `token=` as a form): signs in
///   with the admin token or an app's server key; sets the session cookie.
/// - `GET /dashboard/session`: the current session (401 without one).
/// - `DELETE /dashboard/session`: signs out (the session is deleted and its cookie
///   cleared).
struct DashboardRoutes: Sendable {
    let sessions: SessionService
    /// Whether the session cookie is `Secure` whatever the request says.
    let publicURLIsHTTPS: Bool
    /// The URL clients reach Islet at, when set: its origin is the one sign-ins
    /// must come from.
    var publicURL: String? = nil

    /// The policy of the dashboard's page: its own script, style and requests only.
    static let contentSecurityPolicy =
        "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
        + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

    var routes: [APIRoute] {
        [
            APIRoute("GET", "/dashboard", summary: "The dashboard.", access: .open, responses: [(200, "The page")],
                     contentType: "text/html") { _ in Self.asset(EmbeddedAssets.dashboardHTML, type: "text/html; charset=utf-8", page: true) },
            APIRoute("GET", "/dashboard/app.js", summary: "The dashboard's script.", access: .open, responses: [(200, "Script")],
                     contentType: "text/javascript") { _ in Self.asset(EmbeddedAssets.dashboardJS, type: "text/javascript; charset=utf-8") },
            APIRoute("GET", "/dashboard/app.css", summary: "The dashboard's style.", access: .open, responses: [(200, "Style")],
                     contentType: "text/css") { _ in Self.asset(EmbeddedAssets.dashboardCSS, type: "text/css; charset=utf-8") },
            APIRoute("POST", "/dashboard/session", summary: "Sign in to the dashboard.", access: .open,
                     responses: [(200, "The session")]) { request in try await signIn(request) },
            APIRoute("GET", "/dashboard/session", summary: "The current dashboard session.", access: .open,
                     responses: [(200, "The session")]) { request in try await current(request) },
            APIRoute("DELETE", "/dashboard/session", summary: "Sign out of the dashboard.", access: .open,
                     responses: [(204, "Signed out")]) { request in try await signOut(request) },
        ]
    }

    // MARK: - Assets

    private static func asset(_ text: String, type: String, page: Bool = false) -> HTTPResponse {
        var response = HTTPResponse(status: 200, contentType: type, body: Data(text.utf8))
        response.headers.set("X-Content-Type-Options", "nosniff")
        response.headers.set("Cache-Control", "no-cache")
        if page {
            response.headers.set("Content-Security-Policy", contentSecurityPolicy)
            response.headers.set("X-Frame-Options", "DENY")
            response.headers.set("Referrer-Policy", "no-referrer")
        }
        return response
    }

    // MARK: - Sessions

    private func signIn(_ request: RouteRequest) async throws -> HTTPResponse {
        try SessionService.requireOwnOrigin(request.http.headers["Origin"], own: ownOrigins(request.http))
        let token = try Self.signInToken(request.http)
        let signedIn = try await sessions.signIn(key: token, from: request.clientAddress)
        var response = APIJSON.response(Self.json(signedIn.session))
        let secure = DashboardCookie.secure(request.http, publicURLIsHTTPS: publicURLIsHTTPS)
        response.headers.set(
            "Set-Cookie", DashboardCookie.setting(signedIn.token, maxAge: Int(sessions.lifetime.rounded()), secure: secure))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    private func current(_ request: RouteRequest) async throws -> HTTPResponse {
        guard let token = DashboardCookie.token(request.http) else {
            throw Problem(status: 401, detail: "There is no dashboard session; sign in with POST /dashboard/session.")
        }
        let session = try await sessions.session(token: token)
        var response = APIJSON.response(Self.json(session))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    private func signOut(_ request: RouteRequest) async throws -> HTTPResponse {
        if let token = DashboardCookie.token(request.http) {
            try await sessions.signOut(token: token, csrf: request.http.headers[SessionService.csrfHeader])
        }
        var response = HTTPResponse(status: 204)
        response.headers.set(
            "Set-Cookie", DashboardCookie.clearing(secure: DashboardCookie.secure(request.http, publicURLIsHTTPS: publicURLIsHTTPS)))
        return response
    }

    /// The origins this server is reached at: the public URL's, when one is set,
    /// and the request's own `Host` over http and https.
    private func ownOrigins(_ request: HTTPRequest) -> [String] {
        var origins: [String] = []
        if let publicURL, let url = URL(string: publicURL), let scheme = url.scheme, let host = url.host {
            origins.append("\(scheme)://\(host)\(url.port.map { ":\($0)" } ?? "")")
        }
        if let host = request.headers["Host"] { origins += ["http://\(host)", "https://\(host)"] }
        return origins
    }

    /// The token a sign-in carries: `{"token": "…"}`, or `token=…` as a form.
    static func signInToken(_ request: HTTPRequest) throws(Problem) -> String {
        let type = (request.headers["Content-Type"] ?? "").lowercased()
        var token: String?
        if type.hasPrefix("application/x-www-form-urlencoded") {
            let text = String(decoding: request.body, as: UTF8.self)
            for pair in text.split(separator: "&") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0] == "token" else { continue }
                token = String(parts[1]).replacingOccurrences(of: "+", with: " ").removingPercentEncoding
            }
        } else if type.isEmpty || type.hasPrefix("application/json") {
            let json: JSONValue
            do {
                json = try JSONValue(parsing: request.body)
            } catch {
                throw Problem(status: 400, detail: "The body is not JSON: send {\"token\": \"…\"}.")
            }
            token = json["token"]?.stringValue
        } else {
            throw Problem(status: 415, detail: "Send the token as application/json ({\"token\": \"…\"}) or as a form (token=…).")
        }
        guard let token = token?.trimmingCharacters(in: .whitespacesAndNewlines), !token.isEmpty else {
            throw Problem(
                status: 422, detail: "The field token is required: the admin token or an app's server key.",
                errors: [.init(field: "token", message: "is required")])
        }
        return token
    }

    /// A session as the session routes answer it.
    static func json(_ session: SessionRecord) -> JSONValue {
        var json: [String: JSONValue] = [
            "scope": .string(session.scope.rawValue), "csrf_token": .string(session.csrfToken),
            "expires_at": APIJSON.date(session.expiresAt),
        ]
        if let appID = session.appID { json["app_id"] = .string(appID) }
        return .object(json)
    }
}
