import Foundation
import IsletCore
import IsletLog
import IsletServer
import IsletTesting
import Testing

/// What an attacker probing the API over real sockets must not get: series added to
/// the metrics by invented methods, a dashboard session that outlives the admin
/// token it was made with, unlimited guesses at a token, a sign-in posted from
/// another site, a secret kept by a cache, and a request log without its client.
@Suite("Hardening over HTTP")
struct HardeningTests {
    /// The `islet_http_requests_total` lines of `/metrics`.
    func requestSeries(_ h: ServerHarness) async throws -> [String] {
        let reply = try await httpRequest(port: h.application.port, path: "/metrics")
        return reply.text.split(separator: "\n").map(String.init).filter { $0.hasPrefix("islet_http_requests_total{") }
    }

    @Test func inventedMethodsAddNoSeriesToTheMetrics() async throws {
        try await ServerHarness.with { h in
            // One invented method first, so that its series (method "other") exists.
            let first = try await httpRequest(port: h.application.port, method: "FROB", path: "/healthz")
            #expect(first.status == 405)
            let before = try await requestSeries(h)
            for index in 0..<40 {
                let method = "X" + String(repeating: "Q", count: 200 + index * 50) + String(index)
                let reply = try await httpRequest(port: h.application.port, method: method, path: "/v1/apps/\(index)/nowhere")
                #expect(reply.status == 404 || reply.status == 405)
                let known = try await httpRequest(port: h.application.port, method: "BREW\(index)", path: "/healthz")
                #expect(known.status == 405)
            }
            // The /metrics request itself adds its own series once; then nothing.
            _ = try await requestSeries(h)
            let after = try await requestSeries(h)
            let series = Set(after.map { $0.prefix { $0 != "}" } })
            #expect(series.count <= Set(before.map { $0.prefix { $0 != "}" } }).count + 2, "\(after)")
            #expect(!after.contains { $0.contains("QQQ") || $0.contains("BREW") }, "\(after)")
            #expect(after.contains { $0.contains("method=\"other\"") && $0.contains("route=\"unmatched\"") }, "\(after)")
            #expect(after.contains { $0.contains("method=\"other\"") && $0.contains("route=\"/healthz\"") }, "\(after)")
        }
    }

    @Test func anAdminSessionDiesWhenTheAdminTokenChanges() async throws {
        try await withTemporaryDirectory { directory in try await TestPostgres.withSuiteDatabase { database in
            func start(_ token: String) throws -> Application {
                var config = Configuration()
                config.port = 0
                config.dataDirectory = directory.path
                config.databasePath = database
                config.secretsKey = database.map { _ in TestPostgres.secretsKey }
                config.adminToken = token
                let application = try buildApplication(config, logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()))
                try application.start()
                return application
            }
            let first = try start("first-admin-token-0123456789")
            let signIn = try await httpRequest(
                port: first.port, method: "POST", path: "/dashboard/session", headers: ["Content-Type": "application/json"],
                body: Data(#"{"token": "first-admin-token-0123456789"}"#.utf8))
            #expect(signIn.status == 200)
            let cookie = String(try #require(signIn.headers["set-cookie"]?.split(separator: ";").first))
            #expect(try await httpRequest(port: first.port, path: "/v1/apps", headers: ["Cookie": cookie]).status == 200)
            await first.shutdown()

            // The same database, a new admin token: the old session is dead.
            let second = try start("second-admin-token-0123456789")
            let refused = try await httpRequest(port: second.port, path: "/v1/apps", headers: ["Cookie": cookie])
            #expect(refused.status == 401)
            #expect(refused.text.contains("admin token changed"), "\(refused.text)")
            #expect(try await httpRequest(port: second.port, path: "/dashboard/session", headers: ["Cookie": cookie]).status == 401)
            await second.shutdown()
        } }
    }

    @Test func deletingSessionsEndsEveryOne() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            var cookies: [String] = []
            for token in [ServerHarness.adminToken, app.serverKey, ServerHarness.adminToken] {
                let reply = try await h.call("POST", "/dashboard/session", key: nil, json: ["token": .string(token)])
                #expect(reply.status == 200)
                cookies.append(String(try #require(reply.headers["set-cookie"]?.split(separator: ";").first)))
            }
            for cookie in cookies {
                #expect(try await h.call("GET", "/dashboard/session", key: nil, headers: ["Cookie": cookie]).status == 200)
            }
            // Only the admin token may end them: an app's key or no key is refused.
            #expect(try await h.call("DELETE", "/v1/sessions", key: app.serverKey).status == 403)
            #expect(try await h.call("DELETE", "/v1/sessions", key: nil).status == 401)
            let ended = try await h.call("DELETE", "/v1/sessions", key: ServerHarness.adminToken)
            #expect(ended.status == 200)
            #expect(ended["ended"]?.int64Value == 3)
            for cookie in cookies {
                #expect(try await h.call("GET", "/dashboard/session", key: nil, headers: ["Cookie": cookie]).status == 401)
            }
            #expect(try await h.call("DELETE", "/v1/sessions", key: ServerHarness.adminToken)["ended"]?.int64Value == 0)
        }
    }

    @Test func signInsAndRefusedAdminTokensAreLimitedPerAddress() async throws {
        try await ServerHarness.with(configure: { $0.signInAttemptsPerMinute = 4 }) { h in
            // Two wrong sign-ins and two refused admin tokens spend the four attempts.
            for _ in 0..<2 {
                #expect(try await h.call("POST", "/dashboard/session", key: nil, json: ["token": "wrong-token-0123456789"]).status == 401)
                #expect(try await h.call("GET", "/v1/apps", key: "wrong-admin-token-0123456789").status == 401)
            }
            // An admin call with the right token is not an attempt, and still passes
            // until the limit is reached; past it, even the right token waits.
            let limited = try await h.call("POST", "/dashboard/session", key: nil, json: ["token": .string(ServerHarness.adminToken)])
            #expect(limited.status == 429)
            let retryAfter = try #require(limited.headers["retry-after"].flatMap { Int($0) })
            #expect((1...60).contains(retryAfter))
            #expect(limited.headers["content-type"] == "application/problem+json")
            #expect(try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken).status == 429)
            #expect(try await h.call("GET", "/v1/apps", key: "wrong-admin-token-0123456789").status == 429)
            // Every admin route waits, creating an app included.
            let app = try await h.createAppLimited()
            #expect(app == nil)

            // A minute later the attempts have left the window.
            h.clock.advance(by: 61)
            #expect(try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken).status == 200)
            #expect(try await h.call("POST", "/dashboard/session", key: nil, json: ["token": .string(ServerHarness.adminToken)]).status == 200)
        }
    }

    @Test func theLimitCountsTheForwardedAddressOnlyWhenTrusted() async throws {
        let logs = MemoryLogSink()
        try await ServerHarness.with(logLevel: .info, logs: logs, configure: { $0.signInAttemptsPerMinute = 2 }) { h in
            // Untrusted, X-Forwarded-For changes nothing: every attempt is 127.0.0.1's.
            for index in 0..<2 {
                let reply = try await h.call(
                    "POST", "/dashboard/session", key: nil, json: ["token": "wrong-token-0123456789"],
                    headers: ["X-Forwarded-For": "203.0.113.\(index)"])
                #expect(reply.status == 401)
            }
            let limited = try await h.call(
                "POST", "/dashboard/session", key: nil, json: ["token": "wrong-token-0123456789"],
                headers: ["X-Forwarded-For": "203.0.113.9"])
            #expect(limited.status == 429)
            let requests = logs.lines.filter { $0.contains("msg=request") && $0.contains("/dashboard/session") }
            #expect(requests.count >= 3)
            #expect(requests.allSatisfy { $0.contains("client=127.0.0.1") }, "\(requests)")
            #expect(!requests.contains { $0.contains("203.0.113") })
        }
        let trustedLogs = MemoryLogSink()
        try await ServerHarness.with(logLevel: .info, logs: trustedLogs, configure: {
            $0.signInAttemptsPerMinute = 2
            $0.trustForwardedFor = true
        }) { h in
            // Trusted, the proxy's last entry is the client: each address has its own attempts.
            for index in 0..<3 {
                let reply = try await h.call(
                    "POST", "/dashboard/session", key: nil, json: ["token": "wrong-token-0123456789"],
                    headers: ["X-Forwarded-For": "198.51.100.7, 203.0.113.\(index)"])
                #expect(reply.status == 401)
            }
            // A proxy that adds a line of its own: the client's forged line before
            // it changes nothing.
            let port = h.application.port
            for _ in 0..<3 {
                let connection = try RawHTTPConnection(port: port)
                let body = #"{"token": "wrong-token-0123456789"}"#
                let reply = try await connection.async { c -> RawHTTPResponse in
                    try c.write(
                        "POST /dashboard/session HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                            + "X-Forwarded-For: 192.0.2.\(Int.random(in: 1...250))\r\nX-Forwarded-For: 203.0.113.50\r\n"
                            + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n\(body)")
                    return try c.readResponse()
                }
                _ = reply
            }
            let last = try await h.call(
                "POST", "/dashboard/session", key: nil, json: ["token": .string(ServerHarness.adminToken)],
                headers: ["X-Forwarded-For": "203.0.113.50"])
            #expect(last.status == 429)
            let lines = trustedLogs.lines.filter { $0.contains("msg=request") && $0.contains("/dashboard/session") }
            #expect(lines.contains { $0.contains("client=203.0.113.2") }, "\(lines)")
            #expect(!lines.contains { $0.contains("client=198.51.100.7") })
        }
    }

    @Test func aSignInPostedFromAnotherSiteIsRefused() async throws {
        try await ServerHarness.with { h in
            let port = h.application.port
            let form = Data("token=\(ServerHarness.adminToken)".utf8)
            let foreign = try await httpRequest(
                port: port, method: "POST", path: "/dashboard/session",
                headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"], body: form)
            #expect(foreign.status == 403)
            #expect(foreign.headers["set-cookie"] == nil)
            #expect(foreign.text.contains("\"Origin\""), "\(foreign.text)")
            // The server's own origin (the Host it was reached at), and no Origin at
            // all (a client that is not a browser), sign in.
            let own = try await httpRequest(
                port: port, method: "POST", path: "/dashboard/session",
                headers: ["Content-Type": "application/x-www-form-urlencoded", "Origin": "http://127.0.0.1"], body: form)
            #expect(own.status == 200)
            #expect(own.headers["cache-control"] == "no-store")
            let plain = try await httpRequest(
                port: port, method: "POST", path: "/dashboard/session",
                headers: ["Content-Type": "application/x-www-form-urlencoded"], body: form)
            #expect(plain.status == 200)
        }
    }

    @Test func answersThatCarryASecretAreNotStored() async throws {
        try await ServerHarness.with(configure: { $0.webhooksAllowHTTP = true; $0.webhooksAllowPrivate = true }) { h in
            let created = try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                "name": "Shop", "bundle_id": "com.example.shop",
            ])
            #expect(created.status == 201)
            #expect(created.headers["cache-control"] == "no-store")
            let appID = try #require(created["id"]?.stringValue)
            let serverKey = try #require(created["server_key"]?.stringValue)
            let rotated = try await h.call("POST", "/v1/apps/\(appID)/keys/rotate", key: ServerHarness.adminToken, json: [:])
            #expect(rotated.status == 200)
            #expect(rotated.headers["cache-control"] == "no-store")
            let newServerKey = try #require(rotated["server_key"]?.stringValue)
            #expect(newServerKey != serverKey)
            let webhook = try await h.call(
                "POST", "/v1/apps/\(appID)/webhooks", key: newServerKey, json: ["url": "http://127.0.0.1:9/hook", "events": ["push.*"]])
            #expect(webhook.status == 201, "\(webhook.json)")
            #expect(webhook.headers["cache-control"] == "no-store")
            let webhookID = try #require(webhook["id"]?.stringValue)
            let secret = try await h.call(
                "POST", "/v1/apps/\(appID)/webhooks/\(webhookID)/rotate-secret", key: newServerKey, json: [:])
            #expect(secret.status == 200)
            #expect(secret.headers["cache-control"] == "no-store")
            // An answer with no secret says nothing of the kind.
            #expect(try await h.call("GET", "/v1/apps/\(appID)", key: ServerHarness.adminToken).headers["cache-control"] == nil)
        }
    }
}

extension ServerHarness {
    /// Creates an app, or answers nil when the API refuses.
    func createAppLimited() async throws -> String? {
        let reply = try await call("POST", "/v1/apps", key: Self.adminToken, json: ["name": "Other", "bundle_id": "com.example.other"])
        return reply.status == 201 ? reply["id"]?.stringValue : nil
    }
}
