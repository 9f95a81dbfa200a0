import Foundation
import HTTP2
import HTTPClient
import IsletCrypto
import IsletTesting
import Synchronization
import Testing

/// Answers 200 with the request's path, counting the connections it accepted.
final class CountingH2Receiver: HTTP2ServerDelegate {
    let connections = Atomic<Int>(0)

    func connectionOpened(_ connection: HTTP2ServerConnectionContext) {
        connections.add(1, ordering: .relaxed)
    }

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(
            status: 200, headers: [("retry-after", "3")], body: Data("\(request.method) \(request.path) \(request.body.count)".utf8)))
    }
}

@Suite("Outbound HTTP client over TLS")
struct HTTPClientTLSTests {
    @Test func speaksHTTP2OverTLSToATrustedServerOnOneConnection() async throws {
        try await withTemporaryDirectory { folder in
            let authority = try LocalCertificateAuthority.generate()
            let caFile = folder.appendingPathComponent("ca.pem")
            try Data(authority.caCertificatePEM.utf8).write(to: caFile)
            var serverConfiguration = HTTP2ServerConfiguration()
            serverConfiguration.tls = TLSServerConfiguration(
                certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
            let delegate = CountingH2Receiver()
            let server = try HTTP2Server(configuration: serverConfiguration, delegate: delegate)
            let port = try server.start()

            var configuration = HTTPClientConfiguration()
            configuration.allowPrivateAddresses = true
            configuration.caFile = caFile.path
            let client = try HTTPClient(configuration: configuration)
            // One first, so that the others find the connection and multiplex on it.
            let first = await client.send(OutboundRequest(url: "https://localhost:\(port)/first", body: Data("abc".utf8)))
            #expect(try first.get().body == Data("POST /first 3".utf8))
            let results = await withTaskGroup(of: Result<OutboundResponse, OutboundFailure>.self) { group in
                for index in 0..<50 {
                    group.addTask { await client.send(OutboundRequest(url: "https://127.0.0.1:\(port)/hook/\(index)")) }
                }
                return await group.reduce(into: []) { $0.append($1) }
            }
            #expect(results.count == 50)
            #expect(results.allSatisfy { (try? $0.get().status) == 200 }, "\(results.compactMap { $0.failure })")
            #expect(results.allSatisfy { (try? $0.get().headers["retry-after"]) == "3" })
            // localhost and 127.0.0.1 are different hosts to the connection cache.
            #expect(delegate.connections.load(ordering: .relaxed) <= 2)

            // Without the local authority the certificate is not trusted.
            var untrusting = HTTPClientConfiguration()
            untrusting.allowPrivateAddresses = true
            let stranger = try HTTPClient(configuration: untrusting)
            let refused = await stranger.send(OutboundRequest(url: "https://127.0.0.1:\(port)/hook"))
            #expect(refused.failure?.kind == .tls, "\(refused)")
            await stranger.shutdown()
            await client.shutdown()
            await server.shutdown()
        }
    }
}
