import Foundation
import HTTP2
import IsletCrypto

/// `islet-bench`: helpers that `make bench` runs beside the real programs.
///
/// - `h2-server --port N [--threads N] [--cert F --key F]`: an HTTP/2 server over TLS
///   that answers every request 200 with an `apns-id`, doing nothing else: the
///   ceiling of Islet's HTTP/2 layer, to compare with nghttpd and `islet sim`.

final class NullDelegate: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(status: 200, headers: [("apns-id", "d3b0f5c4-5a4e-4b8e-9f00-000000000000")]))
    }
}

func value(_ flag: String, in arguments: [String]) -> String? {
    guard let index = arguments.firstIndex(of: flag), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "h2-server":
    var configuration = HTTP2ServerConfiguration()
    configuration.port = Int(value("--port", in: arguments) ?? "0") ?? 0
    configuration.threads = Int(value("--threads", in: arguments) ?? "1") ?? 1
    if let cert = value("--cert", in: arguments), let key = value("--key", in: arguments) {
        configuration.tls = TLSServerConfiguration(
            certificateChainPEM: try String(contentsOfFile: cert, encoding: .utf8),
            privateKeyPEM: try String(contentsOfFile: key, encoding: .utf8))
    } else {
        let authority = try LocalCertificateAuthority.generate()
        configuration.tls = TLSServerConfiguration(
            certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
    }
    let server = try HTTP2Server(configuration: configuration, delegate: NullDelegate())
    let port = try server.start()
    print("h2-server listening on \(port)")
    while true { sleep(3600) }
default:
    FileHandle.standardError.write(Data("usage: islet-bench h2-server --port N [--threads N]\n".utf8))
    exit(2)
}
