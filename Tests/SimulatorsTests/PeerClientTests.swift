import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Testing

/// The simulator over TLS on port 0, judged by clients Islet did not write
/// (scripts/peers/apns_clients.py, on the tools of scripts/test-requirements.txt):
/// aioapns with its own signer and connection; PyJWT tokens sent with httpx over
/// HTTP/2; and tokens shaped byte for byte as APNSwift 6.4, node-apn, Go's apns2 and
/// Java's pushy shape them. Each must get 200 for a valid alert and a valid Live
/// Activity start, and APNs's own refusal for a token older than an hour, a token
/// signed by another key, and a Live Activity push to a device token.
@Suite("Simulator: independent clients", .requires(.python))
struct PeerClientTests {
    static let keyID = "PEERKEY001"
    static let teamID = "PEERTEAM01"
    static let deviceToken = String(repeating: "d1", count: 32)
    static let clients = ["aioapns", "pyjwt", "apnswift", "node-apn", "apns2", "pushy"]

    struct Result: Decodable {
        var client: String
        var `case`: String
        var status: Int
        var reason: String?
        var apns_id: String?
        var sent_apns_id: String?
        var http_version: String?
    }

    struct Output: Decodable {
        var results: [Result]
    }

    @Test func everyClientGetsWhatAPNsWouldAnswer() async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/apns_clients.py")
        try await withTemporaryDirectory { directory in
            let key = try P256.SigningKey.generate()
            let wrongKey = try P256.SigningKey.generate()
            var options = APNsSimulatorOptions()
            options.port = 0
            options.inspectPort = 0
            options.engine.trustedKeys = [TrustedKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey)]
            let simulator = try APNsSimulator(options: options)
            let ports = try simulator.start()
            let ca = directory.appendingPathComponent("ca.pem")
            let keyFile = directory.appendingPathComponent("key.p8")
            let wrongKeyFile = directory.appendingPathComponent("wrong.p8")
            try Data(try #require(simulator.caCertificatePEM).utf8).write(to: ca)
            try Data(key.pemRepresentation.utf8).write(to: keyFile)
            try Data(wrongKey.pemRepresentation.utf8).write(to: wrongKeyFile)

            let child = try ChildProcess(python, [
                script, "127.0.0.1", String(ports.apns), String(try #require(ports.inspect)), ca.path, keyFile.path,
                wrongKeyFile.path, Self.keyID, Self.teamID, Self.deviceToken,
            ])
            defer { child.stop() }
            let status = await child.exitStatus(within: .seconds(180))
            let printed = child.lines.joined(separator: "\n")
            await simulator.shutdown()
            try #require(status == 0, "the peer clients failed (status \(status.map(String.init) ?? "still running")):\n\(printed)\n\(child.standardError)")

            let output = try JSONDecoder().decode(Output.self, from: Data(try #require(child.lines.last).utf8))
            func result(_ client: String, _ name: String) -> Result? {
                output.results.first { $0.client == client && $0.case == name }
            }
            for client in Self.clients {
                let alert = result(client, "alert")
                #expect(alert?.status == 200, "\(client) alert: \(String(describing: alert))")
                #expect(alert?.apns_id == alert?.sent_apns_id, "\(client): APNs echoes the apns-id it was given")
                #expect(alert?.http_version == "HTTP/2", "\(client)")
                let start = result(client, "start")
                #expect(start?.status == 200, "\(client) start: \(String(describing: start))")
                let expired = result(client, "expired")
                #expect(expired?.status == 403 && expired?.reason == "ExpiredProviderToken", "\(client) expired: \(String(describing: expired))")
                let wrong = result(client, "wrong-key")
                #expect(wrong?.status == 403 && wrong?.reason == "InvalidProviderToken", "\(client) wrong key: \(String(describing: wrong))")
                let mixup = result(client, "kind-mixup")
                #expect(mixup?.status == 400 && mixup?.reason == "DeviceTokenNotForTopic", "\(client) kind mix-up: \(String(describing: mixup))")
            }
            #expect(output.results.count == Self.clients.count * 5)

            // What the simulator saw: the starts started activities, and the tokens
            // that APNs accepts but a stricter server might refuse carry warnings.
            let records = simulator.engine.pushes()
            #expect(records.filter { $0.deviceOutcome == .started }.count == Self.clients.count)
            func warnings(of client: String) -> [String] {
                records.filter { $0.answer.status == 200 && $0.answer.apnsID == result(client, "alert")?.sent_apns_id }.flatMap(\.warnings)
            }
            #expect(warnings(of: "apnswift").contains { $0.contains("iat is the string") }, "\(warnings(of: "apnswift"))")
            #expect(warnings(of: "pushy").contains { $0.contains("DER") }, "\(warnings(of: "pushy"))")
            for client in ["aioapns", "pyjwt", "node-apn", "apns2"] {
                #expect(warnings(of: client) == [], "\(client): \(warnings(of: client))")
            }

            // The inspection API serves the same warnings.
            let served = try JSONValue(parsing: Data(try #require(child.lines.last).utf8))
            let pushes = try #require(served["pushes"]?["pushes"]?.arrayValue)
            #expect(pushes.count == records.count)
            #expect(pushes.allSatisfy { $0["warnings"]?.arrayValue != nil }, "every record has a warnings list")
            let apnswiftID = try #require(result("apnswift", "alert")?.sent_apns_id)
            let apnswiftRecord = try #require(pushes.first { $0["answer"]?["apns_id"] == .string(apnswiftID) })
            #expect(apnswiftRecord["warnings"]?.arrayValue?.first?.stringValue?.contains("iat is the string") == true)
        }
    }
}
