import Foundation
public import HTTP2
import IsletSync
public import IsletCore
import IsletCrypto

/// FCM you can run: the token endpoint (`POST /token`) and FCM's HTTP v1 API
/// (`POST /v1/projects/{project}/messages:send`) over HTTP/2 and TLS on one port,
/// with the rules of `FCMSimulatorEngine` behind them.
public final class FCMSimulator: Sendable {
    /// The rules, the trusted accounts and the simulated Android devices.
    public let engine: FCMSimulatorEngine
    /// The CA certificate clients must trust, when the simulator made its own.
    public let caCertificatePEM: String?
    private let server: HTTP2Server
    private let delegate: FCMDelegate
    private let boundPort = Lock<Int>(0)

    /// A simulator on `host:port` (0 picks a free port), with `tls` or a certificate
    /// of its own for `localhost` and `127.0.0.1`.
    public init(
        host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
        clock: any WallClock = SystemWallClock(),
        random: some RandomSource = SeededRandomSource(seed: UInt64.random(in: .min ... .max))
    ) throws {
        var tls = tls
        if tls == nil {
            let authority = try LocalCertificateAuthority.generate(commonName: "Islet FCM simulator CA")
            tls = TLSServerConfiguration(
                certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
            caCertificatePEM = authority.caCertificatePEM
        } else {
            caCertificatePEM = nil
        }
        engine = FCMSimulatorEngine(clock: clock, random: random)
        var configuration = HTTP2ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        configuration.maxBodyBytes = 64 * 1024
        configuration.threads = 1
        delegate = FCMDelegate(engine: engine, host: host)
        server = try HTTP2Server(configuration: configuration, delegate: delegate)
    }

    /// Starts listening; answers the port.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        boundPort.withLock { $0 = port }
        delegate.port.withLock { $0 = port }
        return port
    }

    /// The port (after `start`).
    public var port: Int { boundPort.withLock { $0 } }

    /// The base URL of its FCM API (`--fcm-url`).
    public var url: String { "https://127.0.0.1:\(port)" }

    /// The token URI a service account for it names.
    public var tokenURI: String { url + "/token" }

    /// A new service account the simulator trusts, as the JSON a team downloads from
    /// Firebase (`type`, `project_id`, `private_key_id`, `private_key`,
    /// `client_email`, `token_uri`), its token URI `tokenURI` (by default this
    /// simulator's, once started).
    public func makeServiceAccount(
        projectID: String = "islet-demo", clientEmail: String? = nil, tokenURI: String? = nil
    ) throws -> JSONValue {
        let key = try RSA.SigningKey.generate()
        let email = clientEmail ?? "islet@\(projectID).iam.gserviceaccount.com"
        engine.trust(FCMTrustedAccount(clientEmail: email, projectID: projectID, publicKey: key.publicKey))
        let keyID = (0..<20).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        return [
            "type": "service_account", "project_id": .string(projectID), "private_key_id": .string(keyID),
            "private_key": .string(key.pemRepresentation), "client_email": .string(email),
            "token_uri": .string(tokenURI ?? self.tokenURI),
        ]
    }

    /// Stops listening after answering what is in flight.
    public func shutdown() async {
        await server.shutdown(gracePeriod: .seconds(1))
    }
}

/// Routes the two endpoints to the engine.
final class FCMDelegate: HTTP2ServerDelegate {
    let engine: FCMSimulatorEngine
    let host: String
    let port = Lock<Int>(0)

    init(engine: FCMSimulatorEngine, host: String) {
        self.engine = engine
        self.host = host
    }

    func connectionOpened(_ connection: HTTP2ServerConnectionContext) {}
    func connectionClosed(_ connection: HTTP2ServerConnectionContext) {}

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        let json = ("content-type", "application/json; charset=UTF-8")
        guard request.method == "POST" else {
            return Self.reply(405, [json], #"{"error":{"code":405,"message":"Method not allowed.","status":"UNIMPLEMENTED"}}"#)
        }
        let path = request.path.split(separator: "?", maxSplits: 1).first.map(String.init) ?? request.path
        if path == "/token" {
            // The assertion's audience is the URI the client posted to.
            let authority = request.authority ?? "\(host):\(port.withLock { $0 })"
            let answer = engine.handleToken(form: request.body, tokenURI: "https://\(authority)/token")
            return Self.reply(answer.status, [json], answer.body)
        }
        let answer = engine.handleSend(path: path, authorization: request.fields.first("authorization"), body: request.body)
        return Self.reply(answer.status, answer.headers, answer.body)
    }

    static func reply(_ status: Int, _ headers: [(String, String)], _ body: String) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(
            status: status, headers: headers.map { (name: $0.0, value: $0.1) }, body: Data(body.utf8)))
    }
}
