import IsletSync
internal import CLinux
internal import CNGHTTP2
import Foundation
import Glibc
import Synchronization

/// How an HTTP/2 server listens and what it accepts.
public struct HTTP2ServerConfiguration: Sendable {
    /// Address to listen on.
    public var host = "127.0.0.1"
    /// Port to listen on; 0 picks a free one.
    public var port = 0
    /// TLS settings; `nil` serves cleartext h2c with prior knowledge.
    public var tls: TLSServerConfiguration?
    /// SETTINGS_MAX_CONCURRENT_STREAMS advertised to every connection.
    public var maxConcurrentStreams: UInt32 = 1_000
    /// The limit a new connection starts with, until the delegate raises it (APNs
    /// allows one stream until the first valid provider token); `nil` starts at
    /// `maxConcurrentStreams`.
    public var initialMaxConcurrentStreams: UInt32?
    /// Largest header block accepted (names + values + 32 bytes each); larger gets 431.
    public var maxHeaderListBytes = 16_384
    /// Largest request body accepted; larger gets 413.
    public var maxBodyBytes = 1 << 20
    /// Send GOAWAY after this many streams on a connection (a fault to test clients).
    public var goawayAfterStreams: Int?
    /// Close a connection idle this long.
    public var idleTimeout: Duration = .seconds(300)
    /// A TLS handshake must finish within this.
    public var handshakeTimeout: Duration = .seconds(10)
    /// Event-loop threads; connections are spread across them.
    public var threads = 1
    /// Response header names whose values differ on every response (ids): sent as
    /// literals HPACK never indexes.
    public var uniqueValueHeaders: [String] = []
    /// The clock a shutdown's grace is measured and waited on: the system's monotonic
    /// clock, or a test's.
    public var clock: any Clock<Duration> = ContinuousClock()

    /// The defaults: localhost, any port, cleartext.
    public init() {}
}

/// The answer to a request, sent now or after `delay`.
public struct HTTP2ServerReply: Sendable {
    /// The response.
    public var response: HTTP2Response
    /// Hold the response this long before sending (injected latency).
    public var delay: Duration?
    /// After `delay`, the response also waits for as long as this answers `true`
    /// (asked on the loop thread every few milliseconds), so that a test can keep an
    /// answer in flight until it has done what must happen meanwhile.
    public var heldWhile: (@Sendable () -> Bool)?

    /// Creates a reply.
    public init(_ response: HTTP2Response, delay: Duration? = nil, heldWhile: (@Sendable () -> Bool)? = nil) {
        self.response = response
        self.delay = delay
        self.heldWhile = heldWhile
    }
}

/// A server connection as the delegate sees it. Valid only during the delegate call
/// it is passed to, on the connection's loop thread.
public final class HTTP2ServerConnectionContext {
    /// A number unique among this server's connections.
    public let id: UInt64
    /// A value the delegate may keep with the connection (0 at first), read and
    /// written only from delegate calls.
    public var attachment = 0
    unowned let connection: ServerConnection

    init(id: UInt64, connection: ServerConnection) {
        self.id = id
        self.connection = connection
    }

    /// Writes made to the connection's socket so far.
    public var writes: Int { connection.writes }

    /// Advertises a new SETTINGS_MAX_CONCURRENT_STREAMS on this connection.
    public func setMaxConcurrentStreams(_ limit: UInt32) {
        connection.setMaxConcurrentStreams(limit)
    }
}

/// What an HTTP/2 server does with requests. Called on the event-loop thread that
/// owns the connection; it must answer quickly (use `HTTP2ServerReply.delay`
/// rather than sleeping).
public protocol HTTP2ServerDelegate: AnyObject, Sendable {
    /// A connection completed its handshake.
    func connectionOpened(_ connection: HTTP2ServerConnectionContext)
    /// Answers one complete request.
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply
    /// A connection closed.
    func connectionClosed(_ connection: HTTP2ServerConnectionContext)
}

extension HTTP2ServerDelegate {
    public func connectionOpened(_ connection: HTTP2ServerConnectionContext) {}
    public func connectionClosed(_ connection: HTTP2ServerConnectionContext) {}
}

/// An HTTP/2 server (TLS with ALPN `h2`, or cleartext h2c) on its own event loops.
public final class HTTP2Server: Sendable {
    /// The configuration it was made with.
    public let configuration: HTTP2ServerConfiguration
    private let loops: [EventLoop]
    private let shared: ServerShared
    private let state = Lock<(listener: Listener?, port: Int)>((nil, 0))

    /// Creates a server; nothing listens until `start`.
    public init(configuration: HTTP2ServerConfiguration, delegate: any HTTP2ServerDelegate) throws(HTTP2Error) {
        self.configuration = configuration
        let tls = try configuration.tls.map { tls throws(HTTP2Error) in try TLSContext.server(tls) }
        self.loops = (0..<max(1, configuration.threads)).map { EventLoop(name: "islet-h2srv-\($0)") }
        self.shared = ServerShared(configuration: configuration, tls: tls, delegate: delegate, loops: loops)
    }

    deinit {
        for loop in loops { loop.stop() }
    }

    /// Binds and starts accepting; answers the bound port.
    @discardableResult
    public func start() throws(HTTP2Error) -> Int {
        let (fd, port) = try listenSocket(host: configuration.host, port: configuration.port)
        let listener = Listener(fd: fd, shared: shared)
        let loop = loops[0]
        loop.execute { loop.registerListener(fd, listener) }
        state.withLock { $0 = (listener, port) }
        return port
    }

    /// The bound port (after `start`).
    public var port: Int { state.withLock { $0.port } }

    /// Connections open now.
    public var openConnections: Int { shared.openConnections.load(ordering: .relaxed) }

    /// Stops accepting, sends GOAWAY on every connection, waits up to `gracePeriod`
    /// for streams in flight, then closes everything.
    public func shutdown(gracePeriod: Duration = .seconds(5)) async {
        guard let listener = state.withLock({ state -> Listener? in
            let listener = state.listener
            state.listener = nil
            return listener
        }) else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loops[0].execute {
                listener.stop()
                continuation.resume()
            }
        }
        for loop in loops {
            let shared = self.shared
            loop.execute { shared.goAwayAll(on: loop) }
        }
        let shared = shared
        _ = await configuration.clock.poll(every: .milliseconds(5), upTo: gracePeriod) {
            shared.openConnections.load(ordering: .relaxed) == 0
        }
        for loop in loops {
            let shared = self.shared
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                loop.execute {
                    shared.closeAll(on: loop)
                    continuation.resume()
                }
            }
        }
    }
}

/// The connections one loop serves.
/// `@unchecked Sendable`: touched only on that loop's thread.
final class LoopConnections: @unchecked Sendable {
    /// By connection id.
    var connections: [UInt64: ServerConnection] = [:]
}

/// State every loop of a server shares.
/// `@unchecked Sendable`: each loop's `LoopConnections` is touched only on that
/// loop's thread (the table of them never changes after `init`); the rest is
/// immutable or atomic.
final class ServerShared: @unchecked Sendable {
    let configuration: HTTP2ServerConfiguration
    let tls: TLSContext?
    let delegate: any HTTP2ServerDelegate
    let loops: [EventLoop]
    let openConnections = Atomic<Int>(0)
    let nextConnectionID = Atomic<UInt64>(1)
    private let nextLoop = Atomic<Int>(0)
    private let connections: [ObjectIdentifier: LoopConnections]

    init(configuration: HTTP2ServerConfiguration, tls: TLSContext?, delegate: any HTTP2ServerDelegate, loops: [EventLoop]) {
        self.configuration = configuration
        self.tls = tls
        self.delegate = delegate
        self.loops = loops
        self.connections = Dictionary(uniqueKeysWithValues: loops.map { (ObjectIdentifier($0), LoopConnections()) })
    }

    /// Takes a freshly accepted socket onto one of the loops.
    func adopt(fd: Int32) {
        let loop = loops[nextLoop.wrappingAdd(1, ordering: .relaxed).oldValue % loops.count]
        let accepted = AcceptedSocket(fd: fd)
        loop.execute { [self] in
            let transport: Transport
            do {
                transport = try tls.map { context throws(HTTP2Error) in try Transport(fd: accepted.fd, context: context, serverName: nil, verify: false) }
                    ?? Transport(fd: accepted.fd)
            } catch {
                close(accepted.fd)
                return
            }
            let id = nextConnectionID.wrappingAdd(1, ordering: .relaxed).oldValue
            let connection = ServerConnection(id: id, shared: self, loop: loop, transport: transport)
            connections[ObjectIdentifier(loop)]!.connections[id] = connection
            openConnections.wrappingAdd(1, ordering: .relaxed)
            loop.register(accepted.fd, connection)
            connection.start()
        }
    }

    func removed(_ connection: ServerConnection) {
        if connections[ObjectIdentifier(connection.loop)]!.connections.removeValue(forKey: connection.id) != nil {
            openConnections.wrappingAdd(-1, ordering: .relaxed)
        }
    }

    /// Connection `id` of `loop`, while it is open. Timers find their connection
    /// through this rather than through a weak reference, which would slow every
    /// retain of the connection down.
    func connection(_ id: UInt64, on loop: EventLoop) -> ServerConnection? {
        connections[ObjectIdentifier(loop)]!.connections[id]
    }

    func goAwayAll(on loop: EventLoop) {
        for connection in connections[ObjectIdentifier(loop)]!.connections.values { connection.goAway() }
    }

    func closeAll(on loop: EventLoop) {
        for connection in connections[ObjectIdentifier(loop)]!.connections.values { connection.close(nil) }
    }
}

/// A socket descriptor crossing to another loop. `@unchecked Sendable`: an integer
/// that exactly one loop owns after the hand-off.
private struct AcceptedSocket: @unchecked Sendable {
    let fd: Int32
}

/// The listening socket. `@unchecked Sendable`: used only on the first loop's thread.
final class Listener: EventHandler, @unchecked Sendable {
    let fd: Int32
    private let shared: ServerShared
    private var stopped = false

    init(fd: Int32, shared: ServerShared) {
        self.fd = fd
        self.shared = shared
    }

    func handleEvents(_ events: UInt32) {
        while !stopped {
            let client = islet_accept_nonblocking(fd)
            if client < 0 { return }
            setNoDelay(client)
            shared.adopt(fd: client)
        }
    }

    func stop() {
        guard !stopped else { return }
        stopped = true
        shared.loops[0].unregister(fd)
        close(fd)
    }
}
