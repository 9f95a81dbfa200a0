import Foundation
import HTTPServer
import IsletSync
import IsletTesting
import Testing

/// Numbered gates that a test opens and a producer waits at: the producer's next
/// step happens after the test has seen the last one, by construction, not by sleeps.
final class Gates: Sendable {
    private let state = Lock<(opened: Set<Int>, waiting: [Int: [CheckedContinuation<Void, Never>]])>(([], [:]))

    /// Opens gate `number`, letting through whoever waits at it, now or later.
    func open(_ number: Int) {
        let waiting = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.opened.insert(number)
            return s.waiting.removeValue(forKey: number) ?? []
        }
        for waiter in waiting { waiter.resume() }
    }

    /// Waits until gate `number` is open.
    func wait(_ number: Int) async {
        await withCheckedContinuation { continuation in
            let open = state.withLock { s -> Bool in
                if s.opened.contains(number) { return true }
                s.waiting[number, default: []].append(continuation)
                return false
            }
            if open { continuation.resume() }
        }
    }
}

/// What the producers of a test did, by request path.
final class ProducerLog: Sendable {
    private let state = Lock<[String: String]>([:])

    func record(_ path: String, _ outcome: String) { state.withLock { $0[path] = outcome } }
    var outcomes: [String: String] { state.withLock { $0 } }
    func count(_ outcome: String) -> Int { state.withLock { $0.values.filter { $0 == outcome }.count } }
}

func eventStream(_ body: @escaping @Sendable (HTTPBodyWriter) async -> Void) -> HTTPResponse {
    .stream(headers: ["Content-Type": "text/event-stream", "Cache-Control": "no-cache"], body)
}

/// A producer that writes one event naming its path, then waits for its writer to
/// close and records how it ended.
func waitingProducer(_ path: String, _ log: ProducerLog) -> HTTPResponse {
    eventStream { writer in
        writer.write(Data("data: hello \(path)\n\n".utf8))
        while !(await writer.closed(within: .seconds(60))) {}
        log.record(path, writer.write(Data("data: late\n\n".utf8)) ? "wrote after close" : "closed")
    }
}

func streamRequest(_ path: String, close: Bool = false) -> String {
    "GET \(path) HTTP/1.1\r\nHost: x\r\nAccept: text/event-stream\r\n\(close ? "Connection: close\r\n" : "")\r\n"
}

/// Runs `body` on a thread of its own while every thread of the concurrency pool is
/// held by a task that waits, as a test waiting on a child process or a blocking
/// call holds one: what `body` needs from a server must come without the pool.
/// The pool has one thread per core; when other work holds some of them already,
/// the tasks that find none still wait their turn, and `body` runs after at most
/// `TestTime.scaled(10 s)` with the pool held as far as it could be.
func withThePoolHeld<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    let width = ProcessInfo.processInfo.activeProcessorCount
    let held = ConditionLock((entered: 0, released: false))
    for _ in 0..<width {
        Task.detached {
            held.withLockBroadcasting { $0.entered += 1 }
            // Bounded, so that a failing server cannot hold the pool for good.
            held.wait(until: { $0.released }, timeout: TestTime.scaled(.seconds(120))) { _ in }
        }
    }
    return try await runBlocking {
        defer { held.withLockBroadcasting { $0.released = true } }
        held.wait(until: { $0.entered == width }, timeout: TestTime.scaled(.seconds(10))) { _ in }
        return try body()
    }
}

@Suite("Streamed responses over a real socket")
struct StreamingTests {
    @Test func eventsArriveOneByOneAndTheConnectionIsKeptForTheNextRequest() async throws {
        let gates = Gates()
        let returned = Lock(false)
        let server = try startServer { request in
            guard request.path == "/events" else { return await echo(request) }
            return eventStream { writer in
                // Nothing is written until the client has the headers.
                await gates.wait(0)
                for number in 1...3 {
                    writer.write(Data("id: \(number)\ndata: event \(number)\n\n".utf8))
                    await gates.wait(number)
                    try? await Task.sleep(for: .milliseconds(50))
                }
                returned.withLock { $0 = true }
            }
        }
        let connection = try RawHTTPConnection(port: server.port)
        let (head, events, rest, next) = try await connection.async { c in
            try c.write(streamRequest("/events"))
            let head = try c.readResponseHead()
            gates.open(0)
            var events: [(text: String, producerReturned: Bool)] = []
            for number in 1...3 {
                let text = try c.readChunkedBody(through: "\n\n")
                events.append((text, returned.withLock { $0 }))
                gates.open(number)
            }
            let rest = try c.readChunkedBodyToEnd()
            try c.write("POST /after HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            return (head, events, rest, try c.readResponse())
        }
        #expect(head.status == 200)
        #expect(head.headers["content-type"] == "text/event-stream")
        #expect(head.headers["cache-control"] == "no-cache")
        #expect(head.headers["transfer-encoding"]?.lowercased() == "chunked")
        #expect(head.headers["content-length"] == nil)
        #expect(events.map(\.text) == (1...3).map { "id: \($0)\ndata: event \($0)\n\n" })
        // Each event arrived while the producer still ran, before it wrote the next.
        #expect(events.allSatisfy { !$0.producerReturned })
        #expect(rest.isEmpty)
        #expect(returned.withLock { $0 })
        #expect(next.status == 200)
        #expect(next.json?["path"] as? String == "/after")
        #expect(await eventually { server.openStreams == 0 })
        await server.shutdown()
    }

    @Test func anAbortedStreamEndsWithoutItsLastChunkAndTakesNoMoreWrites() async throws {
        let gates = Gates()
        let log = ProducerLog()
        let server = try startServer { request in
            eventStream { writer in
                writer.write(Data("part one\n".utf8))
                await gates.wait(1)
                writer.abort()
                // Closed: later writes are refused, and a second abort does nothing.
                log.record("/abort", writer.write(Data("late\n".utf8)) ? "wrote after abort" : "closed")
                writer.abort()
            }
        }
        let connection = try RawHTTPConnection(port: server.port)
        let (body, ended) = try await connection.async { c -> (String, Bool) in
            try c.write(streamRequest("/abort"))
            #expect(try c.readResponseHead().status == 200)
            let body = try c.readChunkedBody(through: "\n")
            gates.open(1)
            // The client never sees the body end: the connection closes in it.
            let ended = (try? c.readChunkedBodyToEnd(timeout: .seconds(30))) != nil
            return (body, ended)
        }
        #expect(body == "part one\n")
        #expect(!ended)
        #expect(await eventually { log.outcomes == ["/abort": "closed"] }, "\(log.outcomes)")
        #expect(await eventually { server.openStreams == 0 })
        await server.shutdown()
    }

    @Test func aClientThatGoesClosesTheWriterOfAQuietStreamAndOfABusyOne() async throws {
        let log = ProducerLog()
        let server = try startServer { request in
            if request.path == "/quiet" { return waitingProducer("/quiet", log) }
            return eventStream { writer in
                var written = 0
                while writer.write(Data("data: \(written)\n\n".utf8)) {
                    written += 1
                    try? await Task.sleep(for: .milliseconds(10))
                }
                log.record("/busy", writer.isClosed ? "closed" : "open")
            }
        }
        for path in ["/quiet", "/busy"] {
            let connection = try RawHTTPConnection(port: server.port)
            try await connection.async { c in
                try c.write(streamRequest(path))
                #expect(try c.readResponseHead().status == 200)
                _ = try c.readChunkedBody(through: "\n\n")
                c.hangUp()
            }
        }
        #expect(await eventually { log.outcomes == ["/quiet": "closed", "/busy": "closed"] }, "\(log.outcomes)")
        #expect(await eventually { server.openStreams == 0 })
        await server.shutdown()
    }

    @Test func shutdownEndsOpenStreamsAndTheirProducersReturn() async throws {
        let log = ProducerLog()
        let server = try startServer { request in waitingProducer(request.path, log) }
        let paths = (0..<20).map { "/s/\($0)" }
        // Each connection is opened right before its request: one opened early could
        // sit idle past the server's idle timeout on a slow (sanitized) run.
        let opened = try await runBlocking {
            try paths.map { path -> (RawHTTPConnection, String) in
                let c = try RawHTTPConnection(port: server.port)
                try c.write(streamRequest(path))
                _ = try c.readResponseHead()
                return (c, try c.readChunkedBody(through: "\n\n"))
            }
        }
        let connections = opened.map(\.0)
        let first = opened.map(\.1)
        #expect(first == paths.map { "data: hello \($0)\n\n" })
        #expect(server.openStreams == 20)
        #expect(server.activeRequests == 0)
        let done = Lock(false)
        // A grace far longer than the test's deadlines: the streams must not hold it.
        let shutdown = Task {
            await server.shutdown(gracePeriod: .seconds(600))
            done.withLock { $0 = true }
        }
        // The shutdown has ended every stream before the clients look: the shutdown
        // runs in a task of the concurrency pool, which other tests in the process
        // may hold for longer than a client's deadline.
        #expect(await eventually { log.count("closed") == 20 }, "\(log.outcomes)")
        // Every stream ends cleanly, with its last chunk.
        let ends = try await runBlocking { try connections.map { try $0.readChunkedBodyToEnd() } }
        #expect(ends == Array(repeating: "", count: 20))
        #expect(await eventually { done.withLock { $0 } })
        await shutdown.value
        #expect(portIsFree(server.port))
    }

    @Test func aThousandStreamsOnTwoThreadsAreServedAndClosed() async throws {
        let log = ProducerLog()
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.threads = 2
        let server = HTTPServer(configuration: configuration) { request in
            request.path == "/after" ? await echo(request) : waitingProducer(request.path, log)
        }
        try server.start()
        let paths = (0..<1_000).map { "/many/\($0)" }
        let connections = try paths.map { _ in try RawHTTPConnection(port: server.port) }
        // Every request goes out before any answer is read: all are open at once.
        let first = try await runBlocking {
            for (path, c) in zip(paths, connections) { try c.write(streamRequest(path)) }
            return try zip(paths, connections).map { path, c -> String in
                #expect(try c.readResponseHead().status == 200)
                return try c.readChunkedBody(through: "\n\n")
            }
        }
        #expect(first == paths.map { "data: hello \($0)\n\n" })
        #expect(server.openStreams == 1_000)
        #expect(log.outcomes.isEmpty)
        for connection in connections { connection.hangUp() }
        #expect(await eventually { log.count("closed") == 1_000 }, "\(log.outcomes.count) of 1000 producers returned")
        #expect(await eventually { server.openStreams == 0 })
        // The server still answers.
        #expect(try await httpRequest(port: server.port, path: "/after").status == 200)
        await server.shutdown()
    }

    /// Handlers and producers run on the server's own threads: with every thread of
    /// the concurrency pool held (as a test waiting on a child process holds one), an
    /// answer and a stream whose producer sleeps and waits still arrive.
    @Test func answersAndStreamsArriveWhileTheConcurrencyPoolIsHeld() async throws {
        let gates = Gates()
        let server = try startServer { request in
            guard request.path == "/events" else { return await echo(request) }
            return eventStream { writer in
                writer.write(Data("data: one\n\n".utf8))
                await gates.wait(1)
                try? await Task.sleep(for: .milliseconds(5))
                writer.write(Data("data: two\n\n".utf8))
            }
        }
        let connection = try RawHTTPConnection(port: server.port)
        let (answer, head, events, rest) = try await withThePoolHeld {
            try connection.write("POST /plain HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nhi")
            let answer = try connection.readResponse()
            try connection.write(streamRequest("/events"))
            let head = try connection.readResponseHead(timeout: .seconds(30))
            var events = [try connection.readChunkedBody(through: "\n\n")]
            gates.open(1)
            events.append(try connection.readChunkedBody(through: "\n\n"))
            return (answer, head, events, try connection.readChunkedBodyToEnd())
        }
        #expect(answer.status == 200)
        #expect(answer.json?["path"] as? String == "/plain")
        #expect(head.status == 200)
        #expect(events == ["data: one\n\n", "data: two\n\n"])
        #expect(rest.isEmpty)
        #expect(await eventually { server.openStreams == 0 })
        await server.shutdown()
    }

    @Test func aClientThatDoesNotReadHasItsStreamClosedAtTheBufferBound() async throws {
        let outcome = Lock<(written: Int, closed: Bool)?>(nil)
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        configuration.streamBufferBytes = 1 << 20
        let event = Data(repeating: UInt8(ascii: "x"), count: 16 * 1024)
        let server = HTTPServer(configuration: configuration) { _ in
            .stream { writer in
                var written = 0
                // Far beyond the bound plus what the sockets hold; a stream that is
                // never closed stops here, and the test fails.
                // Yields between writes rather than sleeping: how long a sleep lasts
                // on a busy machine is no part of the rule.
                while written < 256 << 20, writer.write(event) {
                    written += event.count
                    await Task.yield()
                }
                outcome.withLock { $0 = (written, writer.isClosed) }
            }
        }
        try server.start()
        let connection = try RawHTTPConnection(port: server.port)
        try await connection.async { c in
            try c.write(streamRequest("/firehose"))
            #expect(try c.readResponseHead().status == 200)
        }
        // The client reads nothing more until the producer has given up.
        #expect(await eventually(within: .seconds(120)) { outcome.withLock { $0 } != nil })
        let (written, closed) = try #require(outcome.withLock { $0 })
        #expect(closed)
        #expect(written >= 1 << 20)
        #expect(written < 64 << 20, "\(written) bytes were taken for a client that read none")
        // Reading now, the client gets what was on its way, then the connection
        // closes without the last chunk.
        let ended = try await connection.async { c -> Bool in
            do {
                _ = try c.readChunkedBodyToEnd()
                return true
            } catch {
                return false
            }
        }
        #expect(!ended)
        #expect(await eventually { server.openStreams == 0 })
        await server.shutdown()
    }

    @Test func aHeadRequestGetsTheHeadersWithoutRunningTheProducer() async throws {
        let log = ProducerLog()
        let server = try startServer { request in
            request.path == "/after" ? await echo(request) : waitingProducer("/head", log)
        }
        let connection = try RawHTTPConnection(port: server.port)
        let (head, next) = try await connection.async { c in
            try c.write("HEAD /events HTTP/1.1\r\nHost: x\r\n\r\n")
            let head = try c.readResponseHead()
            try c.write("GET /after HTTP/1.1\r\nHost: x\r\n\r\n")
            return (head, try c.readResponse())
        }
        #expect(head.status == 200)
        #expect(head.headers["content-type"] == "text/event-stream")
        // No body came before the next answer, and no producer ran.
        #expect(next.status == 200)
        #expect(next.json?["path"] as? String == "/after")
        #expect(log.outcomes.isEmpty)
        #expect(server.openStreams == 0)
        await server.shutdown()
    }

    @Test func anImmediateServerStreamsToo() async throws {
        var configuration = HTTPServerConfiguration()
        configuration.port = 0
        let server = HTTPServer(configuration: configuration, immediate: { _ in
            .stream(headers: ["Content-Type": "text/plain"]) { writer in
                for part in ["one ", "two ", "three"] {
                    writer.write(Data(part.utf8))
                    try? await Task.sleep(for: .milliseconds(5))
                }
            }
        })
        try server.start()
        let response = try await httpRequest(port: server.port, path: "/")
        #expect(response.status == 200)
        #expect(response.text == "one two three")
        #expect(response.headers["transfer-encoding"]?.lowercased() == "chunked")
        await server.shutdown()
    }
}
