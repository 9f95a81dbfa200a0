import Foundation
import HTTP2
import HTTPClient
import HTTPServer
import IsletTesting
import Simulators
import Testing

/// The threads of this process that Islet's own parts start (event loops, database,
/// checkpoint and delivery threads, libmicrohttpd's workers), by name.
func isletThreads() -> [String: Int] {
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/task")) ?? []
    var counts: [String: Int] = [:]
    for task in tasks {
        guard let name = try? String(contentsOfFile: "/proc/self/task/\(task)/comm", encoding: .utf8) else { continue }
        let trimmed = name.trimmingCharacters(in: .whitespacesAndNewlines)
        if trimmed.hasPrefix("islet-") || trimmed.hasPrefix("MHD-") { counts[trimmed, default: 0] += 1 }
    }
    return counts
}

/// Every part that starts threads stops them: after a stop and a release the count
/// of each kind of thread is where it was. Counting the threads of the process is
/// exact only when nothing else runs in it, so these tests run alone, in a process
/// of their own (`make test` runs them after the rest, with ISLET_THREAD_CENSUS=1).
@Suite(
    "Threads: every part stops what it starts", .serialized,
    .enabled(if: ProcessInfo.processInfo.environment["ISLET_THREAD_CENSUS"] == "1", "runs alone: make test runs it"))
struct ThreadCensusTests {
    /// Runs `body`, then waits for the census to return to what it was before.
    func expectThreadsReturn(_ body: () async throws -> Void) async throws {
        let before = isletThreads()
        try await body()
        let returned = await eventually { isletThreads() == before }
        #expect(returned, "threads before: \(before), after: \(isletThreads())")
    }

    @Test func anHTTP2ServerAndClient() async throws {
        try await expectThreadsReturn {
            var configuration = HTTP2ServerConfiguration()
            configuration.threads = 3
            let server = try HTTP2Server(configuration: configuration, delegate: CensusEcho())
            try server.start()
            let client = try HTTP2Client(configuration: HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: nil))
            #expect(try await client.send(HTTP2Request(path: "/census")).status == 200)
            // Threads name themselves once they run: waited for, not counted at once.
            #expect(await eventually { (isletThreads()["islet-h2srv-0"] ?? 0) >= 1 }, "threads: \(isletThreads())")
            await client.shutdown()
            await server.shutdown()
        }
    }

    @Test func anHTTPServer() async throws {
        try await expectThreadsReturn {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            configuration.threads = 2
            let server = HTTPServer(configuration: configuration) { _ in HTTPResponse(status: 204) }
            try server.start()
            #expect(try await httpRequest(port: server.port, path: "/").status == 204)
            await server.shutdown()
        }
    }

    @Test func anOutboundHTTPClient() async throws {
        try await expectThreadsReturn {
            var serverConfiguration = HTTPServerConfiguration()
            serverConfiguration.port = 0
            let server = HTTPServer(configuration: serverConfiguration, immediate: { _ in HTTPResponse(status: 204) })
            try server.start()
            var configuration = HTTPClientConfiguration()
            configuration.allowPrivateAddresses = true
            let client = try HTTPClient(configuration: configuration)
            let result = await client.send(OutboundRequest(url: "http://127.0.0.1:\(server.port)/hook", body: Data("{}".utf8)))
            #expect((try? result.get().status) == 204)
            #expect(await eventually { (isletThreads()["islet-http-out"] ?? 0) == 1 }, "threads: \(isletThreads())")
            await client.shutdown()
            await server.shutdown()
        }
    }

    @Test func anHTTPServerWithAQuietStream() async throws {
        try await expectThreadsReturn {
            var configuration = HTTPServerConfiguration()
            configuration.port = 0
            let server = HTTPServer(configuration: configuration) { _ in
                .stream { writer in
                    writer.write(Data("data: one\n\n".utf8))
                    while !(await writer.closed(within: .seconds(60))) {}
                }
            }
            try server.start()
            let connection = try RawHTTPConnection(port: server.port)
            let event = try await connection.async { c in
                try c.write("GET /events HTTP/1.1\r\nHost: x\r\n\r\n")
                _ = try c.readResponseHead()
                return try c.readChunkedBody(through: "\n\n")
            }
            #expect(event == "data: one\n\n")
            // The quiet stream's socket is watched for a hang-up by a thread of its own.
            #expect(await eventually { (isletThreads()["islet-http-hup"] ?? 0) == 1 }, "threads: \(isletThreads())")
            await server.shutdown()
        }
    }

    @Test func aSimulator() async throws {
        try await expectThreadsReturn {
            var options = APNsSimulatorOptions()
            options.port = 0
            options.inspectPort = 0
            options.threads = 2
            let simulator = try APNsSimulator(options: options)
            let ports = try simulator.start()
            #expect(try await httpRequest(port: try #require(ports.inspect), path: "/pushes").status == 200)
            await simulator.shutdown()
        }
    }

    @Test func aWholeServerThatSentPushes() async throws {
        try await expectThreadsReturn {
            try await ServerHarness.with { h in
                let app = try await h.createApp()
                try await h.registerStartable(app, "phone-1", userID: "user-1")
                #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
                let pushes = try await h.settledPushes(app, "order-1", count: 1)
                #expect(pushes.first?["status"]?.stringValue == "sent")
                // Not vacuous: the server's own threads ran (and named themselves).
                let running = await eventually { (isletThreads()["islet-db"] ?? 0) >= 1 && (isletThreads()["islet-delivery"] ?? 0) >= 1 }
                #expect(running, "threads: \(isletThreads())")
            }
        }
    }
}

/// Answers 200 to everything.
final class CensusEcho: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(status: 200))
    }
}
