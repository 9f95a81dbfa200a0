import APNs
import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Testing

/// Islet's APNs client against an APNs it was not tuned to: scripts/peers/
/// h2_apns_server.py, written on the h2 library (PyPI) over Python's TLS, answering
/// as APNs would by the token's first digits, resetting streams, and sending a
/// GOAWAY. Its log line for every request shows what reached it.
@Suite("APNs client against an HTTP/2 server Islet did not write", .requires(.python))
struct PeerServerTests {
    /// One answer the server logged.
    struct Logged: Decodable {
        var connection: Int
        var stream: Int
        var apns_id: String?
        var token: String
        var answer: Answer

        enum Answer: Decodable, Equatable {
            case status(Int)
            case word(String)

            init(from decoder: any Decoder) throws {
                let container = try decoder.singleValueContainer()
                if let status = try? container.decode(Int.self) {
                    self = .status(status)
                } else {
                    self = .word(try container.decode(String.self))
                }
            }
        }
    }

    /// The server running, with a client pointed at it.
    struct Peer {
        let server: ChildProcess
        let client: APNsClient
        let key: APNsSigningKey

        var logged: [Logged] {
            server.lines.dropFirst().compactMap { try? JSONDecoder().decode(Logged.self, from: Data($0.utf8)) }
        }

        /// The log once `count` of its lines satisfy `match` (it comes through a
        /// pipe, a moment after the answers).
        func logged(awaiting count: Int, where match: @escaping (Logged) -> Bool = { _ in true }) async -> [Logged] {
            _ = await eventually { logged.filter(match).count >= count }
            return logged
        }

        func send(_ token: String) async -> APNsResult {
            await client.send(
                APNsRequest(
                    deviceToken: token, topic: "com.example.app", pushType: .alert,
                    payload: Data(#"{"aps":{"alert":{"title":"Order","body":"On its way"}}}"#.utf8)),
                key: key, environment: .sandbox)
        }
    }

    /// Starts the server (with `arguments`) and a client, runs `body`, and stops both.
    static func withPeer(
        _ arguments: [String] = [], _ body: (Peer) async throws -> Void
    ) async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/h2_apns_server.py")
        try await withTemporaryDirectory { directory in
            let authority = try LocalCertificateAuthority.generate(commonName: "Peer APNs test CA")
            let cert = directory.appendingPathComponent("server.pem")
            let key = directory.appendingPathComponent("server.key")
            try Data(authority.serverCertificateChainPEM.utf8).write(to: cert)
            try Data(authority.serverPrivateKeyPEM.utf8).write(to: key)
            let server = try ChildProcess(python, [script, cert.path, key.path] + arguments)
            defer { server.stop() }
            let announced = await server.line { $0.hasPrefix("port=") }
            let port = try #require(announced.flatMap { Int($0.dropFirst("port=".count)) }, "the server did not start: \(server.standardError)")
            var configuration = APNsClientConfiguration()
            configuration.sandboxURL = URL(string: "https://127.0.0.1:\(port)")!
            configuration.trustRootsPEM = authority.caCertificatePEM
            configuration.breakerThreshold = 1_000
            let client = APNsClient(configuration: configuration)
            do {
                let signing = APNsSigningKey(keyID: "PEERKEY001", teamID: "PEERTEAM01", key: try P256.SigningKey.generate())
                try await body(Peer(server: server, client: client, key: signing))
            } catch {
                await client.shutdown()
                throw error
            }
            await client.shutdown()
        }
    }

    static func token(_ prefix: String, _ index: Int = 0) -> String {
        let digits = prefix + String(format: "%06x", index)
        return digits + String(repeating: "0", count: 64 - digits.count)
    }

    @Test func answersAreReadAsAPNsSendsThem() async throws {
        try await Self.withPeer { peer in
            let delivered = await peer.send(Self.token("aa"))
            #expect(delivered.disposition == .delivered)
            #expect(delivered.response?.status == 200)
            #expect(delivered.response?.apnsID == delivered.apnsID, "the server echoes the apns-id")
            #expect(delivered.attempts == 1)

            let bad = await peer.send(Self.token("ba"))
            #expect(bad.disposition == .tokenUnknownInEnvironment)
            #expect(bad.response?.reason == .badDeviceToken)
            #expect(bad.attempts == 1)

            let gone = await peer.send(Self.token("0e"))
            #expect(gone.disposition == .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000)))
            #expect(gone.response?.status == 410)
            #expect(gone.response?.reason == .unregistered)

            let topic = await peer.send(Self.token("d7"))
            #expect(topic.disposition == .wrongTopic)
            #expect(topic.response?.reason == .deviceTokenNotForTopic)

            let logged = await peer.logged(awaiting: 4)
            #expect(logged.map(\.answer) == [.status(200), .status(400), .status(410), .status(400)])
            #expect(Set(logged.map(\.connection)) == [0], "one connection carries them all")
            #expect(logged.map(\.apns_id) == [delivered.apnsID, bad.apnsID, gone.apnsID, topic.apnsID])
        }
    }

    @Test func aResetStreamFailsOnlyItsPushAsTheFailurePolicySays() async throws {
        try await Self.withPeer { peer in
            // Pushes in flight together: one whose stream is always reset, one
            // refused once (REFUSED_STREAM: never processed, sent again at once), and
            // ordinary ones beside them.
            let tokens = [Self.token("ee")] + [Self.token("7e")] + (0..<8).map { Self.token("aa", $0) }
            let results = await withTaskGroup(of: (String, APNsResult).self) { group in
                for token in tokens { group.addTask { (token, await peer.send(token)) } }
                var all: [String: APNsResult] = [:]
                for await (token, result) in group { all[token] = result }
                return all
            }
            let reset = try #require(results[Self.token("ee")])
            // A reset stream is a transport failure, answered after its one attempt
            // for the caller to send again.
            #expect(reset.disposition == .retry)
            #expect(reset.attempts == 1)
            #expect(reset.error?.code == .transport)
            #expect(reset.response == nil)
            let refused = try #require(results[Self.token("7e")])
            #expect(refused.disposition == .delivered)
            #expect(refused.attempts == 1, "a refused stream is sent again without counting an attempt")
            for index in 0..<8 {
                #expect(results[Self.token("aa", index)]?.disposition == .delivered)
                #expect(results[Self.token("aa", index)]?.attempts == 1)
            }

            let logged = await peer.logged(awaiting: 11)
            let resets = logged.filter { $0.token == Self.token("ee") }
            #expect(resets.count == 1)
            #expect(resets.allSatisfy { $0.answer == .word("reset") && $0.apns_id == reset.apnsID })
            #expect(logged.filter { $0.token == Self.token("7e") }.map(\.answer) == [.word("refused"), .status(200)])
            for index in 0..<8 {
                #expect(logged.filter { $0.token == Self.token("aa", index) }.map(\.answer) == [.status(200)])
            }
            #expect(Set(logged.map(\.connection)) == [0], "a reset stream leaves the connection open")
        }
    }

    @Test func aGoawaysUnprocessedStreamsAreSentAgainOnANewConnectionOnce() async throws {
        try await Self.withPeer(["--goaway-after", "10"]) { peer in
            // The client never sends a push again as a retry; the streams a GOAWAY
            // left unprocessed must still be delivered, each once.
            let tokens = (0..<40).map { Self.token("aa", $0) }
            let results = await withTaskGroup(of: (String, APNsResult).self) { group in
                for token in tokens { group.addTask { (token, await peer.send(token)) } }
                var all: [String: APNsResult] = [:]
                for await (token, result) in group { all[token] = result }
                return all
            }
            #expect(results.count == 40)
            #expect(
                results.values.allSatisfy { $0.disposition == .delivered && $0.attempts == 1 },
                "\(results.values.filter { $0.disposition != .delivered }.prefix(3)); server: \(peer.server.lines.prefix(3)) \(peer.server.standardError)")

            let logged = await peer.logged(awaiting: 40) { $0.answer == .status(200) }
            let dropped = logged.filter { $0.answer == .word("dropped") }
            #expect(dropped.count >= 5, "the GOAWAY left streams unprocessed: \(logged.count) logged")
            #expect(dropped.allSatisfy { $0.connection == 0 })
            #expect(Set(logged.map(\.connection)).count >= 2, "the refused streams went on a new connection")
            let answered = logged.filter { $0.answer == .status(200) }
            #expect(answered.count == 40, "every push answered once")
            for token in tokens {
                let sent = answered.filter { $0.token == token }
                #expect(sent.count == 1, "\(token) answered \(sent.count) times")
                #expect(sent.first?.apns_id == results[token]?.apnsID, "the apns-id is kept when sent again")
            }
            // The first connection processed exactly the streams up to the GOAWAY's.
            let first = logged.filter { $0.connection == 0 && $0.answer == .status(200) }
            #expect(first.count == 5)
        }
    }
}
