import IsletSync
import IsletThreads
internal import CMicroHTTPD
import Foundation
import Glibc

/// Handles one complete request.
public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// Answers one complete request at once, on the event-loop thread that read it.
public typealias ImmediateHTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse

/// How a server answers: on the concurrency pool, or on its own threads.
private enum Handling: Sendable {
    case async(HTTPHandler)
    case immediate(ImmediateHTTPHandler)
}

/// How the HTTP server listens and what it accepts.
public struct HTTPServerConfiguration: Sendable {
    /// Address to listen on (a name or a numeric address).
    public var host: String = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port: Int = 8080
    /// Largest request body accepted; larger ones get 413.
    public var maxBodyBytes: Int = 64 * 1024
    /// The largest body of a request by method and path, when some routes take
    /// more than `maxBodyBytes` (nil: `maxBodyBytes` for every request).
    public var bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)?
    /// Decides from a request's head whether its body is read at all (nil: every
    /// body within its limit is read). Asked only of requests that have a body.
    public var admission: HTTPAdmissionPolicy?
    /// Bytes of request bodies held at once across the server; past it a request
    /// with a body is answered `bodiesBuffered` (503) without it.
    public var maxBufferedBodyBytes: Int = 256 << 20
    /// Bytes of request bodies held at once for one budget (`HTTPAdmission.admit`).
    public var maxBufferedBodyBytesPerBudget: Int = 64 << 20
    /// Time a body may take to arrive after its head; past it the request is
    /// answered `bodyTimeout` (408) and its connection closed.
    public var bodyTimeout: Duration = .seconds(30)
    /// Threads that run libmicrohttpd's event loops.
    public var threads: Int = 2
    /// Threads that run the server's tasks: async handlers, admission checks and the
    /// producers of streamed responses (`TaskThreads`: not the concurrency pool,
    /// which anything else in the process can hold up).
    public var taskThreads: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)
    /// Connections held at once; more are refused.
    public var connectionLimit: Int = 10_000
    /// Seconds an idle connection is kept.
    public var idleTimeoutSeconds: Int = 60
    /// Pending connections the kernel queues.
    public var backlog: Int32 = 1024
    /// The most bytes a streamed response (`HTTPResponse.stream`) queues for a client
    /// that does not read them; a write beyond it closes the stream.
    public var streamBufferBytes: Int = 1 << 20
    /// The clock the server measures its deadlines and waits on (a body's, a
    /// shutdown's grace, a stream's wait): the system's monotonic clock, or a test's.
    public var clock: any Clock<Duration> = ContinuousClock()

    /// The defaults.
    public init() {}
}

/// An HTTP/1.1 server on libmicrohttpd. Requests are read whole (bounded by
/// `maxBodyBytes`), handed to an async handler while their connection is suspended,
/// and answered when the handler returns; the event-loop threads never wait on a
/// handler. Handlers run as tasks on the server's own threads
/// (`HTTPServerConfiguration.taskThreads`), not on the concurrency pool: a process
/// that holds the pool's few threads (waiting on a child process, say) still gets
/// its answers. A server made with an immediate handler instead answers on the
/// event-loop thread, and so keeps answering when the concurrency pool is busy (the
/// simulator's inspection API, which tests of a whole process rely on). Either kind
/// of handler may answer with a streamed response (`HTTPResponse.stream`, for
/// Server-Sent Events), whose body a task writes over time.
public final class HTTPServer: Sendable {
    /// The configuration it was made with.
    public let configuration: HTTPServerConfiguration
    private let core: ServerCore
    private let state = Lock(State())

    private struct State {
        var daemon: DaemonHandle?
        var listenFD: Int32 = -1
        var port = 0
    }

    /// Creates a server that answers every request with `handler`, and what the
    /// server refuses by itself (`HTTPServerRefusal`: a body over the limit, too
    /// slow, or over the buffered bytes; a malformed request) with `refusal`,
    /// without calling `handler`.
    public init(
        configuration: HTTPServerConfiguration,
        refusal: @escaping @Sendable (HTTPServerRefusal) -> HTTPResponse = HTTPServer.defaultRefusal,
        handler: @escaping HTTPHandler
    ) {
        self.configuration = configuration
        self.core = ServerCore(handling: .async(handler), configuration: configuration, refusal: refusal)
    }

    /// Creates a server that answers every request with `handler`, called on the
    /// event-loop thread: for handlers that neither wait nor take long.
    public init(
        configuration: HTTPServerConfiguration,
        refusal: @escaping @Sendable (HTTPServerRefusal) -> HTTPResponse = HTTPServer.defaultRefusal,
        immediate handler: @escaping ImmediateHTTPHandler
    ) {
        self.configuration = configuration
        self.core = ServerCore(handling: .immediate(handler), configuration: configuration, refusal: refusal)
    }

    /// A plain-text answer to a refusal.
    public static func defaultRefusal(_ refusal: HTTPServerRefusal) -> HTTPResponse {
        switch refusal {
        case .bodyTooLarge(let limit):
            HTTPResponse(status: 413, contentType: "text/plain", body: Data("The request body is larger than \(limit) bytes.\n".utf8))
        case .bodyTimeout(let seconds):
            HTTPResponse(status: 408, contentType: "text/plain", body: Data("The request body did not arrive within \(seconds) s.\n".utf8))
        case .bodiesBuffered(let retryAfter):
            HTTPResponse(
                status: 503, headers: ["Content-Type": "text/plain", "Retry-After": String(retryAfter)],
                body: Data("The server holds too many request bodies now; try again shortly.\n".utf8))
        case .badRequest(let detail):
            HTTPResponse(status: 400, contentType: "text/plain", body: Data("\(detail)\n".utf8))
        }
    }

    /// The port the server listens on (meaningful after `start`).
    public var port: Int { state.withLock { $0.port } }

    /// Binds the address and starts serving; answers the bound port.
    @discardableResult
    public func start() throws(HTTPServerError) -> Int {
        let already = state.withLock { $0.daemon != nil }
        if already { throw HTTPServerError(.alreadyStarted, "the server is already running") }
        let socket = try openListeningSocket(host: configuration.host, port: configuration.port, backlog: configuration.backlog)
        let flags = MHD_USE_INTERNAL_POLLING_THREAD.rawValue | MHD_USE_EPOLL.rawValue
            | MHD_ALLOW_SUSPEND_RESUME.rawValue
        let context = Unmanaged.passUnretained(core).toOpaque()
        let daemon = islet_mhd_start_daemon(
            flags, socket.fd,
            { context, connection, url, method, version, uploadData, uploadSize, requestContext in
                let core = Unmanaged<ServerCore>.fromOpaque(context!).takeUnretainedValue()
                return core.access(
                    connection: connection!, url: url, method: method, version: version,
                    uploadData: uploadData, uploadSize: uploadSize!, requestContext: requestContext!)
            },
            context,
            { context, _, requestContext, _ in
                let core = Unmanaged<ServerCore>.fromOpaque(context!).takeUnretainedValue()
                core.completed(requestContext: requestContext)
            },
            context,
            { _, uri, _ in
                // The raw target, copied now: libmicrohttpd decodes it in place later.
                let state = RequestState(rawTarget: uri.map { String(cString: $0) } ?? "")
                return Unmanaged.passRetained(state).toOpaque()
            },
            context,
            UInt32(max(1, configuration.threads)),
            UInt32(max(1, configuration.connectionLimit)),
            UInt32(max(0, configuration.idleTimeoutSeconds)))
        guard let daemon else {
            close(socket.fd)
            throw HTTPServerError(.daemonStart, "libmicrohttpd could not start on \(configuration.host):\(socket.port)")
        }
        core.tasks.start()
        state.withLock {
            $0.daemon = DaemonHandle(pointer: daemon)
            $0.listenFD = socket.fd
            $0.port = socket.port
        }
        return socket.port
    }

    /// Requests being read, handled or answered right now (streamed responses not
    /// included once their headers are queued: see `openStreams`).
    public var activeRequests: Int { core.activeRequests }

    /// Bytes of request bodies held now, in all or for one budget.
    public func bufferedBodyBytes(budget: String? = nil) -> Int { core.bufferedBodyBytes(budget: budget) }

    /// Streamed responses (`HTTPResponse.stream`) not yet ended.
    public var openStreams: Int { core.streams.openCount }

    /// Stops accepting connections, ends the streamed responses (their writers close;
    /// what they hold is still sent), lets requests in flight and those last bytes
    /// finish for up to `gracePeriod`, then answers requests still running 503 and
    /// closes every connection. Calling it again does nothing.
    public func shutdown(gracePeriod: Duration = .seconds(10)) async {
        guard let (daemon, fd) = takeDaemon() else { return }
        // Stop accepting. libmicrohttpd hands the listening socket back, to be closed
        // only after the daemon has stopped: its threads may still use it until then,
        // and closed earlier its number could go to another descriptor meanwhile.
        _ = MHD_quiesce_daemon(daemon.pointer)
        // A stream has no end of its own to wait for: it is ended now, and its last
        // bytes are waited for like a request in flight.
        core.streams.closeAll()
        let core = core
        _ = await core.clock.poll(every: .milliseconds(5), upTo: gracePeriod) {
            core.activeRequests == 0 && core.streams.openCount == 0
        }
        // The stop waits (for resumes, for the answers to requests cut short, for
        // libmicrohttpd's threads to end): on a thread of its own, not on one of the
        // concurrency pool's few threads, which every other task needs meanwhile.
        await runOnOwnThread(named: "islet-http-stop", stackSize: 256 << 10) {
            core.stop(daemon)
            if fd >= 0 { close(fd) }
        }
    }

    /// A server released while running stops at once (a daemon left running would
    /// call back into a core that is gone).
    deinit {
        guard let (daemon, fd) = takeDaemon() else { return }
        _ = MHD_quiesce_daemon(daemon.pointer)
        core.stop(daemon)
        if fd >= 0 { close(fd) }
    }

    private func takeDaemon() -> (DaemonHandle, Int32)? {
        state.withLock { s -> (DaemonHandle, Int32)? in
            guard let daemon = s.daemon else { return nil }
            s.daemon = nil
            return (daemon, s.listenFD)
        }
    }

    /// The version of the linked libmicrohttpd, for example `0.9.75`.
    public static var libraryVersion: String { String(cString: MHD_get_version()) }
}

/// A daemon pointer that may cross threads. `@unchecked Sendable`: libmicrohttpd's
/// daemon functions used here (quiesce, stop) are documented as callable from any
/// thread, and `HTTPServer` takes the handle out of its lock before using it, once.
private struct DaemonHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// A connection pointer handed to the task that runs a handler, or kept by a
/// streamed response's writer. `@unchecked Sendable`: the connection is suspended
/// until it is resumed, so libmicrohttpd does not touch it meanwhile, and it is
/// resumed exactly once, by whoever takes it out of `ServerCore.suspended` (or clears
/// its writer's `suspended`), before the daemon is stopped.
struct ConnectionHandle: @unchecked Sendable {
    let pointer: OpaquePointer
}

/// One request's state across libmicrohttpd's calls to the access handler.
/// `@unchecked Sendable`: it is touched by the daemon thread until the connection is
/// suspended, then only by the handler task until it resumes the connection, then by
/// the daemon thread again; suspend and resume order those hand-offs.
private final class RequestState: @unchecked Sendable {
    /// Where the request stands between libmicrohttpd's calls.
    enum Phase {
        /// The request line is read; the headers are not yet handed over.
        case started
        /// The admission policy is deciding while the connection is suspended.
        case admitting
        /// It decided, and the connection was resumed: libmicrohttpd calls once
        /// more, with no body, before any body is read.
        case admitted(HTTPAdmission)
        /// The body is being read (or there is none).
        case reading
    }

    /// The request target as sent (percent-encoded, query included).
    let rawTarget: String
    var phase = Phase.started
    var request = HTTPRequest(method: "GET", path: "/")
    var tooLarge = false
    /// The body went past the buffered bytes while it arrived (a chunked body):
    /// its bytes are dropped and the request answered 503.
    var overBudget = false
    /// The largest body this request may have.
    var bodyLimit = 0
    /// Bytes of body counted against the server's buffered bytes, and for whom.
    var reserved = 0
    var budget: String?
    /// Set while the body is read, for its deadline.
    var watch: BodyWatch?
    var dispatched = false
    var response: HTTPResponse?
    /// Whether the request counts as active (the access handler has seen it).
    var counted = false
    /// Whether a streamed response was queued: the request then no longer counts
    /// as active (its stream is counted by `StreamRegistry`).
    var streaming = false

    init(rawTarget: String) {
        self.rawTarget = rawTarget
    }
}

/// The part of the server that libmicrohttpd calls back into.
/// `@unchecked Sendable`: its mutable state is atomic or behind its lock; the rest
/// is immutable.
private final class ServerCore: @unchecked Sendable {
    private let handling: Handling
    let maxBodyBytes: Int
    let bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)?
    let refusal: @Sendable (HTTPServerRefusal) -> HTTPResponse
    let admission: HTTPAdmissionPolicy?
    let budget: BodyBudget
    let bodyTimeout: Duration
    /// The bodies being read, under their deadline.
    let deadlines: BodyDeadlines
    /// Requests counted from their arrival to their answer's end.
    private let active = InFlightCount()
    /// Connections suspended while their handler runs: whoever takes one out of
    /// here (its handler's task, or `stop`) answers and resumes it, exactly once.
    private let suspended = Lock(Suspended())
    /// Resumes begun and not yet returned. A resume runs outside the lock: held
    /// across `MHD_resume_connection` (a system call), the lock made every request
    /// queue behind the others.
    private let resuming = InFlightCount()
    /// The clock of the server's deadlines and waits.
    let clock: any Clock<Duration>

    private struct Suspended {
        var requests: [ObjectIdentifier: (state: RequestState, connection: ConnectionHandle)] = [:]
        var stopping = false
    }

    /// The server's streamed responses.
    let streams: StreamRegistry
    /// The threads that run handlers, admission checks and stream producers.
    let tasks: TaskThreads

    /// What a request still running when the server stops is answered.
    static let shuttingDown = HTTPResponse(
        status: 503, headers: ["Content-Type": "text/plain", "Retry-After": "1", "Connection": "close"],
        body: Data("The server is shutting down.\n".utf8))

    init(
        handling: Handling, configuration: HTTPServerConfiguration,
        refusal: @escaping @Sendable (HTTPServerRefusal) -> HTTPResponse
    ) {
        self.handling = handling
        self.maxBodyBytes = configuration.maxBodyBytes
        self.bodyLimit = configuration.bodyLimit
        self.refusal = refusal
        self.admission = configuration.admission
        self.budget = BodyBudget(
            total: configuration.maxBufferedBodyBytes, perBudget: configuration.maxBufferedBodyBytesPerBudget)
        self.bodyTimeout = configuration.bodyTimeout
        self.clock = configuration.clock
        let timeout = configuration.bodyTimeout
        let refusal = refusal
        let tasks = TaskThreads(count: configuration.taskThreads, name: "islet-http-task")
        self.tasks = tasks
        self.deadlines = BodyDeadlines(timeout: timeout, tasks: tasks, clock: configuration.clock) {
            let seconds = Double(timeout.components.seconds) + Double(timeout.components.attoseconds) / 1e18
            return ServerCore.wireBytes(ServerCore.closing(refusal(.bodyTimeout(seconds: seconds))))
        }
        self.streams = StreamRegistry(bufferLimit: configuration.streamBufferBytes, tasks: tasks, clock: configuration.clock)
    }

    /// Bytes of request bodies held now, in all or for `budget`.
    func bufferedBodyBytes(budget: String?) -> Int { self.budget.held(budget: budget) }

    var activeRequests: Int { active.current }

    /// Ends every stream, answers every request whose handler still runs with a 503,
    /// waits for resumes in progress, and stops the daemon: libmicrohttpd must not be
    /// stopped with a connection suspended, and no handler or stream resumes one
    /// after this.
    func stop(_ daemon: DaemonHandle) {
        streams.closeAll()
        let leftovers = suspended.withLock { s -> [(state: RequestState, connection: ConnectionHandle)] in
            s.stopping = true
            defer { s.requests = [:] }
            return Array(s.requests.values)
        }
        for request in leftovers {
            request.state.response = Self.shuttingDown
            MHD_resume_connection(request.connection.pointer)
        }
        resuming.waitForNone()
        streams.resuming.waitForNone()
        // Give the daemon a moment to write those answers before it closes every
        // connection.
        if !leftovers.isEmpty {
            active.waitForNone(within: .seconds(1))
        }
        MHD_stop_daemon(daemon.pointer)
        // Every stream's response is released by now, so no connection is watched;
        // every connection is closed, so no body is under a deadline.
        streams.watcher.stop()
        deadlines.stop()
        // Tasks still running (a handler past the grace, a producer that has not
        // returned yet) go on on the global executor.
        tasks.stop()
    }

    /// Hands `connection`, just suspended, to its handler.
    private func dispatch(_ state: RequestState, _ connection: ConnectionHandle, _ handler: @escaping HTTPHandler) {
        let request = state.request
        resumeAfter(state, connection) {
            let response = await handler(request)
            return { $0.response = response }
        }
    }

    /// Runs `work` while `connection` is suspended (libmicrohttpd reads nothing of
    /// it meanwhile), then applies what it answers to the request's state and
    /// resumes the connection; answers 503 at once when the server is stopping.
    /// The connection is resumed exactly once: by this task, or by `stop` if it
    /// took the connection out meanwhile (and answered 503).
    private func resumeAfter(
        _ state: RequestState, _ connection: ConnectionHandle,
        _ work: @escaping @Sendable () async -> @Sendable (RequestState) -> Void
    ) {
        let id = ObjectIdentifier(state)
        let accepted = suspended.withLock { s -> Bool in
            guard !s.stopping else { return false }
            s.requests[id] = (state, connection)
            return true
        }
        guard accepted else {
            state.response = Self.shuttingDown
            MHD_resume_connection(connection.pointer)
            return
        }
        Task(executorPreference: tasks) {
            let apply = await work()
            let mine = self.suspended.withLock { s -> Bool in
                guard s.requests.removeValue(forKey: id) != nil else { return false }
                self.resuming.enter()
                return true
            }
            guard mine else { return }
            apply(state)
            MHD_resume_connection(connection.pointer)
            self.resuming.leave()
        }
    }

    func access(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        // The URI logger made the request's state when the request line was read.
        guard let raw = requestContext.pointee else { return .NO }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        switch state.phase {
        case .started:
            // First call: headers are complete, no body yet.
            return head(connection, state, url: url, method: method, version: version)
        case .admitting:
            // Resumed by `stop` before the policy decided: the 503 it set.
            state.phase = .reading
            return queue(connection, state, Self.closing(state.response ?? Self.shuttingDown))
        case .admitted(let decision):
            // Resumed with the policy's decision, before any body was read.
            state.phase = .reading
            return admitted(connection, state, decision)
        case .reading:
            break
        }
        if uploadSize.pointee > 0 {
            let size = uploadSize.pointee
            uploadSize.pointee = 0
            if let watch = state.watch, watch.state.withLock({ $0.fired }) { return .NO }
            if !state.tooLarge, !state.overBudget, let uploadData {
                if state.request.body.count + size > state.bodyLimit {
                    state.tooLarge = true
                    state.request.body = Data()
                } else {
                    // A chunked body is counted as it comes.
                    let needed = state.request.body.count + size - state.reserved
                    if needed > 0 {
                        if budget.reserve(needed, budget: state.budget) {
                            state.reserved += needed
                        } else {
                            state.overBudget = true
                            state.request.body = Data()
                        }
                    }
                    if !state.overBudget {
                        uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                            state.request.body.append($0, count: size)
                        }
                    }
                }
            }
            return .YES
        }
        if let watch = state.watch {
            // The body is whole: unless its deadline already answered, it is the
            // handler's to answer now.
            let fired = watch.state.withLock { s -> Bool in
                if !s.fired { s.bodyDone = true }
                return s.fired
            }
            if fired { return .NO }
            deadlines.remove(watch)
        }
        if let response = state.response {
            return queue(connection, state, response)
        }
        if state.tooLarge {
            return queue(connection, state, Self.closing(refusal(.bodyTooLarge(limit: state.bodyLimit))))
        }
        if state.overBudget {
            return queue(connection, state, Self.closing(refusal(.bodiesBuffered(retryAfter: 1))))
        }
        guard !state.dispatched else { return .YES }
        state.dispatched = true
        switch handling {
        case .immediate(let handler):
            return queue(connection, state, handler(state.request))
        case .async(let handler):
            MHD_suspend_connection(connection)
            dispatch(state, ConnectionHandle(pointer: connection), handler)
            return .YES
        }
    }

    /// The first call: the request's head is whole. Refuses a malformed one; for a
    /// request with a body, asks the admission policy whether to read it.
    private func head(
        _ connection: OpaquePointer, _ state: RequestState, url: UnsafePointer<CChar>?, method: UnsafePointer<CChar>?,
        version: UnsafePointer<CChar>?
    ) -> MHD_Result {
        state.request.method = method.map { String(cString: $0) } ?? "GET"
        state.request.path = url.map { String(cString: $0) } ?? "/"
        readValues(connection, state)
        active.enter()
        state.counted = true
        state.phase = .reading
        let lengths = state.request.headers.values(of: "Content-Length")
        if let problem = Self.malformed(state, lengths: lengths, version: version.map { String(cString: $0) }) {
            return queue(connection, state, Self.closing(refusal(.badRequest(detail: problem))))
        }
        state.bodyLimit = bodyLimit?(state.request.method, state.request.path) ?? maxBodyBytes
        // libmicrohttpd takes any length below 2^64; one past Int's range is too large.
        let length = lengths.first.map { Int($0.trimmingOptionalWhitespace()) ?? Int.max }
        // Too large is answered once the request is admitted: a request that would
        // be refused anyway gets that answer.
        if let length, length > state.bodyLimit { state.tooLarge = true }
        let chunked = state.request.headers["Transfer-Encoding"] != nil
        guard (length ?? 0) > 0 || chunked else { return .YES }
        guard let admission else { return admitted(connection, state, .admit(budget: nil)) }
        let decision = admission(HTTPRequestHead(
            method: state.request.method, path: state.request.path, headers: state.request.headers,
            remoteHost: state.request.remoteHost, contentLength: chunked ? nil : length))
        guard case .check(let decide) = decision else { return admitted(connection, state, decision) }
        state.phase = .admitting
        MHD_suspend_connection(connection)
        admit(state, ConnectionHandle(pointer: connection), decide)
        return .YES
    }

    /// Acts on the admission policy's decision, before any body is read.
    private func admitted(_ connection: OpaquePointer, _ state: RequestState, _ decision: HTTPAdmission) -> MHD_Result {
        switch decision {
        case .refuse(let response):
            return queue(connection, state, Self.closing(response))
        case .check:
            // `admit` resolves every check before it resumes.
            return queue(connection, state, Self.closing(Self.shuttingDown))
        case .admit(let budgetName):
            if state.tooLarge {
                return queue(connection, state, Self.closing(refusal(.bodyTooLarge(limit: state.bodyLimit))))
            }
            let declared = state.request.headers["Transfer-Encoding"] != nil
                ? 0 : (state.request.headers["Content-Length"].flatMap { Int($0.trimmingOptionalWhitespace()) } ?? 0)
            // (A length past Int's range was found too large above.)
            guard budget.reserve(declared, budget: budgetName) else {
                return queue(connection, state, Self.closing(refusal(.bodiesBuffered(retryAfter: 1))))
            }
            state.reserved = declared
            state.budget = budgetName
            watchDeadline(connection, state)
            return .YES
        }
    }

    /// Runs the admission policy's wait while `connection` is suspended (reading
    /// nothing), then resumes it with the decision.
    private func admit(_ state: RequestState, _ connection: ConnectionHandle, _ decide: @escaping @Sendable () async -> HTTPAdmission) {
        resumeAfter(state, connection) {
            var decision = await decide()
            while case .check(let next) = decision { decision = await next() }
            let decided = decision
            return { $0.phase = .admitted(decided) }
        }
    }

    /// Puts the body of `state` under its deadline (`BodyDeadlines`).
    private func watchDeadline(_ connection: OpaquePointer, _ state: RequestState) {
        let fd = islet_mhd_connection_fd(connection)
        guard fd >= 0 else { return }
        let watch = BodyWatch(fd: fd, passed: clock.deadline(after: bodyTimeout))
        state.watch = watch
        deadlines.add(watch)
    }

    /// Whether `target` holds a NUL, as a byte or percent-encoded (`%00`); read as
    /// bytes (Foundation's `range(of:)` cost a registration about 1% of its time).
    static func holdsNUL(_ target: String) -> Bool {
        var previous: (UInt8, UInt8) = (0, 0)
        for byte in target.utf8 {
            if byte == 0 || (byte == UInt8(ascii: "0") && previous == (UInt8(ascii: "%"), UInt8(ascii: "0"))) { return true }
            previous = (previous.1, byte)
        }
        return false
    }

    /// Why a request's head is refused, or nil: a NUL anywhere in its target (which
    /// libmicrohttpd's decoding would cut the path at), framing that two parties
    /// could read two ways (RFC 9112 §6.3: Content-Length beside Transfer-Encoding,
    /// two different Content-Lengths, a coding other than chunked), or HTTP/1.1
    /// without Host.
    private static func malformed(_ state: RequestState, lengths: [String], version: String?) -> String? {
        if holdsNUL(state.rawTarget) {
            return "The request target contains a NUL (%00), which no path or query may hold."
        }
        let encoding = state.request.headers.values(of: "Transfer-Encoding")
        if !encoding.isEmpty && !lengths.isEmpty {
            return "The request has both Content-Length and Transfer-Encoding; send one."
        }
        if Set(lengths.map { $0.trimmingOptionalWhitespace() }).count > 1 {
            return "The request has two different Content-Length headers."
        }
        if !encoding.isEmpty && (encoding.count > 1 || encoding[0].trimmingOptionalWhitespace().lowercased() != "chunked") {
            return "The only Transfer-Encoding taken is chunked."
        }
        // libmicrohttpd reads any HTTP/1.x above 1.0 as 1.1.
        if let version, version.hasPrefix("HTTP/1."), version != "HTTP/1.0", state.request.headers["Host"] == nil {
            return "An HTTP/1.1 request must carry a Host header."
        }
        return nil
    }

    /// `response` with `Connection: close`: said of every answer given before or
    /// instead of reading a body, whose connection libmicrohttpd then closes.
    static func closing(_ response: HTTPResponse) -> HTTPResponse {
        var response = response
        response.headers.set("Connection", "close")
        return response
    }

    /// A complete response as HTTP/1.1 bytes, for an answer written to the socket.
    static func wireBytes(_ response: HTTPResponse) -> Data {
        var head = "HTTP/1.1 \(response.status) \(HTTPResponse.reasonPhrase(response.status))\r\n"
        for (name, value) in response.headers where !HTTPHeaders.sameName(name, "Content-Length") {
            head += "\(name): \(value)\r\n"
        }
        head += "Content-Length: \(response.body.count)\r\n\r\n"
        return Data(head.utf8) + response.body
    }

    func completed(requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let requestContext, let raw = requestContext.pointee else { return }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        requestContext.pointee = nil
        // Before libmicrohttpd closes the socket: a deadline after this writes nothing.
        if let watch = state.watch {
            watch.state.withLock { $0.alive = false }
            deadlines.remove(watch)
        }
        budget.release(state.reserved, budget: state.budget)
        state.reserved = 0
        if state.counted && !state.streaming { active.leave() }
    }

    private func readValues(_ connection: OpaquePointer, _ state: RequestState) {
        let context = Unmanaged.passUnretained(state).toOpaque()
        MHD_get_connection_values(connection, .HEADER_KIND, { context, _, key, value in
            let state = Unmanaged<RequestState>.fromOpaque(context!).takeUnretainedValue()
            if let key { state.request.headers.add(String(cString: key), value.map { String(cString: $0) } ?? "") }
            return .YES
        }, context)
        MHD_get_connection_values(connection, .GET_ARGUMENT_KIND, { context, _, key, value in
            let state = Unmanaged<RequestState>.fromOpaque(context!).takeUnretainedValue()
            if let key { state.request.query.append((String(cString: key), value.map { String(cString: $0) } ?? "")) }
            return .YES
        }, context)
        if let address = islet_mhd_client_address(connection) {
            var storage = sockaddr_storage()
            let size = address.pointee.sa_family == sa_family_t(AF_INET6)
                ? MemoryLayout<sockaddr_in6>.size : MemoryLayout<sockaddr_in>.size
            withUnsafeMutableBytes(of: &storage) { $0.copyMemory(from: UnsafeRawBufferPointer(start: address, count: size)) }
            let (host, port) = socketAddressDescription(&storage)
            state.request.remoteAddress = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
            state.request.remoteHost = host
        }
    }

    private func queue(_ connection: OpaquePointer, _ state: RequestState, _ response: HTTPResponse) -> MHD_Result {
        // A HEAD request gets the headers alone, and the producer is not run:
        // libmicrohttpd 0.9.75 ends even a HEAD answer of unknown length with a last
        // chunk, a body the client does not expect.
        if let producer = response.producer, state.request.method != "HEAD" {
            let queued = streams.queue(connection, status: response.status, headers: response.headers, producer: producer)
            if queued == .YES && !state.streaming {
                state.streaming = true
                active.leave()
            }
            return queued
        }
        let created = response.body.withUnsafeBytes { bytes in
            islet_mhd_response_copying(bytes.count, bytes.baseAddress)
        }
        guard let created else { return .NO }
        defer { MHD_destroy_response(created) }
        for (name, value) in response.headers {
            _ = MHD_add_response_header(created, name, value)
        }
        return MHD_queue_response(connection, UInt32(response.status), created)
    }
}
