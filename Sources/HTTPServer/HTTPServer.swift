import IsletSync
internal import CMicroHTTPD
import Foundation
import Glibc
import Synchronization

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
    /// Threads that run libmicrohttpd's event loops.
    public var threads: Int = 2
    /// Connections held at once; more are refused.
    public var connectionLimit: Int = 10_000
    /// Seconds an idle connection is kept.
    public var idleTimeoutSeconds: Int = 60
    /// Pending connections the kernel queues.
    public var backlog: Int32 = 1024
    /// The most bytes a streamed response (`HTTPResponse.stream`) queues for a client
    /// that does not read them; a write beyond it closes the stream.
    public var streamBufferBytes: Int = 1 << 20

    /// The defaults.
    public init() {}
}

/// An HTTP/1.1 server on libmicrohttpd. Requests are read whole (bounded by
/// `maxBodyBytes`), handed to an async handler while their connection is suspended,
/// and answered when the handler returns; the event-loop threads never wait on a
/// handler. A server made with an immediate handler instead answers on the
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

    /// Creates a server that answers every request with `handler`, and a body over
    /// the limit with `bodyTooLarge` (given the limit), without calling `handler`.
    public init(
        configuration: HTTPServerConfiguration,
        bodyTooLarge: @escaping @Sendable (_ limit: Int) -> HTTPResponse = HTTPServer.defaultBodyTooLarge,
        handler: @escaping HTTPHandler
    ) {
        self.configuration = configuration
        self.core = ServerCore(
            handling: .async(handler), maxBodyBytes: configuration.maxBodyBytes, bodyLimit: configuration.bodyLimit,
            tooLargeResponse: bodyTooLarge, streamBufferBytes: configuration.streamBufferBytes)
    }

    /// Creates a server that answers every request with `handler`, called on the
    /// event-loop thread: for handlers that neither wait nor take long.
    public init(
        configuration: HTTPServerConfiguration,
        bodyTooLarge: @escaping @Sendable (_ limit: Int) -> HTTPResponse = HTTPServer.defaultBodyTooLarge,
        immediate handler: @escaping ImmediateHTTPHandler
    ) {
        self.configuration = configuration
        self.core = ServerCore(
            handling: .immediate(handler), maxBodyBytes: configuration.maxBodyBytes,
            bodyLimit: configuration.bodyLimit, tooLargeResponse: bodyTooLarge,
            streamBufferBytes: configuration.streamBufferBytes)
    }

    /// A plain-text 413 answer.
    public static func defaultBodyTooLarge(limit: Int) -> HTTPResponse {
        HTTPResponse(status: 413, contentType: "text/plain", body: Data("The request body is larger than \(limit) bytes.\n".utf8))
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
            { context, connection, url, method, _, uploadData, uploadSize, requestContext in
                let core = Unmanaged<ServerCore>.fromOpaque(context!).takeUnretainedValue()
                return core.access(
                    connection: connection!, url: url, method: method,
                    uploadData: uploadData, uploadSize: uploadSize!, requestContext: requestContext!)
            },
            context,
            { context, _, requestContext, _ in
                let core = Unmanaged<ServerCore>.fromOpaque(context!).takeUnretainedValue()
                core.completed(requestContext: requestContext)
            },
            context,
            UInt32(max(1, configuration.threads)),
            UInt32(max(1, configuration.connectionLimit)),
            UInt32(max(0, configuration.idleTimeoutSeconds)))
        guard let daemon else {
            close(socket.fd)
            throw HTTPServerError(.daemonStart, "libmicrohttpd could not start on \(configuration.host):\(socket.port)")
        }
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
        let deadline = ContinuousClock.now + gracePeriod
        while (core.activeRequests > 0 || core.streams.openCount > 0) && ContinuousClock.now < deadline {
            try? await Task.sleep(for: .milliseconds(5))
        }
        core.stop(daemon)
        if fd >= 0 { close(fd) }
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
    var request: HTTPRequest
    var tooLarge = false
    /// The largest body this request may have.
    var bodyLimit = 0
    var dispatched = false
    var response: HTTPResponse?
    /// Whether a streamed response was queued: the request then no longer counts
    /// as active (its stream is counted by `StreamRegistry`).
    var streaming = false

    init(request: HTTPRequest) {
        self.request = request
    }
}

/// The part of the server that libmicrohttpd calls back into.
/// `@unchecked Sendable`: its mutable state is atomic or behind its lock; the rest
/// is immutable.
private final class ServerCore: @unchecked Sendable {
    private let handling: Handling
    let maxBodyBytes: Int
    let bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)?
    let tooLargeResponse: @Sendable (_ limit: Int) -> HTTPResponse
    private let active = Atomic<Int>(0)
    /// Connections suspended while their handler runs: whoever takes one out of
    /// here (its handler's task, or `stop`) answers and resumes it, exactly once.
    private let suspended = Lock(Suspended())
    /// Resumes begun and not yet returned. A resume runs outside the lock: held
    /// across `MHD_resume_connection` (a system call), the lock made every request
    /// queue behind the others.
    private let resuming = Atomic<Int>(0)

    private struct Suspended {
        var requests: [ObjectIdentifier: (state: RequestState, connection: ConnectionHandle)] = [:]
        var stopping = false
    }

    /// The server's streamed responses.
    let streams: StreamRegistry

    /// What a request still running when the server stops is answered.
    static let shuttingDown = HTTPResponse(
        status: 503, headers: ["Content-Type": "text/plain", "Retry-After": "1", "Connection": "close"],
        body: Data("The server is shutting down.\n".utf8))

    init(
        handling: Handling, maxBodyBytes: Int,
        bodyLimit: (@Sendable (_ method: String, _ path: String) -> Int)?,
        tooLargeResponse: @escaping @Sendable (_ limit: Int) -> HTTPResponse, streamBufferBytes: Int
    ) {
        self.handling = handling
        self.maxBodyBytes = maxBodyBytes
        self.bodyLimit = bodyLimit
        self.tooLargeResponse = tooLargeResponse
        self.streams = StreamRegistry(bufferLimit: streamBufferBytes)
    }

    var activeRequests: Int { active.load(ordering: .sequentiallyConsistent) }

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
        while resuming.load(ordering: .sequentiallyConsistent) > 0 { usleep(100) }
        streams.waitForResumes()
        // Give the daemon a moment to write those answers before it closes every
        // connection.
        if !leftovers.isEmpty {
            let deadline = ContinuousClock.now + .seconds(1)
            while activeRequests > 0 && ContinuousClock.now < deadline { usleep(1_000) }
        }
        MHD_stop_daemon(daemon.pointer)
        // Every stream's response is released by now, so no connection is watched.
        streams.watcher.stop()
    }

    /// Hands `connection`, just suspended, to its handler; answers 503 at once when
    /// the server is stopping.
    private func dispatch(_ state: RequestState, _ connection: ConnectionHandle, _ handler: @escaping HTTPHandler) {
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
        let request = state.request
        Task {
            let response = await handler(request)
            // Taken out by `stop` meanwhile: it answered 503 and resumed it.
            let mine = self.suspended.withLock { s -> Bool in
                guard s.requests.removeValue(forKey: id) != nil else { return false }
                self.resuming.add(1, ordering: .sequentiallyConsistent)
                return true
            }
            guard mine else { return }
            state.response = response
            MHD_resume_connection(connection.pointer)
            self.resuming.subtract(1, ordering: .sequentiallyConsistent)
        }
    }

    func access(
        connection: OpaquePointer,
        url: UnsafePointer<CChar>?,
        method: UnsafePointer<CChar>?,
        uploadData: UnsafePointer<CChar>?,
        uploadSize: UnsafeMutablePointer<Int>,
        requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>
    ) -> MHD_Result {
        guard let raw = requestContext.pointee else {
            // First call: headers are complete, no body yet.
            let state = RequestState(request: HTTPRequest(
                method: method.map { String(cString: $0) } ?? "GET",
                path: url.map { String(cString: $0) } ?? "/"))
            readValues(connection, state)
            active.add(1, ordering: .sequentiallyConsistent)
            requestContext.pointee = Unmanaged.passRetained(state).toOpaque()
            state.bodyLimit = bodyLimit?(state.request.method, state.request.path) ?? maxBodyBytes
            if let length = state.request.headers["content-length"].flatMap(Int.init), length > state.bodyLimit {
                state.tooLarge = true
                return queue(connection, state, tooLargeResponse(state.bodyLimit))
            }
            return .YES
        }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeUnretainedValue()
        if uploadSize.pointee > 0 {
            let size = uploadSize.pointee
            if !state.tooLarge, let uploadData {
                if state.request.body.count + size > state.bodyLimit {
                    state.tooLarge = true
                    state.request.body = Data()
                } else {
                    uploadData.withMemoryRebound(to: UInt8.self, capacity: size) {
                        state.request.body.append($0, count: size)
                    }
                }
            }
            uploadSize.pointee = 0
            return .YES
        }
        if let response = state.response {
            return queue(connection, state, response)
        }
        if state.tooLarge {
            return queue(connection, state, tooLargeResponse(state.bodyLimit))
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

    func completed(requestContext: UnsafeMutablePointer<UnsafeMutableRawPointer?>?) {
        guard let requestContext, let raw = requestContext.pointee else { return }
        let state = Unmanaged<RequestState>.fromOpaque(raw).takeRetainedValue()
        requestContext.pointee = nil
        if !state.streaming { active.subtract(1, ordering: .sequentiallyConsistent) }
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
            state.request.remoteAddress = "\(host):\(port)"
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
                active.subtract(1, ordering: .sequentiallyConsistent)
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
