import FCM
import Foundation
import HTTPClient
import IsletCore
import IsletCrypto
import IsletTesting
import Testing

/// Islet's FCM client and its service-account assertions against a token endpoint
/// and FCM it did not write: scripts/peers/google_fcm_server.py, on the h2 library,
/// where Google's own google-auth verifies each assertion (signature, audience,
/// lifetime) before an access token is issued.
@Suite("FCM client against a token endpoint and FCM on google-auth", .requires(.python))
struct PeerGoogleTests {
    struct Peer {
        let server: ChildProcess
        let port: Int
        let http: HTTPClient
        let client: FCMClient
        let key: RSA.SigningKey

        var logged: [JSONValue] { server.lines.dropFirst().compactMap { try? JSONValue(parsing: Data($0.utf8)) } }

        /// The log once `count` of its lines satisfy `match` (it comes through a
        /// pipe, a moment after the answers).
        func logged(awaiting count: Int, where match: @escaping (JSONValue) -> Bool) async -> [JSONValue] {
            _ = await eventually { logged.filter(match).count >= count }
            return logged
        }

        func account(key: RSA.SigningKey? = nil) -> FCMServiceAccount {
            FCMServiceAccount(
                projectID: "islet-peer", clientEmail: "islet@islet-peer.iam.gserviceaccount.com",
                privateKeyPEM: (key ?? self.key).pemRepresentation, privateKeyID: "peer-key-1",
                tokenURI: "https://127.0.0.1:\(port)/token")
        }

        func send(_ token: String, account: FCMServiceAccount) async throws -> FCMResult {
            // google-auth checks the assertion's times against the real clock.
            let tokens = try FCMAccessTokens(account: account, exchange: CurlTokenExchange(client: http))
            return await client.send(
                FCMMessage(token: token, data: ["islet_event": "update", "content_state": #"{"eta":3}"#], priority: "normal", ttl: 600, collapseKey: "islet-a"),
                account: account, tokens: tokens)
        }
    }

    static func withPeer(_ body: (Peer) async throws -> Void) async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/google_fcm_server.py")
        try await withTemporaryDirectory { directory in
            let authority = try LocalCertificateAuthority.generate(commonName: "Peer FCM test CA")
            let cert = directory.appendingPathComponent("server.pem")
            let tlsKey = directory.appendingPathComponent("server.key")
            let ca = directory.appendingPathComponent("ca.pem")
            let publicKey = directory.appendingPathComponent("account.pub")
            try Data(authority.serverCertificateChainPEM.utf8).write(to: cert)
            try Data(authority.serverPrivateKeyPEM.utf8).write(to: tlsKey)
            try Data(authority.caCertificatePEM.utf8).write(to: ca)
            let key = try RSA.SigningKey.generate()
            try Data(key.publicKey.pemRepresentation.utf8).write(to: publicKey)
            let server = try ChildProcess(python, [script, cert.path, tlsKey.path, publicKey.path])
            defer { server.stop() }
            let announced = await server.line { $0.hasPrefix("port=") }
            let port = try #require(announced.flatMap { Int($0.dropFirst("port=".count)) }, "the server did not start: \(server.standardError)")
            var settings = HTTPClientConfiguration()
            settings.allowPrivateAddresses = true
            settings.caFile = ca.path
            let http = try HTTPClient(configuration: settings)
            var fcm = FCMClientConfiguration()
            fcm.url = URL(string: "https://127.0.0.1:\(port)")!
            fcm.trustRootsPEM = authority.caCertificatePEM
            let client = FCMClient(configuration: fcm)
            let peer = Peer(server: server, port: port, http: http, client: client, key: key)
            do {
                try await body(peer)
            } catch {
                await client.shutdown()
                await http.shutdown()
                throw error
            }
            await client.shutdown()
            await http.shutdown()
        }
    }

    @Test func googleAuthTakesTheAssertionAndTheMessageGoes() async throws {
        try await Self.withPeer { peer in
            let result = try await peer.send("fcm-device-token-0001:abc", account: peer.account())
            #expect(result.disposition == .delivered, "\(result.error ?? "") \(peer.server.standardError)")
            #expect(result.response?.messageName == "projects/islet-peer/messages/0:1")
            let sends: (JSONValue) -> Bool = { $0["path"] == "/v1/projects/islet-peer/messages:send" && $0["status"] == 200 }
            let log = await peer.logged(awaiting: 1, where: sends)
            let token = try #require(log.first { $0["path"] == "/token" })
            #expect(token["status"] == 200, "\(token)")
            #expect(token["claims"]?["iss"] == "islet@islet-peer.iam.gserviceaccount.com")
            #expect(token["claims"]?["scope"] == "https://www.googleapis.com/auth/firebase.messaging")
            #expect(token["claims"]?["aud"]?.stringValue == "https://127.0.0.1:\(peer.port)/token")
            #expect(log.contains(where: sends))
            // A token the app no longer has comes back as FCM says it.
            let dead = try await peer.send("dead-device-token-0001:abc", account: peer.account())
            #expect(dead.disposition == .tokenDead(since: nil))
            #expect(dead.response?.errorCode == "UNREGISTERED")
        }
    }

    @Test func anAssertionSignedWithAnotherKeyIsRefusedByGoogleAuth() async throws {
        try await Self.withPeer { peer in
            let result = try await peer.send("fcm-device-token-0001:abc", account: peer.account(key: try RSA.SigningKey.generate()))
            #expect(result.disposition == .credentialsRejected)
            #expect(result.error?.contains("invalid_grant") == true, "\(result.error ?? "")")
            let log = await peer.logged(awaiting: 1) { $0["path"] == "/token" }
            let token = try #require(log.first { $0["path"] == "/token" })
            #expect(token["status"] == 400)
            // The client answered only after the endpoint's refusal: nothing was sent.
            #expect(!log.contains { $0["path"]?.stringValue?.hasSuffix("messages:send") == true })
        }
    }
}
