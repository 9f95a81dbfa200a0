internal import CNGHTTP2
import Foundation
import Synchronization

/// How an HTTP/2 client connects and behaves.
public struct HTTP2ClientConfiguration: Sendable {
    /// The server's host name or address.
    public var host: String
    /// The server's port.
    public var port: Int
    /// TLS settings; `nil` speaks cleartext h2c with prior knowledge.
    public var tls: TLSClientConfiguration?
    /// How long a request may wait for a connection before failing.
    public var connectTimeout: Duration = .seconds(10)
    /// Send a PING after this long without frames from the server; `nil` never.
    public var pingInterval: Duration? = .seconds(60)
    /// Close the connection when a PING is not answered within this time.
    public var pingTimeout: Duration = .seconds(10)
    /// Close the connection after this long with no stream open; `nil` keeps it.
    public var idleTimeout: Duration?
    /// Most streams this client opens at once, whatever the server allows.
    public var maxConcurrentStreams = 1_000
    /// Request header names whose values differ on every request (ids): sent as
    /// literals HPACK never indexes.
    public var uniqueValueHeaders: [String] = []
    /// First wait before reconnecting after a failed connect; doubles up to
    /// `reconnectBackoffMax`, with full jitter.
    public var reconnectBackoff: Duration = .milliseconds(100)
    /// Longest wait between connect attempts.
    public var reconnectBackoffMax: Duration = .seconds(10)
    /// Times a request refused by a GOAWAY or REFUSED_STREAM (never processed by the
    /// server) is sent again before it fails. Refused requests keep their place at
    /// the head of the queue, so under a GOAWAY storm each one is refused only while
    /// older ones are ahead of it.
    public var maxRefusedRetries = 100
    /// Draws the jitter of a reconnect backoff: a value in `0...ceiling`. By default
    /// the system's generator; a test passes a seeded one to make delays repeatable.
    public var jitter: @Sendable (_ ceiling: Double) -> Double = { Double.random(in: 0...$0) }

    /// A client for `host:port`, over TLS with the system's roots.
    public init(host: String, port: Int, tls: TLSClientConfiguration? = TLSClientConfiguration()) {
        self.host = host
        self.port = port
        self.tls = tls
    }

    /// The wait before the next connect attempt after `failedAttempts` failed ones in
    /// a row: `reconnectBackoff` doubled per failure up to `reconnectBackoffMax`, with
    /// full jitter drawn by `jitter`.
    public func reconnectDelay(afterFailures failedAttempts: Int) -> Double {
        let ceiling = min(
            reconnectBackoffMax.seconds, reconnectBackoff.seconds * pow(2, Double(min(max(0, failedAttempts - 1), 20))))
        return jitter(max(0, ceiling))
    }
}

/// Counters a client keeps, for tests and metrics.
public struct HTTP2ClientStatistics: Sendable, Equatable {
    /// Connections attempted, established or not.
    public var connectAttempts = 0
    /// Connections established.
    public var connectionsOpened = 0
    /// GOAWAY frames received.
    public var goawaysReceived = 0
    /// Requests sent again because a GOAWAY or REFUSED_STREAM said the server never
    /// processed them.
    public var requestsRetried = 0
    /// Requests answered.
    public var responses = 0
    /// Keep-alive PINGs the server acknowledged.
    public var pingsAnswered = 0
    /// The server's SETTINGS_MAX_CONCURRENT_STREAMS on the current connection, as last
    /// seen (0 before any connection).
    public var peerMaxConcurrentStreams = 0
}

/// An event-loop thread that several `HTTP2Client`s can share, so that their
/// connections are served by one thread rather than one thread each. It ends once
/// the last client using it is gone.
public final class HTTP2ClientThread: Sendable {
    let loop: EventLoop

    /// Starts the thread.
    public init(name: String = "islet-h2-client") {
        loop = EventLoop(name: name)
    }

    /// Whether the caller runs on this thread (in a completion of one of its
    /// clients, say).
    public var isCurrent: Bool { loop.inLoop }

    deinit {
        loop.stop()
    }
}

/// An HTTP/2 client over one connection at a time: many concurrent streams up to the
/// server's limit, requests queued (and their callers waiting) beyond it, PING
/// keep-alive, and transparent reconnection. Requests the server refused in a GOAWAY
/// are sent again on a new connection, never lost.
public final class HTTP2Client: Sendable {
    /// The configuration it was made with.
    public let configuration: HTTP2ClientConfiguration
    private let thread: HTTP2ClientThread
    private var loop: EventLoop { thread.loop }
    private let core: ClientCore
    private let nextID = Atomic<UInt64>(1)

    /// Creates a client; it connects on the first request. It runs on `thread`, or
    /// on a thread of its own when none is given.
    public init(configuration: HTTP2ClientConfiguration, thread: HTTP2ClientThread? = nil) throws(HTTP2Error) {
        self.configuration = configuration
        let tls = try configuration.tls.map { configuration throws(HTTP2Error) in try TLSContext.client(configuration) }
        self.thread = thread ?? HTTP2ClientThread()
        self.core = ClientCore(configuration: configuration, loop: self.thread.loop, tls: tls)
    }

    deinit {
        // The thread may go on serving other clients: this one's connections close
        // now, while the core they report to is still held.
        let core = self.core
        loop.execute { core.abandon() }
    }

    /// Sends `request` and waits for the whole response. Throws `HTTP2Error`, or
    /// `CancellationError` when the calling task is cancelled (a queued request is
    /// dropped; one in flight is reset).
    public func send(_ request: HTTP2Request) async throws -> HTTP2Response {
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let core = self.core
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let pending = PendingRequest(request: request) { continuation.resume(with: $0) }
                pending.prepare(id: id)
                loop.execute { core.enqueue(pending) }
            }
        } onCancel: {
            loop.execute { core.cancel(id) }
        }
    }

    /// Sends `request` and calls `completion` with the whole response or the
    /// failure, on the client's event-loop thread (keep it short). For callers that
    /// keep many requests in flight without a task each.
    public func send(_ request: HTTP2Request, completion: @escaping @Sendable (Result<HTTP2Response, any Error>) -> Void) {
        send(PendingRequest(request: request, completion: completion))
    }

    /// Sends `exchange`, which writes its own request and reads its own answer (see
    /// `HTTP2Exchange`); its `completed` is called on the client's event-loop thread.
    /// It must not be in flight already.
    public func send(_ exchange: HTTP2Exchange) {
        exchange.prepare(id: nextID.wrappingAdd(1, ordering: .relaxed).oldValue)
        let core = self.core
        if loop.inLoop {
            // Sent from a completion on this client's own thread: queued at once, so
            // that it can leave with the next slice of answers read.
            core.enqueue(exchange)
        } else {
            loop.execute { core.enqueue(exchange) }
        }
    }

    /// Whether the caller is this client's completion of an answer (on its thread):
    /// a request sent from there may as well go on the connection that just freed a
    /// stream.
    public var isAnswering: Bool {
        loop.inLoop && loop.answering === core
    }

    /// Runs `body` on the client's event-loop thread after `delay` (for callers that
    /// schedule their own retries next to their requests).
    public func schedule(after delay: Duration, _ body: @escaping @Sendable () -> Void) {
        let loop = self.loop
        loop.execute { loop.schedule(after: delay, body) }
    }

    /// The counters so far.
    public var statistics: HTTP2ClientStatistics {
        get async {
            let core = self.core
            return await withCheckedContinuation { continuation in
                loop.execute { continuation.resume(returning: core.statistics) }
            }
        }
    }

    /// Fails queued requests, lets requests in flight finish for up to
    /// `gracePeriod`, then closes the connection.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        let core = self.core
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { core.shutdown(gracePeriod: gracePeriod) { continuation.resume() } }
        }
    }
}

/// A request sent with `HTTP2Client.send(_:completion:)`: an exchange that writes
/// an `HTTP2Request` and gathers the answer into an `HTTP2Response`.
///
/// `@unchecked Sendable`: `HTTP2Exchange`'s rule; the answer gathered here is
/// touched only on the client's loop thread until `completion` hands it over.
final class PendingRequest: HTTP2Exchange, @unchecked Sendable {
    let request: HTTP2Request
    private let completion: @Sendable (Result<HTTP2Response, any Error>) -> Void
    /// The answer's header fields so far.
    private var answerHeaders: [(name: String, value: String)] = []
    /// The answer's body so far.
    private var answerBody = Data()

    init(request: HTTP2Request, completion: @escaping @Sendable (Result<HTTP2Response, any Error>) -> Void) {
        self.request = request
        self.completion = completion
        super.init(body: request.body)
    }

    override func writeHead(_ head: HTTP2RequestHead) {
        if request.method != "POST" { head.method(request.method) }
        head.path(request.path)
        for index in request.headers.indices { head.field(request.headers[index].name, request.headers[index].value) }
    }

    override func attemptStarted() {
        answerHeaders = []
        answerBody = Data()
    }

    override func answerField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {
        answerHeaders.append((HeaderBytes.text(name), HeaderBytes.text(value)))
    }

    override func answerData(_ bytes: UnsafeRawBufferPointer) {
        answerBody.append(contentsOf: bytes)
    }

    override func completed(_ outcome: Result<Int, any Error>) {
        let result = outcome.map { status in HTTP2Response(status: status, headers: answerHeaders, body: answerBody) }
        answerHeaders = []
        answerBody = Data()
        completion(result)
    }
}

/// The client's state, confined to its event loop.
/// `@unchecked Sendable`: every method runs on `loop`'s thread (callers reach it
/// through `loop.execute`).
final class ClientCore: @unchecked Sendable {
    let configuration: HTTP2ClientConfiguration
    let loop: EventLoop
    let tls: TLSContext?
    private var queue = RequestQueue()
    /// Requests handed back since the last `drain`, in no particular order.
    private var refused: [HTTP2Exchange] = []
    private var current: ClientConnection?
    private var draining: [ObjectIdentifier: ClientConnection] = [:]
    private var connecting = false
    private var failedAttempts = 0
    private var retryTimer: UInt64?
    private var shuttingDown = false
    var statistics = HTTP2ClientStatistics()

    init(configuration: HTTP2ClientConfiguration, loop: EventLoop, tls: TLSContext?) {
        self.configuration = configuration
        self.loop = loop
        self.tls = tls
    }

    func enqueue(_ pending: HTTP2Exchange) {
        guard !shuttingDown else {
            pending.finish(.failure(HTTP2Error(.shutDown, "the client is shutting down")))
            return
        }
        queue.append(pending)
        scheduleDrain()
    }

    private var drainScheduled = false

    /// Drains once after the current round of loop work, so that requests posted
    /// together are submitted together and leave in as few writes as possible.
    func scheduleDrain() {
        guard !drainScheduled else { return }
        drainScheduled = true
        loop.afterEvents { [self] in
            drainScheduled = false
            drain()
        }
    }

    /// Puts a request the server never processed back at the head of the queue, in
    /// the order the requests were first sent (see `drain`).
    func requeue(_ pending: HTTP2Exchange) {
        pending.refusals += 1
        guard pending.refusals <= configuration.maxRefusedRetries, !shuttingDown else {
            pending.finish(.failure(HTTP2Error(.streamReset, "the server refused the request \(pending.refusals) times", errorCode: 7)))
            return
        }
        statistics.requestsRetried += 1
        refused.append(pending)
    }

    func cancel(_ id: UInt64) {
        if let pending = queue.remove(id: id) {
            pending.finish(.failure(CancellationError()))
            return
        }
        current?.cancel(id: id)
        for connection in draining.values { connection.cancel(id: id) }
    }

    /// Submits queued requests while the connection has stream slots, and writes
    /// them (unless the connection is `reading`, in the middle of a read: it writes
    /// them itself); connects when there is no connection.
    func drain(reading: ClientConnection? = nil) {
        if !refused.isEmpty {
            // Oldest first at the head: ids grow with each call to `send`.
            for pending in refused.sorted(by: { $0.id > $1.id }) { queue.prepend(pending) }
            refused.removeAll()
        }
        guard !queue.isEmpty else { return }
        if let connection = current, connection.isUsable {
            var submitted = false
            while connection.hasCapacity, let pending = queue.popFirst() {
                if !pending.inFlight { continue }
                connection.submit(pending)
                submitted = true
            }
            if submitted && connection !== reading { connection.flush() }
            return
        }
        if current == nil { connect() }
    }

    private func connect() {
        guard !connecting, retryTimer == nil, !shuttingDown else { return }
        connecting = true
        statistics.connectAttempts += 1
        do {
            let addresses = try resolve(host: configuration.host, port: configuration.port)
            let fd = try startConnect(family: addresses[0].family, address: addresses[0].address)
            let transport: Transport
            if let tls {
                let name = configuration.tls?.serverName ?? configuration.host
                transport = try Transport(fd: fd, context: tls, serverName: name, verify: configuration.tls?.verifyPeer ?? true)
            } else {
                transport = Transport(fd: fd)
            }
            let connection = ClientConnection(core: self, transport: transport)
            current = connection
            loop.register(fd, connection)
            connection.startTimers()
        } catch {
            connecting = false
            connectFailed(error)
        }
    }

    // MARK: Connection events

    func connectionReady(_ connection: ClientConnection) {
        connecting = false
        failedAttempts = 0
        statistics.connectionsOpened += 1
        drain()
    }

    func connectionGoingAway(_ connection: ClientConnection) {
        if current === connection {
            current = nil
            draining[ObjectIdentifier(connection)] = connection
        }
        drain()
    }

    func connectionClosed(_ connection: ClientConnection, error: HTTP2Error?, wasReady: Bool) {
        draining[ObjectIdentifier(connection)] = nil
        if current === connection {
            current = nil
            connecting = false
            if !wasReady {
                connectFailed(error ?? HTTP2Error(.connectFailed, "the connection closed before it was ready"))
                return
            }
        }
        drain()
        finishShutdownIfDone()
    }

    private func connectFailed(_ error: HTTP2Error) {
        failedAttempts += 1
        failExpired(error)
        guard !queue.isEmpty, !shuttingDown else { return }
        let delay = configuration.reconnectDelay(afterFailures: failedAttempts)
        retryTimer = loop.schedule(after: .seconds(delay)) { [self] in
            retryTimer = nil
            drain()
        }
        scheduleExpiry(error)
    }

    /// Fails, with the cause, the requests that have waited for a connection past
    /// the connect timeout.
    private func failExpired(_ error: HTTP2Error) {
        let now = monotonicNanoseconds()
        let limit = configuration.connectTimeout.nanoseconds
        for pending in queue.removeAll(where: { now - $0.enqueuedAt >= limit }) {
            pending.finish(.failure(error))
        }
    }

    private var expiryTimer: UInt64?

    /// While the client waits to reconnect (a backoff may outlast the connect
    /// timeout), fails each waiting request when its connect timeout runs out.
    private func scheduleExpiry(_ error: HTTP2Error) {
        guard expiryTimer == nil, let oldest = queue.oldestEnqueuedAt else { return }
        let due = oldest + configuration.connectTimeout.nanoseconds
        let now = monotonicNanoseconds()
        expiryTimer = loop.schedule(after: .nanoseconds(Int64(due > now ? due - now : 0))) { [self] in
            expiryTimer = nil
            guard retryTimer != nil else { return }  // connecting again, or connected
            failExpired(error)
            scheduleExpiry(error)
        }
    }

    // MARK: Shutdown

    private var shutdownDone: (() -> Void)?

    func shutdown(gracePeriod: Duration, done: @escaping () -> Void) {
        stopWaiting("the client is shutting down")
        shutdownDone = done
        for connection in [current].compactMap({ $0 }) + Array(draining.values) {
            connection.goAway()
        }
        loop.schedule(after: gracePeriod) { [self] in
            for connection in [current].compactMap({ $0 }) + Array(draining.values) {
                connection.close(HTTP2Error(.shutDown, "the client shut down"))
            }
            finishShutdownIfDone()
        }
        finishShutdownIfDone()
    }

    /// The client was released without a shutdown: fails what is queued and closes
    /// every connection at once.
    func abandon() {
        stopWaiting("the client was released")
        for connection in [current].compactMap({ $0 }) + Array(draining.values) {
            connection.close(HTTP2Error(.shutDown, "the client was released"))
        }
    }

    /// Stops reconnecting and fails every request not yet on a stream with `reason`.
    private func stopWaiting(_ reason: String) {
        shuttingDown = true
        if let retryTimer { loop.cancelTimer(retryTimer) }
        retryTimer = nil
        if let expiryTimer { loop.cancelTimer(expiryTimer) }
        expiryTimer = nil
        while let pending = queue.popFirst() {
            pending.finish(.failure(HTTP2Error(.shutDown, reason)))
        }
        for pending in refused {
            pending.finish(.failure(HTTP2Error(.shutDown, reason)))
        }
        refused.removeAll()
    }

    private func finishShutdownIfDone() {
        guard shuttingDown, current == nil || current?.phase == .closed, draining.isEmpty, let done = shutdownDone else { return }
        shutdownDone = nil
        done()
    }
}

/// A FIFO of pending requests that also supports removal by id and pushing to the
/// front (for requests a GOAWAY handed back).
struct RequestQueue {
    private var items: [HTTP2Exchange?] = []
    private var head = 0
    private var count = 0

    var isEmpty: Bool { count == 0 }

    /// The earliest `enqueuedAt` of the requests queued.
    var oldestEnqueuedAt: UInt64? {
        items[head...].lazy.compactMap { $0?.enqueuedAt }.min()
    }

    mutating func append(_ pending: HTTP2Exchange) {
        items.append(pending)
        count += 1
    }

    mutating func prepend(_ pending: HTTP2Exchange) {
        if head > 0 {
            head -= 1
            items[head] = pending
        } else {
            items.insert(pending, at: 0)
        }
        count += 1
    }

    mutating func popFirst() -> HTTP2Exchange? {
        while head < items.count {
            let item = items[head]
            items[head] = nil
            head += 1
            if let item {
                count -= 1
                compact()
                return item
            }
        }
        compact()
        return nil
    }

    mutating func remove(id: UInt64) -> HTTP2Exchange? {
        guard let index = items[head...].firstIndex(where: { $0?.id == id }) else { return nil }
        let item = items[index]
        items[index] = nil
        count -= 1
        return item
    }

    mutating func removeAll(where predicate: (HTTP2Exchange) -> Bool) -> [HTTP2Exchange] {
        var removed: [HTTP2Exchange] = []
        for index in head..<items.count {
            if let item = items[index], predicate(item) {
                removed.append(item)
                items[index] = nil
                count -= 1
            }
        }
        return removed
    }

    private mutating func compact() {
        if count == 0 {
            items.removeAll(keepingCapacity: true)
            head = 0
        } else if head > 1024 && head * 2 > items.count {
            items.removeFirst(head)
            head = 0
        }
    }
}
