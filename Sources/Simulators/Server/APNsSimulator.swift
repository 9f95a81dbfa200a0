import IsletSync
import Foundation
public import HTTP2
import HTTPServer
public import IsletCore
import IsletCrypto

/// How an `APNsSimulator` listens and misbehaves.
public struct APNsSimulatorOptions: Sendable {
    /// Address the APNs listener binds.
    public var host = "127.0.0.1"
    /// Address the inspection API binds. It has no authentication, so it stays on
    /// loopback unless it is moved on purpose (`islet sim --inspect-host`).
    public var inspectHost = "127.0.0.1"
    /// Port of the APNs endpoint (HTTP/2 over TLS); 0 picks a free one.
    public var port = 2197
    /// Port of the plain-HTTP inspection API; `nil` serves none; 0 picks a free one.
    public var inspectPort: Int? = 2198
    /// Port of the channel management API (HTTP/2 over TLS, the same certificate),
    /// which APNs serves on hosts of their own; `nil` serves none; 0 picks a free
    /// one. `islet sim` serves it on 2195 unless told otherwise.
    public var channelsPort: Int?
    /// The server certificate and key; `nil` generates a local CA and a certificate
    /// for `localhost`, `127.0.0.1` and `::1`.
    public var tls: TLSServerConfiguration?
    /// The engine's rules: environment, trusted keys, fault injection.
    public var engine = SimulatorConfiguration()
    /// Extra time before each answer.
    public var latency: Duration?
    /// While closed, answers wait (after `latency`); `nil` holds nothing.
    public var answerGate: AnswerGate?
    /// Send GOAWAY after this many streams on a connection.
    public var goawayAfterStreams: Int?
    /// SETTINGS_MAX_CONCURRENT_STREAMS once a connection has shown a valid provider
    /// token (one stream is allowed before, as APNs does).
    public var maxStreams: UInt32 = 1_000
    /// Event-loop threads serving APNs connections.
    public var threads = 1

    /// The defaults of `islet sim`.
    public init() {}
}

/// An APNs you can run: HTTP/2 over TLS with APNs's rules and simulated devices
/// behind it (see `SimulatorEngine`), plus a JSON inspection API over plain HTTP on
/// which tests and people read back what it received.
public final class APNsSimulator: Sendable {
    /// The options it was made with (with the generated certificate, if any).
    public let options: APNsSimulatorOptions
    /// The rules and the simulated devices.
    public let engine: SimulatorEngine
    /// The CA certificate clients must trust, when the simulator made its own.
    public let caCertificatePEM: String?
    private let apns: HTTP2Server
    private let inspection: HTTPServer?
    private let channels: HTTP2Server?
    private let ports = Lock<(apns: Int, inspect: Int?, channels: Int?)>((0, nil, nil))

    /// Builds a simulator; nothing listens until `start`. `observer` sees every
    /// push once answered (the console lines of `islet sim`). The default random
    /// source is seeded once from the system: minted ids need to be unique, not
    /// secret, and a system call per id would cost more than the rest of a push.
    public init(
        options: APNsSimulatorOptions,
        clock: any WallClock = SystemWallClock(),
        random: some RandomSource = SeededRandomSource(seed: UInt64.random(in: .min ... .max)),
        observer: (@Sendable (PushRecord) -> Void)? = nil
    ) throws {
        var options = options
        if options.tls == nil {
            let authority = try LocalCertificateAuthority.generate(commonName: "Islet APNs simulator CA")
            options.tls = TLSServerConfiguration(
                certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
            caCertificatePEM = authority.caCertificatePEM
        } else {
            caCertificatePEM = nil
        }
        self.options = options
        let engine = SimulatorEngine(configuration: options.engine, clock: clock, random: random, observer: observer)
        self.engine = engine
        var server = HTTP2ServerConfiguration()
        server.host = options.host
        server.port = options.port
        server.tls = options.tls
        server.maxConcurrentStreams = options.maxStreams
        server.initialMaxConcurrentStreams = 1
        server.goawayAfterStreams = options.goawayAfterStreams
        server.maxBodyBytes = 64 * 1024
        server.threads = options.threads
        server.uniqueValueHeaders = [APNsHeaderName.id, APNsHeaderName.uniqueID]
        apns = try HTTP2Server(
            configuration: server,
            delegate: SimulatorDelegate(
                engine: engine, latency: options.latency, gate: options.answerGate, maxStreams: options.maxStreams))
        if let channelsPort = options.channelsPort {
            var management = HTTP2ServerConfiguration()
            management.host = options.host
            management.port = channelsPort
            management.tls = options.tls
            management.maxBodyBytes = 64 * 1024
            management.threads = 1
            management.uniqueValueHeaders = [APNsHeaderName.requestID, APNsHeaderName.channelID]
            channels = try HTTP2Server(configuration: management, delegate: ChannelsDelegate(engine: engine))
        } else {
            channels = nil
        }
        if let inspectPort = options.inspectPort {
            var http = HTTPServerConfiguration()
            http.host = options.inspectHost
            http.port = inspectPort
            http.threads = 1
            http.maxBodyBytes = 1 << 20
            let api = InspectionAPI(engine: engine, listeningHost: options.inspectHost)
            inspection = HTTPServer(configuration: http, immediate: { request in api.handle(request) })
        } else {
            inspection = nil
        }
    }

    /// Starts the listeners; answers the APNs and inspection ports (the channel
    /// management port is ``channelsPort``).
    @discardableResult
    public func start() throws -> (apns: Int, inspect: Int?) {
        let apnsPort = try apns.start()
        let inspectPort = try inspection?.start()
        let channelsPort = try channels?.start()
        ports.withLock { $0 = (apnsPort, inspectPort, channelsPort) }
        return (apnsPort, inspectPort)
    }

    /// The APNs port (after `start`).
    public var port: Int { ports.withLock { $0.apns } }
    /// The inspection API's port (after `start`), if it serves one.
    public var inspectPort: Int? { ports.withLock { $0.inspect } }
    /// The channel management API's port (after `start`), if it serves one.
    public var channelsPort: Int? { ports.withLock { $0.channels } }
    /// APNs connections open now.
    public var openConnections: Int { apns.openConnections }

    /// Stops the listeners after answering what is in flight.
    public func shutdown() async {
        await apns.shutdown(gracePeriod: .seconds(2))
        await channels?.shutdown(gracePeriod: .seconds(2))
        await inspection?.shutdown(gracePeriod: .seconds(2))
    }
}

/// Feeds channel management requests to the engine.
final class ChannelsDelegate: HTTP2ServerDelegate {
    let engine: SimulatorEngine

    init(engine: SimulatorEngine) { self.engine = engine }

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        let answer = engine.handleChannelRequest(
            SimulatorRequest(method: request.method, path: request.path, fields: request.fields, body: request.body),
            connection: ConnectionID(connection.id))
        return HTTP2ServerReply(HTTP2Response(status: answer.status, headers: answer.headers, body: answer.body))
    }

    func connectionClosed(_ connection: HTTP2ServerConnectionContext) {
        engine.connectionClosed(ConnectionID(connection.id))
    }
}

/// Feeds HTTP/2 requests to the engine, on the connection's event-loop thread.
final class SimulatorDelegate: HTTP2ServerDelegate {
    let engine: SimulatorEngine
    let latency: Duration?
    let heldWhile: (@Sendable () -> Bool)?
    let maxStreams: UInt32

    init(engine: SimulatorEngine, latency: Duration?, gate: AnswerGate?, maxStreams: UInt32) {
        self.engine = engine
        self.latency = latency
        if let gate {
            heldWhile = { @Sendable in gate.isClosed }
        } else {
            heldWhile = nil
        }
        self.maxStreams = maxStreams
    }

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        let id = ConnectionID(connection.id)
        let answer = engine.handle(
            SimulatorRequest(method: request.method, path: request.path, fields: request.fields, body: request.body),
            connection: id)
        // APNs lifts the one-stream limit once a connection shows a valid token; the
        // attachment remembers that it was lifted, so later pushes skip the check.
        if connection.attachment == 0 && engine.isAuthenticated(id) {
            connection.attachment = 1
            connection.setMaxConcurrentStreams(maxStreams)
        }
        return HTTP2ServerReply(HTTP2Response(status: answer.status, headers: answer.headers, body: answer.body), delay: latency, heldWhile: heldWhile)
    }

    func connectionClosed(_ connection: HTTP2ServerConnectionContext) {
        engine.connectionClosed(ConnectionID(connection.id))
    }
}
