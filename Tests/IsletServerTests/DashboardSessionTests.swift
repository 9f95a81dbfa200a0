import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Testing

/// The dashboard's sessions over real sockets: signing in with the admin token or a
/// server key, the cookie's attributes, the API called with the cookie, the CSRF
/// rule, an app session kept to its app, expiry, rotation and sign-out.
@Suite("Dashboard sessions over HTTP")
struct DashboardSessionTests {
    /// A signed-in session: its cookie header and CSRF token.
    struct Session {
        let cookie: String
        let csrf: String
        let reply: Reply
    }

    func signIn(_ h: ServerHarness, _ token: String, headers: [String: String] = [:]) async throws -> Session {
        let reply = try await h.call("POST", "/dashboard/session", key: nil, json: ["token": .string(token)], headers: headers)
        try #require(reply.status == 200, "\(reply.json)")
        let setCookie = try #require(reply.headers["set-cookie"])
        let pair = try #require(setCookie.split(separator: ";").first)
        return Session(cookie: String(pair), csrf: try #require(reply["csrf_token"]?.stringValue), reply: reply)
    }

    func call(
        _ h: ServerHarness, _ method: String, _ path: String, _ session: Session, csrf: Bool = true, json: JSONValue? = nil
    ) async throws -> Reply {
        var headers = ["Cookie": session.cookie]
        if csrf { headers["X-CSRF-Token"] = session.csrf }
        if let json { return try await h.call(method, path, key: nil, json: json, headers: headers) }
        return try await h.call(method, path, key: nil, headers: headers)
    }

    @Test func signingInSetsAStrictHttpOnlyCookieAndAnswersTheSession() async throws {
        try await ServerHarness.with { h in
            let session = try await signIn(h, ServerHarness.adminToken)
            #expect(session.reply["scope"]?.stringValue == "admin")
            #expect(session.reply["app_id"] == nil)
            #expect(session.csrf.count >= 32)
            #expect(session.reply["expires_at"]?.stringValue == RFC3339.string(h.clock.now().addingTimeInterval(12 * 3600)))
            let cookie = try #require(session.reply.headers["set-cookie"])
            let attributes = Set(cookie.split(separator: ";").dropFirst().map { $0.trimmingCharacters(in: .whitespaces) })
            #expect(attributes.isSuperset(of: ["HttpOnly", "SameSite=Strict", "Path=/", "Max-Age=43200"]), "\(cookie)")
            #expect(!attributes.contains("Secure"), "plain HTTP: no Secure")
            #expect(session.cookie.hasPrefix("islet_session=") && session.cookie.count > "islet_session=".count + 40)

            let current = try await call(h, "GET", "/dashboard/session", session)
            #expect(current.status == 200)
            #expect(current["scope"]?.stringValue == "admin" && current["csrf_token"]?.stringValue == session.csrf)
            #expect(try await h.call("GET", "/dashboard/session", key: nil).status == 401)
            #expect(try await h.call("GET", "/dashboard/session", key: nil, headers: ["Cookie": "islet_session=forged"]).status == 401)

            // Over TLS (as a proxy in front says), the cookie is Secure.
            let proxied = try await signIn(h, ServerHarness.adminToken, headers: ["X-Forwarded-Proto": "https"])
            #expect(proxied.reply.headers["set-cookie"]?.contains("; Secure") == true)

            // A form works as JSON does.
            let form = try await httpRequest(
                port: h.application.port, method: "POST", path: "/dashboard/session",
                headers: ["Content-Type": "application/x-www-form-urlencoded"],
                body: Data("token=\(ServerHarness.adminToken)".utf8))
            #expect(form.status == 200)
        }
    }

    @Test func aWrongTokenOrADeviceKeySignsNobodyIn() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let wrong = try await h.call("POST", "/dashboard/session", key: nil, json: ["token": "not-the-admin-token-at-all"])
            #expect(wrong.status == 401)
            #expect(wrong.headers["content-type"] == "application/problem+json")
            #expect(wrong.headers["set-cookie"] == nil)
            #expect(try await h.call("POST", "/dashboard/session", key: nil, json: ["token": .string(app.deviceKey)]).status == 403)
            #expect(try await h.call("POST", "/dashboard/session", key: nil, json: [:]).status == 422)
        }
    }

    @Test func aSessionCallsTheAPIAndEveryChangeNeedsTheCSRFToken() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let session = try await signIn(h, ServerHarness.adminToken)
            let apps = try await call(h, "GET", "/v1/apps", session, csrf: false)
            #expect(apps.status == 200)
            #expect(apps["items"]?.arrayValue?.count == 1)
            // The admin session reads every app's server routes too.
            #expect(try await call(h, "GET", "/v1/apps/\(app.id)/activities", session, csrf: false).status == 200)
            // A change without the token, or with another, is refused, naming the header.
            let body: JSONValue = ["name": "Second", "bundle_id": "com.example.second"]
            for headers in [["Cookie": session.cookie], ["Cookie": session.cookie, "X-CSRF-Token": "forged"]] {
                let refused = try await h.call("POST", "/v1/apps", key: nil, json: body, headers: headers)
                #expect(refused.status == 403)
                #expect(refused.headers["content-type"] == "application/problem+json")
                #expect(refused["detail"]?.stringValue?.contains("X-CSRF-Token") == true, "\(refused.json)")
                #expect(refused.errorFields == ["X-CSRF-Token"])
            }
            #expect(try await call(h, "GET", "/v1/apps", session, csrf: false)["items"]?.arrayValue?.count == 1)
            #expect(try await call(h, "POST", "/v1/apps", session, json: body).status == 201)
            // Device routes never take a session.
            let device = try await call(
                h, "PUT", "/v1/apps/\(app.id)/devices/phone-1", session, json: ["platform": "ios", "environment": "sandbox"])
            #expect(device.status == 401)
            // A bearer key still works as before, and wins over a cookie.
            #expect(try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken, headers: ["Cookie": "islet_session=forged"]).status == 200)
        }
    }

    @Test func anAppSessionIsKeptToItsAppAndDiesWithItsKeys() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            let session = try await signIn(h, app.serverKey)
            #expect(session.reply["scope"]?.stringValue == "app")
            #expect(session.reply["app_id"]?.stringValue == app.id)
            #expect(try await call(h, "GET", "/v1/apps/\(app.id)/activities", session, csrf: false).status == 200)
            // Another app's routes answer as if it did not exist; the admin routes refuse.
            let foreign = try await call(h, "GET", "/v1/apps/\(other.id)/activities", session, csrf: false)
            #expect(foreign.status == 404)
            #expect(try await call(h, "GET", "/v1/apps", session, csrf: false).status == 403)
            #expect(try await call(h, "POST", "/v1/apps/\(app.id)/keys/rotate", session, json: [:]).status == 403)
            // Rotating the app's keys ends the session.
            let rotated = try await h.call("POST", "/v1/apps/\(app.id)/keys/rotate", key: ServerHarness.adminToken, json: [:])
            #expect(rotated.status == 200)
            #expect(try await call(h, "GET", "/v1/apps/\(app.id)/activities", session, csrf: false).status == 401)
            #expect(try await call(h, "GET", "/dashboard/session", session).status == 401)
        }
    }

    @Test func signingOutEndsTheSessionAndClearsTheCookie() async throws {
        try await ServerHarness.with { h in
            let session = try await signIn(h, ServerHarness.adminToken)
            let refused = try await call(h, "DELETE", "/dashboard/session", session, csrf: false)
            #expect(refused.status == 403)
            #expect(refused["detail"]?.stringValue?.contains("X-CSRF-Token") == true)
            #expect(try await call(h, "GET", "/dashboard/session", session).status == 200)
            let out = try await call(h, "DELETE", "/dashboard/session", session)
            #expect(out.status == 204)
            let cleared = try #require(out.headers["set-cookie"])
            #expect(cleared.hasPrefix("islet_session=;") && cleared.contains("Max-Age=0"), "\(cleared)")
            #expect(try await call(h, "GET", "/dashboard/session", session).status == 401)
            #expect(try await call(h, "GET", "/v1/apps", session, csrf: false).status == 401)
        }
    }

    @Test func aSessionExpiresAfterTheConfiguredHours() async throws {
        try await ServerHarness.with(configure: { $0.dashboardSessionHours = 2 }) { h in
            let session = try await signIn(h, ServerHarness.adminToken)
            #expect(session.reply.headers["set-cookie"]?.contains("Max-Age=7200") == true)
            h.clock.advance(by: 2 * 3600 - 5)
            #expect(try await call(h, "GET", "/v1/apps", session, csrf: false).status == 200)
            h.clock.advance(by: 5)
            let expired = try await call(h, "GET", "/v1/apps", session, csrf: false)
            #expect(expired.status == 401)
            #expect(expired["detail"]?.stringValue?.contains("expired") == true)
            #expect(try await call(h, "GET", "/dashboard/session", session).status == 401)
        }
    }

    @Test func anHTTPSPublicURLMarksTheCookieSecure() async throws {
        try await ServerHarness.with(configure: { $0.publicURL = "https://islet.example.com" }) { h in
            let session = try await signIn(h, ServerHarness.adminToken)
            #expect(session.reply.headers["set-cookie"]?.contains("; Secure") == true)
        }
    }

    @Test func thePageIsServedUnderAStrictPolicyOutsideTheOpenAPIDocument() async throws {
        try await ServerHarness.with { h in
            let page = try await httpRequest(port: h.application.port, path: "/dashboard")
            #expect(page.status == 200)
            #expect(page.headers["content-type"]?.hasPrefix("text/html") == true)
            let policy = try #require(page.headers["content-security-policy"])
            #expect(policy.contains("script-src 'self'") && !policy.contains("unsafe-inline"))
            #expect(page.text.contains(#"<script src="/dashboard/app.js" defer></script>"#))
            #expect(page.text.components(separatedBy: "<script").count == 2, "one script, loaded from its file")
            let script = try await httpRequest(port: h.application.port, path: "/dashboard/app.js")
            #expect(script.status == 200 && script.headers["content-type"]?.hasPrefix("text/javascript") == true)
            #expect(!script.text.contains("innerHTML"))
            let style = try await httpRequest(port: h.application.port, path: "/dashboard/app.css")
            #expect(style.status == 200 && style.headers["content-type"]?.hasPrefix("text/css") == true)
            let document = try await h.call("GET", "/openapi.json", key: nil)
            let paths = try #require(document["paths"]?.objectValue)
            #expect(!paths.keys.contains { $0.hasPrefix("/dashboard") })
        }
    }

    @Test func theSessionHoursAndPublicURLAreSettings() throws {
        let (config, _) = try Configuration.load(
            arguments: ["--dashboard-session-hours", "3", "--public-url", "https://islet.example.com"], environment: [:])
        #expect(config.dashboardSessionHours == 3)
        #expect(config.publicURLIsHTTPS)
        let (fromEnvironment, _) = try Configuration.load(arguments: [], environment: ["ISLET_DASHBOARD_SESSION_HOURS": "1.5"])
        #expect(fromEnvironment.dashboardSessionHours == 1.5)
        #expect(Configuration().dashboardSessionHours == 12 && !Configuration().publicURLIsHTTPS)
        #expect(throws: ConfigurationError.self) { try Configuration.load(arguments: ["--dashboard-session-hours", "0"], environment: [:]) }
    }
}
