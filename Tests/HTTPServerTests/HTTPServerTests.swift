import IsletSync
import Foundation
import Glibc
import HTTPServer
import IsletTesting
import Testing

/// Echoes what the server assembled, as JSON.
@Sendable func echo(_ request: HTTPRequest) async -> HTTPResponse {
    var headers: [String: String] = [:]
    for (name, value) in request.headers { headers[name.lowercased()] = value }
    let object: [String: Any] = [
        "method": request.method,
        "path": request.path,
        "query": Dictionary(request.query.map { ($0.name, $0.value) }, uniquingKeysWith: { a, _ in a }),
        "headers": headers,
        "bodyLength": request.body.count,
        "bodySHA": request.body.reduce(UInt64(1469598103934665603)) { ($0 ^ UInt64($1)) &* 1099511628211 },
        "remote": request.remoteAddress ?? "",
    ]
    let body = (try? JSONSerialization.data(withJSONObject: object)) ?? Data()
    return HTTPResponse(status: 200, contentType: "application/json", body: body)
}

func fnv(_ data: Data) -> UInt64 {
    data.reduce(UInt64(1469598103934665603)) { ($0 ^ UInt64($1)) &* 1099511628211 }
}

func startServer(maxBody: Int = 1024, handler: @escaping HTTPHandler = echo) throws -> HTTPServer {
    var configuration = HTTPServerConfiguration()
    configuration.port = 0
    configuration.maxBodyBytes = maxBody
    let server = HTTPServer(configuration: configuration, handler: handler)
    try server.start()
    return server
}

/// Whether nothing listens on `port` of 127.0.0.1: a socket of ours can bind it.
/// Sends `GET path` on a new connection now, and answers a task that reads the
/// response off the concurrency pool.
func sendRequest(port: Int, path: String) throws -> Task<RawHTTPResponse, any Error> {
    let connection = try RawHTTPConnection(port: port)
    try connection.write("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
    return Task { try await connection.async { try $0.readResponse() } }
}

func portIsFree(_ port: Int) -> Bool {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    defer { close(fd) }
    var one: Int32 = 1
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    inet_pton(AF_INET, "127.0.0.1", &address.sin_addr)
    return withUnsafePointer(to: &address) { pointer in
        pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0 }
    }
}

@Suite("HTTP server over a real socket")
struct HTTPServerTests {
    @Test func answersARequestWithQueryAndHeaders() async throws {
        let server = try startServer()
        #expect(server.port > 0)
        let response = try await httpRequest(port: server.port, path: "/v1/things?limit=5&status=started", headers: ["X-Trace": "abc"])
        #expect(response.status == 200)
        let json = try #require(response.json)
        #expect(json["method"] as? String == "GET")
        #expect(json["path"] as? String == "/v1/things")
        #expect((json["query"] as? [String: String]) == ["limit": "5", "status": "started"])
        #expect((json["headers"] as? [String: String])?["x-trace"] == "abc")
        #expect((json["remote"] as? String)?.hasPrefix("127.0.0.1:") == true)
        await server.shutdown()
    }

    @Test func anImmediateHandlerAnswersOnTheServersThreadOutsideAnyTask() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, immediate: { request in
            let inTask = withUnsafeCurrentTask { $0 != nil }
            let text = "\(request.method) \(request.path) \(request.body.count) in-task=\(inTask)"
            return HTTPResponse(status: 201, contentType: "text/plain", body: Data(text.utf8))
        })
        try server.start()
        let posted = try await httpRequest(port: server.port, method: "POST", path: "/a", body: Data(repeating: 7, count: 900))
        #expect(posted.status == 201)
        #expect(posted.text == "POST /a 900 in-task=false")
        await server.shutdown()
    }

    @Test func bodySplitAcrossReadsIsAssembled() async throws {
        let server = try startServer()
        let body = Data((0..<900).map { UInt8($0 % 251) })
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.async { c in
            try c.write("PUT /upload HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.count)\r\n\r\n")
            for start in stride(from: 0, to: body.count, by: 300) {
                Thread.sleep(forTimeInterval: 0.05)
                try c.write(body.subdata(in: start..<min(start + 300, body.count)))
            }
            return try c.readResponse()
        }
        let json = try #require(response.json)
        #expect(json["bodyLength"] as? Int == 900)
        #expect((json["bodySHA"] as? NSNumber)?.uint64Value == fnv(body))
        await server.shutdown()
    }

    @Test func chunkedBodyIsAssembled() async throws {
        let server = try startServer()
        let connection = try RawHTTPConnection(port: server.port)
        let response = try await connection.async { c in
            try c.write("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n")
            Thread.sleep(forTimeInterval: 0.05)
            try c.write("6\r\n world\r\n0\r\n\r\n")
            return try c.readResponse()
        }
        #expect(response.json?["bodyLength"] as? Int == 11)
        #expect((response.json?["bodySHA"] as? NSNumber)?.uint64Value == fnv(Data("hello world".utf8)))
        await server.shutdown()
    }

    @Test func oversizedBodyGets413WithoutReachingTheHandler() async throws {
        let calls = Lock(0)
        let server = try startServer(maxBody: 100) { request in
            calls.withLock { $0 += 1 }
            return await echo(request)
        }
        let declared = try await httpRequest(port: server.port, method: "POST", path: "/big", body: Data(count: 101))
        #expect(declared.status == 413)
        let connection = try RawHTTPConnection(port: server.port)
        let chunked = try await connection.async { c in
            try c.write("POST /big HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
            try c.write("40\r\n" + String(repeating: "a", count: 64) + "\r\n")
            try c.write("40\r\n" + String(repeating: "b", count: 64) + "\r\n0\r\n\r\n")
            return try c.readResponse()
        }
        #expect(chunked.status == 413)
        let exact = try await httpRequest(port: server.port, method: "POST", path: "/ok", body: Data(count: 100))
        #expect(exact.status == 200)
        #expect(calls.withLock { $0 } == 1)
        await server.shutdown()
    }

    @Test func aRouteMayTakeALargerBodyThanTheRest() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.maxBodyBytes = 100
        configuration.bodyLimit = { method, path in method == "PUT" && path == "/large" ? 1_000 : 100 }
        let server = HTTPServer(configuration: configuration, refusal: { refusal in
            guard case .bodyTooLarge(let limit) = refusal else { return HTTPServer.defaultRefusal(refusal) }
            return HTTPResponse(status: 413, contentType: "text/plain", body: Data("limit \(limit)".utf8))
        }, handler: echo)
        try server.start()
        let large = try await httpRequest(port: server.port, method: "PUT", path: "/large", body: Data(count: 900))
        #expect(large.status == 200)
        let tooLarge = try await httpRequest(port: server.port, method: "PUT", path: "/large", body: Data(count: 1_001))
        #expect(tooLarge.status == 413 && tooLarge.text == "limit 1000")
        let elsewhere = try await httpRequest(port: server.port, method: "POST", path: "/large", body: Data(count: 101))
        #expect(elsewhere.status == 413 && elsewhere.text == "limit 100")
        await server.shutdown()
    }

    @Test func keepAliveCarriesSeveralRequests() async throws {
        let server = try startServer()
        let connection = try RawHTTPConnection(port: server.port)
        let statuses = try await connection.async { c -> [Int] in
            var statuses: [Int] = []
            for i in 0..<5 {
                try c.write("POST /k\(i) HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
                let response = try c.readResponse()
                statuses.append(response.status)
            }
            return statuses
        }
        #expect(statuses == [200, 200, 200, 200, 200])
        await server.shutdown()
    }

    @Test func manyConcurrentRequestsAreAllAnswered() async throws {
        let server = try startServer { request in
            try? await Task.sleep(for: .milliseconds(20))
            return HTTPResponse(status: 200, contentType: "text/plain", body: Data(request.path.utf8))
        }
        let paths = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<64 {
                group.addTask { try await httpRequest(port: server.port, path: "/r/\(i)").text }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(paths == Set((0..<64).map { "/r/\($0)" }))
        await server.shutdown()
    }

    @Test func shutdownFinishesRequestsInFlightAndStopsAccepting() async throws {
        let started = Lock(false)
        let server = try startServer { _ in
            started.withLock { $0 = true }
            try? await Task.sleep(for: .milliseconds(300))
            return HTTPResponse(status: 200, contentType: "text/plain", body: Data("finished".utf8))
        }
        let port = server.port
        // On the wire before the wait: sent from a task instead, the request could
        // still be waiting for a thread of the concurrency pool when the wait ends.
        let inFlight = try sendRequest(port: port, path: "/slow")
        #expect(await eventually { started.withLock { $0 } })
        // A grace far longer than the request needs, however slow the machine: the
        // shutdown returns as soon as the request has finished.
        await server.shutdown(gracePeriod: TestTime.scaled(.seconds(60)))
        let response = try await inFlight.value
        #expect(response.status == 200)
        #expect(response.text == "finished")
        // The port is free again: nothing holds it. (A connection attempt would not
        // tell: another test's server may have taken the port by then.)
        #expect(await eventually { portIsFree(port) })
    }

    @Test func aRequestStillRunningAtTheEndOfTheGraceIsAnswered503() async throws {
        let started = Lock(false)
        // The handler returns only after the test has its answer: still running at
        // the end of the grace by construction, however long the test takes to get
        // there.
        let gates = Gates()
        let server = try startServer { _ in
            started.withLock { $0 = true }
            await gates.wait(0)
            return HTTPResponse(status: 200, contentType: "text/plain", body: Data("too late".utf8))
        }
        let port = server.port
        // On the wire before the wait: sent from a task instead, the request could
        // still be waiting for a thread of the concurrency pool when the wait ends.
        let inFlight = try sendRequest(port: port, path: "/slow")
        #expect(await eventually { started.withLock { $0 } })
        await server.shutdown(gracePeriod: .milliseconds(50))
        let response = try await inFlight.value
        gates.open(0)
        #expect(response.status == 503)
        #expect(response.headers["retry-after"] == "1")
        #expect(await eventually { portIsFree(port) })
    }

    @Test func aServerReleasedWithoutShutdownStops() async throws {
        var server: HTTPServer? = try startServer()
        let port = try #require(server?.port)
        #expect(try await httpRequest(port: port, path: "/alive").status == 200)
        server = nil
        #expect(await eventually { portIsFree(port) })
    }

    @Test func secondStartIsRefusedAndBusyPortIsReported() async throws {
        let server = try startServer()
        #expect(throws: HTTPServerError.self) { try server.start() }
        var configuration = HTTPServerConfiguration()
        configuration.port = server.port
        let clash = HTTPServer(configuration: configuration, handler: echo)
        let error = #expect(throws: HTTPServerError.self) { try clash.start() }
        #expect(error?.code == .bind)
        #expect(error?.message.contains("\(server.port)") == true)
        await server.shutdown()
    }
}

@Suite("Router")
struct RouterTests {
    func router() -> Router {
        var router = Router()
        let answer: (String) -> Router.Handler = { name in
            { _, parameters in
                HTTPResponse(status: 200, contentType: "text/plain", body: Data("\(name) \(parameters["app_id"] ?? "-") \(parameters["device_id"] ?? "-")".utf8))
            }
        }
        router.add("GET", "/v1/apps", answer("list"))
        router.add("GET", "/v1/apps/{app_id}", answer("get"))
        router.add("PATCH", "/v1/apps/{app_id}", answer("patch"))
        router.add("PUT", "/v1/apps/{app_id}/devices/{device_id}", answer("device"))
        router.add("GET", "/v1/apps/special", answer("special"))
        return router
    }

    func run(_ method: String, _ path: String) async -> String {
        switch router().match(method: method, path: path) {
        case .found(let handler, let parameters, _):
            return String(decoding: await handler(HTTPRequest(method: method, path: path), parameters).body, as: UTF8.self)
        case .methodNotAllowed(let allowed, let pattern):
            return "405 \(allowed.joined(separator: ",")) \(pattern)"
        case .notFound:
            return "404"
        }
    }

    @Test func matchesLiteralAndParameterSegments() async {
        #expect(await run("GET", "/v1/apps") == "list - -")
        #expect(await run("GET", "/v1/apps/") == "list - -")
        #expect(await run("GET", "/v1/apps/a1") == "get a1 -")
        #expect(await run("PUT", "/v1/apps/a1/devices/d9") == "device a1 d9")
        #expect(await run("GET", "/v1/apps/special") == "special - -")
    }

    @Test func wrongMethodAndUnknownPath() async {
        #expect(await run("DELETE", "/v1/apps/a1") == "405 GET,HEAD,PATCH /v1/apps/{app_id}")
        #expect(await run("POST", "/v1/apps/special") == "405 GET,HEAD,PATCH /v1/apps/special")
        #expect(await run("GET", "/v1/nothing") == "404")
        #expect(await run("GET", "/v1/apps/a1/devices") == "404")
        #expect(await run("PUT", "/v1/apps//devices/d") == "404")
    }

    /// Leading slashes go, one trailing slash goes, every other slash splits, and a
    /// segment is matched as the text it is (any characters, empty kept).
    @Test func pathsSplitAtEverySlashBetweenTheirEnds() async {
        #expect(await run("GET", "//v1/apps/a1") == "get a1 -")
        #expect(await run("GET", "/v1/apps/é🇫🇷") == "get é🇫🇷 -")
        #expect(await run("GET", "/v1/apps/a1//") == "404")
        #expect(await run("GET", "/") == "404")
        #expect(await run("GET", "") == "404")
        #expect(await run("PUT", "/v1/apps/a 1/devices/d%2F9/") == "device a 1 d%2F9")
    }

    @Test func headFindsTheGetRoute() async {
        #expect(await run("HEAD", "/v1/apps/a1") == "get a1 -")
        #expect(await run("HEAD", "/v1/apps/special") == "special - -")
        #expect(await run("HEAD", "/v1/apps/a1/devices/d9") == "405 PUT /v1/apps/{app_id}/devices/{device_id}")
        #expect(await run("HEAD", "/v1/nothing") == "404")
    }

    @Test func reportsThePatternNotThePath() {
        guard case .found(_, _, let pattern) = router().match(method: "PUT", path: "/v1/apps/x/devices/y") else {
            Issue.record("no match")
            return
        }
        #expect(pattern == "/v1/apps/{app_id}/devices/{device_id}")
    }
}
