import Foundation
import IsletCrypto
import IsletTesting
import Simulators
import Testing

/// Runs the real `islet send` against an in-process simulator.
@Suite("islet send as a process", .requires(.processes))
struct SendProcessTests {
    let executable = builtProductPath("islet")

    func withSimulator(trust: Bool = true, _ body: (APNsSimulator, URL, URL) async throws -> Void) async throws {
        try await withTemporaryDirectory { dir in
            let key = try P256.SigningKey.generate()
            let keyFile = dir.appendingPathComponent("AuthKey.p8")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            var options = APNsSimulatorOptions()
            options.port = 0
            options.inspectPort = nil
            options.channelsPort = 0
            if trust { options.engine.trustedKeys = [TrustedKey(keyID: "SENDKEY001", teamID: "SENDTEAM01", publicKey: key.publicKey)] }
            let simulator = try APNsSimulator(options: options)
            try simulator.start()
            let caFile = dir.appendingPathComponent("ca.pem")
            try simulator.caCertificatePEM!.write(to: caFile, atomically: true, encoding: .utf8)
            try await body(simulator, keyFile, caFile)
            await simulator.shutdown()
        }
    }

    func arguments(_ simulator: APNsSimulator, _ key: URL, _ ca: URL, _ extra: [String]) -> [String] {
        ["send", "--key", key.path, "--key-id", "SENDKEY001", "--team-id", "SENDTEAM01", "--topic", "com.example.app",
         "--token", String(repeating: "ab", count: 32), "--url", "https://127.0.0.1:\(simulator.port)", "--ca", ca.path] + extra
    }

    @Test func sendsAStartAndPrintsTheExchange() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator { simulator, key, ca in
            let result = try await runCommand(executable, arguments(simulator, key, ca, [
                "--event", "start", "--attributes-type", "DeliveryAttributes", "--attributes", #"{"order":"A1"}"#,
                "--content-state", #"{"eta":5}"#, "--alert-title", "Order", "--alert-body", "Started",
            ]))
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("apns-topic: com.example.app.push-type.liveactivity"))
            #expect(result.output.contains("\"input-push-token\":1"))
            #expect(result.output.contains("\n200 apns-id: "))
            #expect(result.output.contains("Delivered: APNs accepted the push."))
            #expect(!result.output.contains("disposition"))
            #expect(simulator.engine.activities().count == 1)
        }
    }

    @Test func sendsABroadcastToAChannelsSubscribers() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator { simulator, key, ca in
            // A channel, made as the management API makes one, and a phone on it.
            let jwt = try JSONWebToken.signES256(
                keyID: "SENDKEY001", claims: ["iss": .string("SENDTEAM01"), "iat": .integer(Int64(Date().timeIntervalSince1970))],
                key: try P256.SigningKey(pemRepresentation: String(contentsOf: key, encoding: .utf8)))
            let created = simulator.engine.handleChannelRequest(
                SimulatorRequest(
                    method: "POST", path: "/1/apps/com.example.app/channels", headers: [("authorization", "bearer \(jwt)")],
                    body: Data(#"{"message-storage-policy":0,"push-type":"LiveActivity"}"#.utf8)),
                connection: ConnectionID(99))
            let channel = try #require(created.header("apns-channel-id"))
            let phone = try simulator.engine.subscribe(channelID: channel, token: "phone-1")
            var flags = arguments(simulator, key, ca, ["--event", "update", "--content-state", #"{"eta":3}"#, "--channel", channel])
            flags.removeSubrange(flags.firstIndex(of: "--token")!...flags.firstIndex(of: "--token")! + 1)
            let result = try await runCommand(executable, flags)
            #expect(result.status == 0, "\(result.output) \(result.error)")
            #expect(result.output.contains("/4/broadcasts/apps/com.example.app"))
            #expect(result.output.contains("apns-channel-id: \(channel)"))
            #expect(result.output.contains("apns-unique-id: "))
            #expect(simulator.engine.activity(id: phone.id)?.contentState == ["eta": 3])
            // A broadcast carries up to APNs's 5,120 bytes, over a token's 4,096.
            for (padding, status) in [(4_600, Int32(0)), (5_300, Int32(2))] {
                let state = #"{"eta":4,"note":""# + String(repeating: "x", count: padding) + #""}"#
                var big = arguments(simulator, key, ca, ["--event", "update", "--content-state", state, "--channel", channel])
                big.removeSubrange(big.firstIndex(of: "--token")!...big.firstIndex(of: "--token")! + 1)
                let sent = try await runCommand(executable, big)
                #expect(sent.status == status, "\(padding): \(sent.output) \(sent.error)")
                if status == 2 { #expect(sent.error.contains("APNs takes at most 5,120 on a channel"), "\(sent.error)") }
            }
            // A broadcast cannot start an activity; --channel and --token are one or the other.
            let start = try await runCommand(executable, arguments(simulator, key, ca, ["--event", "start", "--channel", channel]))
            #expect(start.status == 2)
            #expect(start.error.contains("--channel or --token, not both") || start.error.contains("cannot start"))
        }
    }

    @Test func aBrokenRuleIsReportedAndNothingIsSent() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator { simulator, key, ca in
            let result = try await runCommand(executable, arguments(simulator, key, ca, [
                "--event", "update", "--content-state", #"{"eta":5}"#, "--dismissal-date", "1800000000",
            ]))
            #expect(result.status == 2)
            #expect(result.error.contains("aps.dismissal-date"))
            #expect(result.error.contains("nothing sent"))
            #expect(simulator.engine.pushes().isEmpty)
        }
    }

    @Test func aRefusalFromAPNsIsPrintedWithItsReason() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator(trust: false) { simulator, key, ca in
            let result = try await runCommand(executable, arguments(simulator, key, ca, ["--event", "alert", "--alert-title", "Hi", "--alert-body", "There"]))
            #expect(result.status == 1)
            #expect(result.output.contains("403 InvalidProviderToken"))
            #expect(result.output.contains("Refused by APNs (InvalidProviderToken): the provider token was refused; check --key"))
            #expect(!result.output.contains("credentialsRejected"))
        }
    }

    @Test func aPushThatNeverReachesAPNsHasAnExitStatusOfItsOwn() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator { simulator, key, ca in
            let alert = ["--event", "alert", "--alert-title", "Hi", "--alert-body", "There"]
            // Nothing listens: the connection is refused.
            let reserved = try ReservedPort()
            var refused = arguments(simulator, key, ca, alert)
            refused[refused.firstIndex(of: "--url")! + 1] = "https://127.0.0.1:\(reserved.port)"
            let unreachable = try await runCommand(executable, refused)
            #expect(unreachable.status == 3, "\(unreachable.output)")
            #expect(unreachable.output.contains("Not delivered: APNs at https://127.0.0.1:\(reserved.port) could not be reached; could not connect to 127.0.0.1:\(reserved.port)"))
            #expect(!unreachable.output.contains("connectFailed"))
            #expect(!unreachable.output.contains("disposition"))
            // The simulator's certificate, without its CA: the TLS check fails.
            var untrusted = arguments(simulator, key, ca, alert)
            untrusted.removeSubrange(untrusted.firstIndex(of: "--ca")!...untrusted.firstIndex(of: "--ca")! + 1)
            let tls = try await runCommand(executable, untrusted)
            #expect(tls.status == 3, "\(tls.output)")
            #expect(tls.output.contains("certificate is not trusted"), "\(tls.output)")
            #expect(tls.output.contains("pass it with --ca"))
            #expect(!tls.output.contains("error:"), "\(tls.output)")
            #expect(!tls.output.contains("tlsFailed"))
            #expect(simulator.engine.pushes().isEmpty)
        }
    }

    @Test func jwtPrintsAVerifiableToken() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let key = try P256.SigningKey.generate()
            let keyFile = dir.appendingPathComponent("AuthKey.p8")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            let result = try await runCommand(executable, ["jwt", "--key", keyFile.path, "--key-id", "JWTKEY0001", "--team-id", "JWTTEAM001", "--issued-at", "1800000000"])
            #expect(result.status == 0)
            let token = try JSONWebToken(parsing: result.output.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(token.isValidES256(using: key.publicKey))
            #expect(token.header["kid"] == .string("JWTKEY0001"))
            #expect(token.claims["iss"] == .string("JWTTEAM001"))
            #expect(token.claims["iat"] == .integer(1_800_000_000))
        }
    }

    @Test func managesChannelsAtTheChannelManagementAPI() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withSimulator { simulator, key, ca in
            let port = try #require(simulator.channelsPort)
            func channels(_ extra: [String]) async throws -> (status: Int32, output: String, error: String) {
                let result = try await runCommand(executable, ["channels"] + extra + [
                    "--key", key.path, "--key-id", "SENDKEY001", "--team-id", "SENDTEAM01", "--topic", "com.example.app",
                    "--sandbox", "--url", "https://127.0.0.1:\(port)", "--ca", ca.path,
                ])
                return (result.status, result.output, result.error)
            }
            let plain = try await channels(["create"])
            #expect(plain.status == 0, "\(plain.error)")
            let plainID = plain.output.trimmingCharacters(in: .whitespacesAndNewlines)
            let kept = try await channels(["create", "--most-recent"])
            let keptID = kept.output.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(simulator.engine.channels().map(\.id) == [plainID, keptID])
            #expect(simulator.engine.channels().map(\.messageStoragePolicy) == [0, 1])

            let listed = try await channels(["list"])
            #expect(listed.status == 0)
            #expect(Set(listed.output.split(separator: "\n").map(String.init)) == [plainID, keptID])
            let read = try await channels(["read", keptID])
            #expect(read.status == 0, "\(read.error)")
            #expect(read.output.contains("message-storage-policy: 1 (most recent)"))
            #expect(read.output.contains("push-type: LiveActivity"))

            let deleted = try await channels(["delete", plainID])
            #expect(deleted.status == 0)
            #expect(simulator.engine.channels().map(\.id) == [keptID])
            // APNs's refusal is printed with its reason.
            let gone = try await channels(["read", plainID])
            #expect(gone.status == 1)
            #expect(gone.error.contains("ChannelNotRegistered"), "\(gone.error)")

            // Bad flags are named before anything is sent.
            let noID = try await channels(["read"])
            #expect(noID.status == 2 && noID.error.contains("read"))
            let notBase64 = try await channels(["delete", "not base64!"])
            #expect(notBase64.status == 2 && notBase64.error.contains("not a channel id"))
            let stray = try await channels(["list", "--most-recent"])
            #expect(stray.status == 2 && stray.error.contains("--most-recent"))
            #expect(simulator.engine.channels().count == 1)
        }
    }
}
