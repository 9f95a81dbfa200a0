import Foundation
import HTTP2
import IsletCrypto
import IsletTesting
import Testing

/// Runs the real `islet sim`, as a developer would.
@Suite("islet sim as a process", .requires(.processes))
struct SimProcessTests {
    let executable = builtProductPath("islet")

    @Test func servesPushesPrintsThemAndStopsOnSIGTERM() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let key = try P256.SigningKey.generate()
            let keyFile = dir.appendingPathComponent("AuthKey_SIMKEY1234.p8")
            try key.pemRepresentation.write(to: keyFile, atomically: true, encoding: .utf8)
            let caFile = dir.appendingPathComponent("sim-ca.pem")
            let process = try Subprocess(
                executable,
                [
                    "sim", "--port", "0", "--inspect-port", "0", "--channels-port", "0",
                    "--trust", "SIMKEY1234:SIMTEAM123:\(keyFile.path)",
                    "--ca-out", caFile.path,
                ],
                standardOutput: .collect, standardError: .collect)
            let output = ServeProcessTests.OutputCollector(standardOutputOf: process)
            defer { process.stop() }

            var ports: [Int] = []
            for _ in 0..<2_400 where ports.isEmpty {
                try await Task.sleep(for: .milliseconds(25))
                if let banner = output.value.split(separator: "\n").first(where: { $0.hasPrefix("islet sim: APNs") }) {
                    ports = banner.split(separator: " ").compactMap { word in
                        word.split(separator: ":").last.flatMap { Int($0.trimmingCharacters(in: .punctuationCharacters)) }
                    }
                }
            }
            // APNs, the channel management API, the inspection API.
            try #require(ports.count >= 3, "no banner in: \(output.value)")
            let ca = try String(contentsOf: caFile, encoding: .utf8)
            let client = try HTTP2Client(configuration: HTTP2ClientConfiguration(
                host: "127.0.0.1", port: ports[0], tls: TLSClientConfiguration(trustRootsPEM: ca)))
            let jwt = try JSONWebToken.signES256(
                keyID: "SIMKEY1234", claims: ["iss": .string("SIMTEAM123"), "iat": .integer(Int64(Date().timeIntervalSince1970))], key: key)
            let response = try await client.send(HTTP2Request(
                path: "/3/device/\(String(repeating: "ef", count: 32))",
                headers: [("authorization", "bearer \(jwt)"), ("apns-topic", "com.example.app"), ("apns-push-type", "alert")],
                body: Data(#"{"aps":{"alert":{"title":"a","body":"b"}}}"#.utf8)))
            #expect(response.status == 200)
            await client.shutdown()
            // A broadcast channel, created over HTTP/2 on the channel management port.
            let management = try HTTP2Client(configuration: HTTP2ClientConfiguration(
                host: "127.0.0.1", port: ports[1], tls: TLSClientConfiguration(trustRootsPEM: ca)))
            let created = try await management.send(HTTP2Request(
                path: "/1/apps/com.example.app/channels",
                headers: [("authorization", "bearer \(jwt)"), ("content-type", "application/json")],
                body: Data(#"{"message-storage-policy":1,"push-type":"LiveActivity"}"#.utf8)))
            #expect(created.status == 201)
            let channelID = try #require(created.headers["apns-channel-id"])
            await management.shutdown()
            let inspection = try await httpRequest(port: ports[2], path: "/pushes")
            #expect((inspection.json?["pushes"] as? [Any])?.count == 1)
            let channels = try await httpRequest(port: ports[2], path: "/channels")
            let listed = (channels.json?["channels"] as? [[String: Any]])?.compactMap { $0["id"] as? String }
            #expect(listed == [channelID])

            _ = await eventually { output.value.contains("alert_shown") }
            #expect(output.value.contains("#1 200"))
            #expect(output.value.contains("alert_shown"))
            process.terminate()
            #expect(await process.exited())
            #expect(process.termination == .exit(0))
        }
    }

    @Test(arguments: [
        (["--fail-rate", "2"], "invalid setting --fail-rate: \"2\" is not a rate from 0.0 to 1.0"),
        (["--fail-status", "404"], "invalid setting --fail-status: \"404\" is not 500, 503 or 429"),
        (["--environment", "staging"], "invalid setting --environment: \"staging\" is not sandbox or production"),
        (["--trust", "nocolons"], "invalid setting --trust: \"nocolons\" is not KEY_ID:TEAM_ID:FILE"),
        (["--trust", "K:T:/no/such.p8"], "invalid setting --trust: cannot read /no/such.p8"),
        (["--cert", "/tmp/x.pem"], "invalid setting --key: --cert needs --key"),
        (["--port", "-1"], "invalid setting --port: \"-1\" is not a whole number from 0 to 65535"),
        (["--frobnicate"], "unknown option --frobnicate: no such option; see islet sim --help"),
    ] as [([String], String)])
    func badFlagsStopWithOneClearLine(arguments: [String], message: String) async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try await runCommand(executable, ["sim"] + arguments)
        #expect(result.status == 2)
        #expect(result.error == "islet: \(message)\n")
    }
}
