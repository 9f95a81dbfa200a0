import Foundation
public import HTTP2
import HTTPServer
import IsletSync
public import IsletCore
import IsletCrypto

/// FCM you can run: the token endpoint (`POST /token`) and FCM's HTTP v1 API
/// (`POST /v1/projects/{project}/messages:send`) over HTTP/2 and TLS on one port
/// (as Islet speaks to FCM), and the same two over plain HTTP/1.1 on another (as
/// Google's Python clients, on `requests`, speak), with the rules of
/// `FCMSimulatorEngine` behind both. The HTTP/1.1 listener also serves a JSON
/// inspection API (see `FCMInspectionAPI`): the sends and what the simulated
/// Android devices did, scripted faults, new trusted accounts.
public final class FCMSimulator: Sendable {
    /// The rules, the trusted accounts and the simulated Android devices.
    public let engine: FCMSimulatorEngine
    /// The CA certificate clients must trust, when the simulator made its own.
    public let caCertificatePEM: String?
    /// The address the HTTP/1.1 listener binds. It has no authentication, so it
    /// stays on loopback unless it is moved on purpose.
    public let http1Host: String
    private let server: HTTP2Server
    private let delegate: FCMDelegate
    private let http1: HTTPServer
    private let http1Front: FCMPlainHTTPFront
    private let boundPorts = Lock<(http2: Int, http1: Int)>((0, 0))

    /// A simulator on `host:port` (HTTP/2 and TLS; 0 picks a free port), with `tls`
    /// or a certificate of its own for `localhost` and `127.0.0.1`, and on
    /// `http1Host:http1Port` (plain HTTP/1.1; 0 picks a free port). `observer` sees
    /// every send once answered.
    public init(
        host: String = "127.0.0.1", port: Int = 0, tls: TLSServerConfiguration? = nil,
        http1Host: String = "127.0.0.1", http1Port: Int = 0,
        clock: any WallClock = SystemWallClock(),
        random: some RandomSource = SeededRandomSource(seed: UInt64.random(in: .min ... .max)),
        observer: (@Sendable (FCMRecord) -> Void)? = nil
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
        engine = FCMSimulatorEngine(clock: clock, random: random, observer: observer)
        var configuration = HTTP2ServerConfiguration()
        configuration.host = host
        configuration.port = port
        configuration.tls = tls
        configuration.maxBodyBytes = 64 * 1024
        configuration.threads = 1
        delegate = FCMDelegate(engine: engine, host: host)
        server = try HTTP2Server(configuration: configuration, delegate: delegate)
        self.http1Host = http1Host
        var plain = HTTPServerConfiguration()
        plain.host = http1Host
        plain.port = http1Port
        plain.threads = 1
        plain.taskThreads = 1
        plain.maxBodyBytes = 64 * 1024
        let front = FCMPlainHTTPFront(engine: engine, listeningHost: http1Host)
        http1Front = front
        http1 = HTTPServer(configuration: plain, immediate: { request in front.handle(request) })
    }

    /// Starts both listeners; answers the HTTP/2 port (the HTTP/1.1 one is
    /// `http1Port`). When it fails, `shutdown` still stops the listener that had
    /// started.
    @discardableResult
    public func start() throws -> Int {
        let port = try server.start()
        let plainPort = try http1.start()
        boundPorts.withLock { $0 = (port, plainPort) }
        delegate.port.withLock { $0 = port }
        http1Front.port.withLock { $0 = plainPort }
        return port
    }

    /// The HTTP/2 port (after `start`).
    public var port: Int { boundPorts.withLock { $0.http2 } }

    /// The base URL of its FCM API over HTTP/2 and TLS (`--fcm-url`).
    public var url: String { "https://127.0.0.1:\(port)" }

    /// The token URI over HTTP/2 and TLS, which `makeServiceAccount` names by default.
    public var tokenURI: String { url + "/token" }

    /// The HTTP/1.1 port (after `start`).
    public var http1Port: Int { boundPorts.withLock { $0.http1 } }

    /// The base URL of the plain-HTTP/1.1 listener: FCM's API for clients on
    /// HTTP/1.1 (Google's Python clients), and the inspection API.
    public var http1URL: String { "http://\(FCMPlainHTTPFront.urlHost(http1Host)):\(http1Port)" }

    /// The token URI over HTTP/1.1, which the accounts of `POST /accounts` name.
    public var http1TokenURI: String { http1URL + "/token" }

    /// A new service account the simulator trusts, as the JSON a team downloads from
    /// Firebase (`type`, `project_id`, `private_key_id`, `private_key`,
    /// `client_email`, `token_uri`), its token URI `tokenURI` (by default this
    /// simulator's, once started).
    public func makeServiceAccount(
        projectID: String = "islet-demo", clientEmail: String? = nil, tokenURI: String? = nil
    ) throws -> JSONValue {
        try Self.makeServiceAccount(engine: engine, projectID: projectID, clientEmail: clientEmail, tokenURI: tokenURI ?? self.tokenURI)
    }

    /// A new account `engine` trusts, as `makeServiceAccount` answers it.
    static func makeServiceAccount(
        engine: FCMSimulatorEngine, projectID: String, clientEmail: String?, tokenURI: String
    ) throws -> JSONValue {
        let key = try RSA.SigningKey.generate()
        // The engine trusts one key per email: a new account has an email of its own.
        let email = clientEmail ?? "islet-\(String(UInt32.random(in: .min ... .max), radix: 16))@\(projectID).iam.gserviceaccount.com"
        engine.trust(FCMTrustedAccount(clientEmail: email, projectID: projectID, publicKey: key.publicKey))
        let keyID = (0..<20).map { _ in String(UInt8.random(in: 0...255), radix: 16) }.joined()
        return [
            "type": "service_account", "project_id": .string(projectID), "private_key_id": .string(keyID),
            "private_key": .string(key.pemRepresentation), "client_email": .string(email),
            "token_uri": .string(tokenURI),
        ]
    }

    /// Stops both listeners after answering what is in flight.
    public func shutdown() async {
        await server.shutdown(gracePeriod: .seconds(1))
        await http1.shutdown(gracePeriod: .seconds(1))
    }
}

/// Serves the engine over plain HTTP/1.1: `POST /token` and `/v1/…` as FCM answers
/// them (the same answers as over HTTP/2, headers such as `Retry-After` included),
/// everything else through the inspection API. FCM's endpoints are not behind the
/// inspection API's guard: like FCM's, they take a signed assertion or an access
/// token, which no web page holds, and Google's clients post the token endpoint a
/// form.
final class FCMPlainHTTPFront: Sendable {
    let engine: FCMSimulatorEngine
    let listeningHost: String
    /// The bound port, once started.
    let port = Lock<Int>(0)
    private let inspection: FCMInspectionAPI

    init(engine: FCMSimulatorEngine, listeningHost: String) {
        self.engine = engine
        self.listeningHost = listeningHost
        // Accounts made here name this listener's token endpoint unless asked otherwise.
        let port = port
        inspection = FCMInspectionAPI(engine: engine, listeningHost: listeningHost) { projectID, clientEmail, tokenURI in
            let own = "http://\(Self.urlHost(listeningHost)):\(port.withLock { $0 })/token"
            return try FCMSimulator.makeServiceAccount(
                engine: engine, projectID: projectID, clientEmail: clientEmail, tokenURI: tokenURI ?? own)
        }
    }

    func handle(_ request: HTTPRequest) -> HTTPResponse {
        let path = request.path
        guard path == "/token" || path == "/v1" || path.hasPrefix("/v1/") else {
            return inspection.handle(request)
        }
        guard request.method == "POST" else {
            return Self.reply(405, [("content-type", "application/json; charset=UTF-8")],
                #"{"error":{"code":405,"message":"Method not allowed.","status":"UNIMPLEMENTED"}}"#)
        }
        if path == "/token" {
            // The assertion's audience is the URI the client posted to.
            let authority = request.headers["Host"] ?? "\(Self.urlHost(listeningHost)):\(port.withLock { $0 })"
            let answer = engine.handleToken(form: request.body, tokenURI: "http://\(authority)/token")
            return Self.reply(answer.status, [("content-type", "application/json; charset=UTF-8")], answer.body)
        }
        let answer = engine.handleSend(path: path, authorization: request.headers["Authorization"], body: request.body)
        return Self.reply(answer.status, answer.headers, answer.body)
    }

    static func reply(_ status: Int, _ headers: [(String, String)], _ body: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: HTTPHeaders(headers.map { (name: $0.0, value: $0.1) }), body: Data(body.utf8))
    }

    /// `host` as a client names it in a URL: an address that means every address
    /// as 127.0.0.1, an IPv6 address in brackets.
    static func urlHost(_ host: String) -> String {
        if ["", "0.0.0.0", "::", "*"].contains(host) { return "127.0.0.1" }
        return host.contains(":") && !host.hasPrefix("[") ? "[\(host)]" : host
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
