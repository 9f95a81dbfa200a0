import IsletSync
import Foundation
import Glibc
import HTTP2
import IsletCrypto
import IsletTesting
import Synchronization
import Testing

/// Echoes each request: status from `x-status` (default 200), the body back, and
/// `x-id` recorded so tests can prove nothing was processed twice.
final class EchoDelegate: HTTP2ServerDelegate {
    let seen = Lock<[String]>([])
    let delay: Duration?

    init(delay: Duration? = nil) { self.delay = delay }

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        if let id = request.header("x-id") { seen.withLock { $0.append(id) } }
        let status = request.header("x-status").flatMap(Int.init) ?? 200
        var headers: [(name: String, value: String)] = [("x-path", request.path), ("x-method", request.method)]
        if let id = request.header("x-id") { headers.append(("x-id", id)) }
        if let size = request.header("x-response-size").flatMap(Int.init) {
            return HTTP2ServerReply(HTTP2Response(status: status, headers: headers, body: Data(repeating: 0x61, count: size)), delay: delay)
        }
        return HTTP2ServerReply(HTTP2Response(status: status, headers: headers, body: request.body), delay: delay)
    }
}

let authority = try! LocalCertificateAuthority.generate()

func makeServer(tls: Bool = true, delegate: any HTTP2ServerDelegate = EchoDelegate(), configure: (inout HTTP2ServerConfiguration) -> Void = { _ in }) throws -> HTTP2Server {
    var configuration = HTTP2ServerConfiguration()
    if tls {
        configuration.tls = TLSServerConfiguration(certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
    }
    configure(&configuration)
    let server = try HTTP2Server(configuration: configuration, delegate: delegate)
    try server.start()
    return server
}

func makeClient(port: Int, tls: Bool = true, host: String = "127.0.0.1", configure: (inout HTTP2ClientConfiguration) -> Void = { _ in }) throws -> HTTP2Client {
    var configuration = HTTP2ClientConfiguration(host: host, port: port, tls: tls ? TLSClientConfiguration(trustRootsPEM: authority.caCertificatePEM) : nil)
    configure(&configuration)
    return try HTTP2Client(configuration: configuration)
}

@Suite("HTTP/2 over real sockets")
struct HTTP2Tests {
    @Test(arguments: [true, false])
    func roundTrip(tls: Bool) async throws {
        let server = try makeServer(tls: tls)
        let client = try makeClient(port: server.port, tls: tls)
        let response = try await client.send(HTTP2Request(path: "/3/device/abc", headers: [("x-id", "1")], body: Data("{\"aps\":{}}".utf8)))
        #expect(response.status == 200)
        #expect(response.header("x-path") == "/3/device/abc")
        #expect(response.header("x-method") == "POST")
        #expect(response.body == Data("{\"aps\":{}}".utf8))
        let get = try await client.send(HTTP2Request(method: "GET", path: "/empty"))
        #expect(get.body.isEmpty)
        #expect(await client.statistics.connectionsOpened == 1)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func tenThousandConcurrentRequestsOnOneConnection() async throws {
        let delegate = EchoDelegate()
        let server = try makeServer(delegate: delegate)
        let client = try makeClient(port: server.port)
        let ids = try await withThrowingTaskGroup(of: String.self) { group in
            for i in 0..<10_000 {
                group.addTask {
                    let response = try await client.send(HTTP2Request(path: "/r", headers: [("x-id", "\(i)")], body: Data("\(i)".utf8)))
                    #expect(response.body == Data("\(i)".utf8))
                    return response.header("x-id") ?? ""
                }
            }
            return try await group.reduce(into: Set<String>()) { $0.insert($1) }
        }
        #expect(ids.count == 10_000)
        #expect(await client.statistics.connectionsOpened == 1)
        #expect(delegate.seen.withLock { $0.count } == 10_000)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func goawayInTheMiddleLosesNothingAndDuplicatesNothing() async throws {
        let delegate = EchoDelegate()
        let server = try makeServer(delegate: delegate) { $0.goawayAfterStreams = 300 }
        let client = try makeClient(port: server.port)
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for i in 0..<1_500 {
                group.addTask { try await client.send(HTTP2Request(path: "/g", headers: [("x-id", "\(i)")])).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 1_500)
        #expect(statuses.allSatisfy { $0 == 200 })
        let seen = delegate.seen.withLock { $0 }
        #expect(seen.count == 1_500)
        #expect(Set(seen).count == 1_500)
        let statistics = await client.statistics
        #expect(statistics.goawaysReceived >= 4)
        #expect(statistics.connectionsOpened >= 5)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func bodiesLargerThanTheFlowControlWindowArriveWhole() async throws {
        let server = try makeServer { $0.maxBodyBytes = 8 << 20 }
        let client = try makeClient(port: server.port)
        let body = Data((0..<(3 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
        let response = try await client.send(HTTP2Request(path: "/big", body: body))
        #expect(response.body.count == body.count)
        #expect(response.body == body)
        let download = try await client.send(HTTP2Request(path: "/down", headers: [("x-response-size", "\(5 << 20)")]))
        #expect(download.body.count == 5 << 20)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func statusesReachTheCaller() async throws {
        let server = try makeServer()
        let client = try makeClient(port: server.port)
        for status in [400, 403, 410, 429, 500, 503] {
            #expect(try await client.send(HTTP2Request(path: "/s", headers: [("x-status", "\(status)")])).status == status)
        }
        await client.shutdown()
        await server.shutdown()
    }

    @Test func oversizedHeadersAndBodiesAreRefused() async throws {
        let server = try makeServer {
            $0.maxBodyBytes = 1_000
            $0.maxHeaderListBytes = 2_000
        }
        let client = try makeClient(port: server.port)
        #expect(try await client.send(HTTP2Request(path: "/b", body: Data(count: 1_001))).status == 413)
        #expect(try await client.send(HTTP2Request(path: "/h", headers: [("x-big", String(repeating: "h", count: 3_000))])).status == 431)
        #expect(try await client.send(HTTP2Request(path: "/ok", body: Data(count: 1_000))).status == 200)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func untrustedCertificateFails() async throws {
        let server = try makeServer()
        let stranger = try LocalCertificateAuthority.generate()
        var configuration = HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: TLSClientConfiguration(trustRootsPEM: stranger.caCertificatePEM))
        configuration.connectTimeout = .seconds(2)
        let client = try HTTP2Client(configuration: configuration)
        let error = await #expect(throws: HTTP2Error.self) { try await client.send(HTTP2Request(path: "/x")) }
        #expect(error?.code == .tlsFailed)
        #expect(error?.isSafeToRetry == true)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func wrongHostNameFails() async throws {
        let server = try makeServer()
        var configuration = HTTP2ClientConfiguration(
            host: "127.0.0.1", port: server.port,
            tls: TLSClientConfiguration(trustRootsPEM: authority.caCertificatePEM, serverName: "api.push.apple.com"))
        configuration.connectTimeout = .seconds(2)
        let client = try HTTP2Client(configuration: configuration)
        let error = await #expect(throws: HTTP2Error.self) { try await client.send(HTTP2Request(path: "/x")) }
        #expect(error?.code == .tlsFailed)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func nothingListeningIsAConnectFailure() async throws {
        // Bound and never listening: refused for as long as the test runs.
        let refusing = try ReservedPort()
        let port = refusing.port
        let client = try makeClient(port: port) { $0.connectTimeout = .milliseconds(200) }
        let error = await #expect(throws: HTTP2Error.self) { try await client.send(HTTP2Request(path: "/x")) }
        #expect(error?.code == .connectFailed)
        await client.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test func aWaitingRequestFailsAtItsConnectTimeoutWhateverTheReconnectBackoff() async throws {
        // Bound and never listening: refused for as long as the test runs.
        let refusing = try ReservedPort()
        let port = refusing.port
        let client = try makeClient(port: port, tls: false) {
            $0.connectTimeout = .milliseconds(100)
            // A backoff far past the timeout: the request must not wait for it.
            $0.reconnectBackoff = .seconds(3_600)
            $0.reconnectBackoffMax = .seconds(3_600)
        }
        let outcome = await firstAnswer(within: .seconds(60)) {
            do {
                _ = try await client.send(HTTP2Request(path: "/x"))
                return "answered"
            } catch let error as HTTP2Error {
                return "\(error.code)"
            } catch {
                return "\(error)"
            }
        }
        #expect(outcome == "connectFailed")
        // Failed by its own deadline, not by a second connect attempt.
        #expect(await client.statistics.connectAttempts == 1)
        await client.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test func cancellingAWaitingCallerResetsItsStream() async throws {
        // The answer would come after 30 s: only a working cancellation ends the call
        // with CancellationError (a broken one returns the 200).
        let server = try makeServer(delegate: EchoDelegate(delay: .seconds(30)))
        let client = try makeClient(port: server.port)
        let task = Task { try await client.send(HTTP2Request(path: "/slow")) }
        try await Task.sleep(for: .milliseconds(100))
        task.cancel()
        await #expect(throws: CancellationError.self) { try await task.value }
        #expect(await client.statistics.responses == 0)
        await client.shutdown()
        await server.shutdown(gracePeriod: .milliseconds(100))
    }

    @Test func aCancelledStreamFreesItsSlotForAQueuedRequest() async throws {
        // One stream at a time: the second request waits in the queue behind the
        // slow one, and must leave as soon as the slow one is cancelled.
        let server = try makeServer(delegate: SlowPath()) { $0.maxConcurrentStreams = 1 }
        let client = try makeClient(port: server.port)
        #expect(try await client.send(HTTP2Request(path: "/warm-up")).status == 200)
        let slow = Task { try await client.send(HTTP2Request(path: "/slow")) }
        try await Task.sleep(for: .milliseconds(100))
        Task {
            try? await Task.sleep(for: .milliseconds(100))
            slow.cancel()
        }
        let outcome = await firstAnswer(within: .seconds(60)) {
            (try? await client.send(HTTP2Request(path: "/fast")).status).map { "\($0)" } ?? "failed"
        }
        #expect(outcome == "200")
        await #expect(throws: CancellationError.self) { try await slow.value }
        await client.shutdown()
        await server.shutdown(gracePeriod: .milliseconds(100))
    }

    @Test func garbageAndVanishingClientsDoNotWedgeTheServer() async throws {
        for tls in [true, false] {
            let server = try makeServer(tls: tls)
            let port = server.port
            try await runBlocking {
                // Garbage instead of a handshake or a preface.
                let junk = try RawHTTPConnection(port: port)
                try junk.write(Data((0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7919) }))
                #expect(junk.readsEndOfStream())
                // A client that sends the preface and a partial frame, then vanishes.
                let vanishing = try RawHTTPConnection(port: port)
                try vanishing.write("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\u{0}\u{0}\u{0}\u{4}")
            }
            let client = try makeClient(port: port, tls: tls)
            #expect(try await client.send(HTTP2Request(path: "/still-here")).status == 200)
            await client.shutdown()
            _ = await eventually { server.openConnections <= 1 }
            #expect(server.openConnections <= 1)
            await server.shutdown()
        }
    }

    @Test func idleConnectionsCloseAndTheNextRequestReconnects() async throws {
        let server = try makeServer()
        let client = try makeClient(port: server.port) {
            $0.idleTimeout = .milliseconds(500)
            $0.pingInterval = .milliseconds(300)
        }
        #expect(try await client.send(HTTP2Request(path: "/a")).status == 200)
        _ = await eventually { server.openConnections == 0 }
        #expect(server.openConnections == 0)
        #expect(try await client.send(HTTP2Request(path: "/b")).status == 200)
        #expect(await client.statistics.connectionsOpened == 2)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func keepAlivePingsAreAnsweredAndTheConnectionStays() async throws {
        let server = try makeServer()
        let client = try makeClient(port: server.port) { $0.pingInterval = .milliseconds(200) }
        #expect(try await client.send(HTTP2Request(path: "/a")).status == 200)
        // Idle past several ping intervals: pings go out and come back.
        #expect(await eventually { await client.statistics.pingsAnswered >= 2 })
        #expect(try await client.send(HTTP2Request(path: "/b")).status == 200)
        #expect(await client.statistics.connectionsOpened == 1)
        #expect(await client.statistics.pingsAnswered >= 1)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func aClientThatOffersNoALPNIsServedWithPriorKnowledge() async throws {
        let server = try makeServer()
        var tls = TLSClientConfiguration(trustRootsPEM: authority.caCertificatePEM)
        tls.offerALPN = false
        let client = try HTTP2Client(configuration: HTTP2ClientConfiguration(host: "127.0.0.1", port: server.port, tls: tls))
        #expect(try await client.send(HTTP2Request(path: "/no-alpn")).status == 200)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func aServerOnSeveralThreadsTakesManyConnectionsAtOnce() async throws {
        let delegate = EchoDelegate()
        let server = try makeServer(delegate: delegate) { $0.threads = 3 }
        // Rounds of many clients connecting together and leaving together, so that
        // the loops adopt and drop connections at the same moments.
        for round in 0..<5 {
            let clients = try (0..<48).map { _ in try makeClient(port: server.port) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for (c, client) in clients.enumerated() {
                    for i in 0..<4 {
                        group.addTask {
                            let id = "\(round)-\(c)-\(i)"
                            let response = try await client.send(HTTP2Request(path: "/t", headers: [("x-id", id)]))
                            #expect(response.header("x-id") == id)
                        }
                    }
                }
                try await group.waitForAll()
            }
            #expect(server.openConnections == 48)
            await withTaskGroup(of: Void.self) { group in
                for client in clients { group.addTask { await client.shutdown(gracePeriod: .zero) } }
            }
            // The server sees each close in its own time: the next round counts only
            // its own connections.
            #expect(await eventually { server.openConnections == 0 })
        }
        // Every request of every round, once (the count named apart: as one
        // expression with the macro, it took the type checker seconds).
        let requests: Int = 5 * 48 * 4
        let seen: [String] = delegate.seen.withLock { $0 }
        #expect(Set(seen).count == requests)
        await server.shutdown()
        #expect(server.openConnections == 0)
    }

    @Test func clientsSharingAThreadKeepTheirOwnConnections() async throws {
        let server = try makeServer()
        let thread = HTTP2ClientThread()
        var configuration = HTTP2ClientConfiguration(
            host: "127.0.0.1", port: server.port, tls: TLSClientConfiguration(trustRootsPEM: authority.caCertificatePEM))
        configuration.uniqueValueHeaders = ["x-id"]
        let first = try HTTP2Client(configuration: configuration, thread: thread)
        let second = try HTTP2Client(configuration: configuration, thread: thread)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (n, client) in [first, second].enumerated() {
                for i in 0..<200 {
                    group.addTask {
                        let response = try await client.send(HTTP2Request(path: "/s", headers: [("x-id", "\(n)-\(i)")], body: Data("\(i)".utf8)))
                        #expect(response.header("x-id") == "\(n)-\(i)")
                        #expect(response.body == Data("\(i)".utf8))
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(await first.statistics.connectionsOpened == 1)
        #expect(await second.statistics.connectionsOpened == 1)
        #expect(server.openConnections == 2)
        await first.shutdown()
        await second.shutdown()
        await server.shutdown()
    }

    @Test func aClientReleasedWithoutShutdownClosesItsConnectionAndSparesItsThread() async throws {
        let server = try makeServer()
        let thread = HTTP2ClientThread()
        let configuration = HTTP2ClientConfiguration(
            host: "127.0.0.1", port: server.port, tls: TLSClientConfiguration(trustRootsPEM: authority.caCertificatePEM))
        var released: HTTP2Client? = try HTTP2Client(configuration: configuration, thread: thread)
        let kept = try HTTP2Client(configuration: configuration, thread: thread)
        #expect(try await released?.send(HTTP2Request(path: "/one")).status == 200)
        #expect(try await kept.send(HTTP2Request(path: "/two")).status == 200)
        #expect(server.openConnections == 2)
        released = nil
        _ = await eventually { server.openConnections <= 1 }
        #expect(server.openConnections == 1)
        // Past the released connection's housekeeping tick, the thread still serves.
        try await Task.sleep(for: .milliseconds(1_200))
        #expect(try await kept.send(HTTP2Request(path: "/three")).status == 200)
        await kept.shutdown()
        await server.shutdown()
    }

    @Test func answersLeaveBeforeAWholeReadIsParsed() async throws {
        // Requests queued on the client's own thread leave in one write, and reach
        // the server in reads far larger than the slice it parses at a time; the
        // answers to the first slices are written while the rest is parsed.
        let probe = WriteCounter()
        let server = try makeServer(delegate: probe)
        let client = try makeClient(port: server.port)
        #expect(try await client.send(HTTP2Request(path: "/warm-up")).status == 200)
        let count = 400
        let done = Atomic<Int>(0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            client.schedule(after: .zero) {
                for i in 0..<count {
                    client.send(HTTP2Request(path: "/b", headers: [("x-id", "\(i)")])) { result in
                        #expect((try? result.get().status) == 200)
                        if done.wrappingAdd(1, ordering: .relaxed).newValue == count { continuation.resume() }
                    }
                }
            }
        }
        #expect(probe.handled.load(ordering: .relaxed) == count + 1)
        #expect(probe.largestRun.load(ordering: .relaxed) < count)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func headerFieldsKeepOrderRepeatsAndBytes() {
        let pairs: [(name: String, value: String)] = [
            ("apns-id", "5e1a7c2d-0000-4000-8000-000000000001"), ("x-empty", ""), ("", "no name"),
            ("x-repeat", "one"), ("x-repeat", "two"), ("x-utf8", "café ☕"), ("authorization", "bearer abc"),
        ]
        var fields = HTTP2HeaderFields(pairs)
        #expect(fields.count == pairs.count)
        #expect(fields.pairs.map(\.name) == pairs.map(\.name))
        #expect(fields.pairs.map(\.value) == pairs.map(\.value))
        #expect(fields.byteCount == pairs.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count })
        #expect(fields.first("x-repeat") == "one")
        #expect(fields.firstIndex(of: "x-repeat") == 3)
        #expect(fields.first("x-empty") == "")
        #expect(fields.first("x-missing") == nil)
        #expect(fields.field(5, isNamed: "x-utf8"))
        #expect(fields.withValue(at: 5) { Array($0) } == Array("café ☕".utf8))
        #expect(fields.withName(at: 2) { $0.count } == 0)
        Array("x-bytes".utf8).withUnsafeBytes { name in
            Array("raw".utf8).withUnsafeBytes { value in fields.append(name: name, value: value) }
        }
        #expect(fields.count == pairs.count + 1)
        #expect(fields.name(at: pairs.count) == "x-bytes")
        #expect(fields.value(at: pairs.count) == "raw")
        #expect(HTTP2HeaderFields().isEmpty)
        #expect(HTTP2HeaderFields().first("apns-id") == nil)
    }

    @Test func anExchangeWritesItsOwnFieldsAndReadsTheAnswerAsBytes() async throws {
        let server = try makeServer(delegate: FieldEcho())
        let client = try makeClient(port: server.port)
        let long = String(repeating: "v", count: 3_000)  // past the head's first buffer
        let exchange = RecordingExchange(body: Data("payload".utf8)) { head in
            head.path("/3/device/", "abc123")
            head.field("x-id", "5e1a7c2d-0000-4000-8000-000000000001", neverIndexed: true)
            head.field("x-priority", 10)
            head.field("x-lowest", Int.min)
            head.field("x-zero", 0)
            head.field("x-long", long)
            head.field("x-utf8", "café ☕")
        }
        let first = await exchange.send(on: client)
        #expect(try first.status.get() == 200)
        let echoed = Dictionary(first.fields, uniquingKeysWith: { a, _ in a })
        #expect(echoed["x-method"] == "POST")
        #expect(echoed["x-path"] == "/3/device/abc123")
        #expect(echoed["echo-x-id"] == "5e1a7c2d-0000-4000-8000-000000000001")
        #expect(echoed["echo-x-priority"] == "10")
        #expect(echoed["echo-x-lowest"] == "-9223372036854775808")
        #expect(echoed["echo-x-zero"] == "0")
        #expect(echoed["echo-x-long"] == long)
        #expect(echoed["echo-x-utf8"] == "café ☕")
        #expect(first.body == Data("payload".utf8))
        // Completed, it can go again: a new stream, the body read from its start,
        // and nothing of the first answer left over.
        let second = await exchange.send(on: client)
        #expect(try second.status.get() == 200)
        #expect(second.fields.map(\.name) == first.fields.map(\.name))
        #expect(second.body == Data("payload".utf8))
        #expect(exchange.starts == 2)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func anExchangeWithoutMethodOrPathIsAPostToTheRoot() async throws {
        let server = try makeServer(tls: false, delegate: FieldEcho())
        let client = try makeClient(port: server.port, tls: false)
        let bare = await RecordingExchange { _ in }.send(on: client)
        #expect(bare.fields.first { $0.name == "x-method" }?.value == "POST")
        #expect(bare.fields.first { $0.name == "x-path" }?.value == "/")
        #expect(bare.body.isEmpty)
        let get = await RecordingExchange { head in
            head.field("x-first", "1")
            head.method("GET")
            head.path("/items?page=2")
        }.send(on: client)
        #expect(get.fields.first { $0.name == "x-method" }?.value == "GET")
        #expect(get.fields.first { $0.name == "x-path" }?.value == "/items?page=2")
        #expect(get.fields.first { $0.name == "echo-x-first" }?.value == "1")
        await client.shutdown()
        await server.shutdown()
    }

    @Test func anExchangeThatCannotConnectCompletesWithTheFailure() async throws {
        // Bound and never listening: refused for as long as the test runs.
        let refusing = try ReservedPort()
        let port = refusing.port
        let client = try makeClient(port: port) { $0.connectTimeout = .milliseconds(200) }
        let exchange = RecordingExchange { head in head.path("/x") }
        let answer = await exchange.send(on: client)
        #expect(throws: HTTP2Error.self) { try answer.status.get() }
        #expect((try? answer.status.get()) == nil)
        #expect(exchange.starts == 0)
        await client.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test func libraryVersion() {
        let parts = HTTP2Library.version.split(separator: ".")
        #expect(parts.count == 3)
        #expect(parts.allSatisfy { Int($0) != nil })
    }
}

/// What `work` answers, or "still waiting" when it has not answered within
/// `limit`: a test then fails on the outcome instead of hanging.
func firstAnswer(within limit: Duration, _ work: @escaping @Sendable () async -> String) async -> String {
    await withTaskGroup(of: String.self) { group in
        group.addTask { await work() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return "still waiting"
        }
        let first = await group.next()!
        group.cancelAll()
        return first
    }
}

/// Answers `/slow` after 30 s and everything else at once.
final class SlowPath: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(status: 200), delay: request.path == "/slow" ? .seconds(30) : nil)
    }
}

/// Counts requests handled between two writes of their connection: the longest
/// run shows whether answers left while a read was still being parsed.
final class WriteCounter: HTTP2ServerDelegate {
    let handled = Atomic<Int>(0)
    let largestRun = Atomic<Int>(0)
    private let last = Lock<(writes: Int, run: Int)>((-1, 0))

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        handled.wrappingAdd(1, ordering: .relaxed)
        let run = last.withLock { last -> Int in
            last = last.writes == connection.writes ? (last.writes, last.run + 1) : (connection.writes, 1)
            return last.run
        }
        largestRun.store(max(largestRun.load(ordering: .relaxed), run), ordering: .relaxed)
        return HTTP2ServerReply(HTTP2Response(status: 200))
    }
}

/// Answers 200 with every regular field of the request as `echo-<name>`, the
/// request's `:method` and `:path` as `x-method` and `x-path`, and its body.
final class FieldEcho: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        var headers: [(name: String, value: String)] = [("x-method", request.method), ("x-path", request.path)]
        for (name, value) in request.headers { headers.append(("echo-\(name)", value)) }
        return HTTP2ServerReply(HTTP2Response(status: 200, headers: headers, body: request.body))
    }
}

/// An exchange that writes what `write` says and gathers the answer's fields and
/// body as text, for tests of `HTTP2Exchange`.
final class RecordingExchange: HTTP2Exchange, @unchecked Sendable {
    struct Answer: Sendable {
        var status: Result<Int, any Error>
        var fields: [(name: String, value: String)]
        var body: Data
    }

    private let write: @Sendable (HTTP2RequestHead) -> Void
    private var fields: [(name: String, value: String)] = []
    private var answerBody = Data()
    private var done: CheckedContinuation<Answer, Never>?
    /// Streams the exchange went out on.
    private(set) var starts = 0

    init(body: Data = Data(), write: @escaping @Sendable (HTTP2RequestHead) -> Void) {
        self.write = write
        super.init(body: body)
    }

    func send(on client: HTTP2Client) async -> Answer {
        await withCheckedContinuation { continuation in
            done = continuation
            client.send(self)
        }
    }

    override func writeHead(_ head: HTTP2RequestHead) { write(head) }

    override func attemptStarted() {
        starts += 1
        fields = []
        answerBody = Data()
    }

    override func answerField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        fields.append((String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)))
    }

    override func answerData(_ bytes: UnsafeRawBufferPointer) {
        answerBody.append(contentsOf: bytes)
    }

    override func completed(_ outcome: Result<Int, any Error>) {
        let continuation = done
        done = nil
        continuation?.resume(returning: Answer(status: outcome, fields: fields, body: answerBody))
    }
}
