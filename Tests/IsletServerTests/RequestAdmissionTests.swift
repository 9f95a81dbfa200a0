import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Testing

/// Bodies are read only for requests that would be answered, within the buffered
/// bytes and a deadline; and the request's head is held to the framing rules. Over
/// raw sockets, since the HTTP library is what is under test.
@Suite("Request admission over raw sockets")
struct RequestAdmissionTests {
    /// Sends a head declaring `length` bytes of body and nothing of it; answers the
    /// connection and the answer read without sending the body.
    func headOnly(_ port: Int, _ method: String, _ path: String, length: Int, headers: [String: String] = [:]) async throws
        -> (RawHTTPConnection, RawHTTPResponse)
    {
        let connection = try RawHTTPConnection(port: port)
        var head = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: \(length)\r\n"
        for (name, value) in headers { head += "\(name): \(value)\r\n" }
        head += "\r\n"
        let request = head
        let response = try await connection.async { c -> RawHTTPResponse in
            try c.write(request)
            // A HEAD answer has no body, whatever its Content-Length says.
            return method == "HEAD" ? try c.readResponseHead() : try c.readResponse()
        }
        return (connection, response)
    }

    @Test func aRequestThatWouldBeRefusedIsAnsweredWithoutItsBody() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let port = h.application.port
            let big = 8 * 1024 * 1024
            // No key, a wrong key, another app's key kind, an app that does not exist,
            // a route that does not exist: each answered at once, no body sent.
            let cases: [(String, String, [String: String], Int)] = [
                ("POST", "/v1/apps/app_00000000000000000000/activities", [:], 401),
                ("POST", "/v1/apps/\(app.id)/activities", ["Authorization": "Bearer islet_sk_wrong"], 401),
                ("POST", "/v1/apps/\(app.id)/activities", ["Authorization": "Bearer \(app.deviceKey)"], 403),
                ("POST", "/v1/apps/app_00000000000000000000/activities", ["Authorization": "Bearer \(app.serverKey)"], 404),
                ("POST", "/v1/nowhere", [:], 404),
                ("POST", "/v1/apps/\(app.id)/activities/a1/timeline", [:], 405),
                // HEAD is checked as the GET it stands for.
                ("HEAD", "/v1/apps", [:], 401),
            ]
            var held: [RawHTTPConnection] = []
            for (method, path, headers, status) in cases {
                let (connection, response) = try await headOnly(port, method, path, length: big, headers: headers)
                #expect(response.status == status, "\(method) \(path): \(response.text)")
                if method != "HEAD" { #expect(response.headers["content-type"] == "application/problem+json") }
                #expect(response.headers["connection"]?.lowercased() == "close")
                held.append(connection)
            }
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
            // A length past any integer is too large, and the key still comes first.
            for (headers, status) in [("", 401), ("Authorization: Bearer \(app.serverKey)\r\n", 413)] {
                let connection = try RawHTTPConnection(port: port)
                let request = "POST /v1/apps/\(app.id)/activities HTTP/1.1\r\nHost: 127.0.0.1\r\n\(headers)"
                    + "Content-Type: application/json\r\nContent-Length: 9223372036854775808\r\n\r\n{"
                let answer = try await connection.async { c -> RawHTTPResponse in
                    try c.write(request)
                    return try c.readResponse()
                }
                #expect(answer.status == status, "\(answer.text)")
                held.append(connection)
            }
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
            // Twenty unauthenticated heads held open cost no body bytes.
            for _ in 0..<20 {
                let (connection, response) = try await headOnly(port, "POST", "/v1/apps/\(app.id)/activities", length: big)
                #expect(response.status == 401)
                held.append(connection)
            }
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
            // A request with the right key is read and answered as before.
            let fine = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: ["nonsense": 1])
            #expect(fine.status == 422)
            _ = held
        }
    }

    @Test func bodiesPastTheBufferedBytesAreRefusedWithRetryAfter() async throws {
        try await ServerHarness.with(configure: {
            $0.maxBufferedBodyBytesPerApp = 300_000
            $0.maxBufferedBodyBytes = 500_000
            $0.maxTimelineBodyBytes = 1_000_000
        }) { h in
            let app = try await h.createApp()
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            let port = h.application.port
            // Two heads of 200,000 bytes for one app, bodies held back: the first is
            // admitted and counted, the second would pass the app's 300,000.
            func open(_ app: TestApp, _ length: Int) throws -> RawHTTPConnection {
                let connection = try RawHTTPConnection(port: port)
                try connection.write(
                    "PUT /v1/apps/\(app.id)/activities/a1/timeline HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        + "Authorization: Bearer \(app.serverKey)\r\nContent-Type: application/json\r\n"
                        + "Content-Length: \(length)\r\n\r\n{")
                return connection
            }
            let first = try open(app, 200_000)
            #expect(await eventually { h.application.bufferedBodyBytes(appID: app.id) == 200_000 })
            let second = try open(app, 200_000)
            let refused = try await second.async { try $0.readResponse() }
            #expect(refused.status == 503)
            #expect(refused.headers["retry-after"] == "1")
            #expect(refused.headers["content-type"] == "application/problem+json")
            // Another app has its own share, up to the server's 500,000 in all.
            let third = try open(other, 250_000)
            #expect(await eventually { h.application.bufferedBodyBytes() == 450_000 })
            let fourth = try open(other, 60_000)
            #expect(try await fourth.async { try $0.readResponse() }.status == 503)
            // Hanging up frees what a body held.
            first.hangUp()
            third.hangUp()
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
            _ = (second, fourth)
        }
    }

    @Test func aStalledBodyIsDroppedWith408() async throws {
        try await ServerHarness.with(configure: { $0.bodyTimeoutSeconds = 2 }) { h in
            let app = try await h.createApp()
            let connection = try RawHTTPConnection(port: h.application.port)
            let response = try await connection.async { c -> RawHTTPResponse in
                try c.write(
                    "PUT /v1/apps/\(app.id)/devices/d1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.deviceKey)\r\n"
                        + "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"platform\"")
                return try c.readResponse()
            }
            #expect(response.status == 408)
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.text.contains("did not arrive"))
            #expect(try await connection.async { $0.readsEndOfStream() })
            #expect(await eventually { h.application.bufferedBodyBytes() == 0 })
            // A body that arrives in time is answered as usual.
            let device = try await h.call("PUT", "/v1/apps/\(app.id)/devices/d2", key: app.deviceKey, json: [
                "platform": "ios", "environment": "sandbox",
            ])
            #expect(device.status == 201)
        }
    }

    /// Sends `raw` on a fresh connection; answers the response and whether the
    /// server then closed the connection.
    func exchange(_ port: Int, _ raw: String) async throws -> (RawHTTPResponse, closed: Bool) {
        let connection = try RawHTTPConnection(port: port)
        return try await connection.async { c in
            try c.write(raw)
            let response = try c.readResponse()
            return (response, c.readsEndOfStream())
        }
    }

    @Test func aNulInThePathOrQueryIsRefused() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let port = h.application.port
            for target in [
                "/v1/apps/\(app.id)/activities/%00/pushes", "/v1/apps/\(app.id)/activities?limit=%00",
                "/v1/apps/\(app.id)/activities?%00=1",
            ] {
                let (response, _) = try await exchange(
                    port, "GET \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.serverKey)\r\n\r\n")
                #expect(response.status == 400, "\(target): \(response.text)")
                #expect(response.headers["content-type"] == "application/problem+json")
                #expect(response.text.contains("NUL"))
            }
        }
    }

    @Test func ambiguousFramingIsRefusedAndTheConnectionClosed() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let port = h.application.port
            let head = "PUT /v1/apps/\(app.id)/devices/d1 HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(app.deviceKey)\r\nContent-Type: application/json\r\n"
            let body = #"{"platform":"ios","environment":"sandbox"}"#
            let both = try await exchange(
                port, head + "Content-Length: \(body.utf8.count)\r\nTransfer-Encoding: chunked\r\n\r\n" + body)
            #expect(both.0.status == 400)
            #expect(both.0.text.contains("Content-Length and Transfer-Encoding"))
            #expect(both.closed)
            let two = try await exchange(
                port, head + "Content-Length: \(body.utf8.count)\r\nContent-Length: \(body.utf8.count + 1)\r\n\r\n" + body + "!")
            #expect(two.0.status == 400)
            #expect(two.0.text.contains("two different Content-Length"))
            #expect(two.closed)
            let gzip = try await exchange(port, head + "Transfer-Encoding: gzip\r\n\r\n" + body)
            #expect(gzip.0.status == 400)
            #expect(gzip.closed)
            // The same body framed once is taken, and creates the device: none of
            // the refused ones had.
            let fine = try await exchange(port, head + "Content-Length: \(body.utf8.count)\r\nConnection: close\r\n\r\n" + body)
            #expect(fine.0.status == 201)
        }
    }

    @Test func http11WithoutHostIsRefusedAsAProblem() async throws {
        try await ServerHarness.with { h in
            let (response, closed) = try await exchange(h.application.port, "GET /healthz HTTP/1.1\r\n\r\n")
            #expect(response.status == 400)
            #expect(response.headers["content-type"] == "application/problem+json")
            #expect(response.text.contains("Host"))
            #expect(closed)
            // HTTP/1.0 needs none.
            let old = try await exchange(h.application.port, "GET /healthz HTTP/1.0\r\n\r\n")
            #expect(old.0.status == 200)
        }
    }
}
