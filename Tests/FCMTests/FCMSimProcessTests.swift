import FCM
import Foundation
import HTTPClient
import IsletCore
import IsletTesting
import Testing

/// `islet sim --fcm` as a process, as a developer runs it: its banner, the CA and
/// the service account it writes, Islet's own FCM client sending through both of its
/// listeners with that account, the line it prints per message, and its stop on
/// SIGTERM; bad flags stop it with one line naming the flag.
@Suite("islet sim --fcm as a process", .requires(.processes))
struct FCMSimProcessTests {
    @Test func writesItsCAAndAnAccountThatIsletsClientSendsWith() async throws {
        try await withTemporaryDirectory { directory in
            let sim = try await FCMSimulatorProcess.start(in: directory)
            defer { sim.stop() }
            #expect(sim.banner.contains("CA in islet-fcm-ca.pem"), "\(sim.banner)")
            #expect(sim.banner.contains("service account (project islet-demo) in islet-fcm-account.json"), "\(sim.banner)")
            #expect(sim.url.hasPrefix("https://127.0.0.1:"))
            for file in [sim.caFile, sim.accountFile] {
                let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
                #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file.lastPathComponent)")
            }
            let json = try JSONValue(parsing: try Data(contentsOf: sim.accountFile))
            #expect(json["type"] == "service_account")
            // Islet's: an app's service account names an https token URI.
            #expect(json["token_uri"]?.stringValue == sim.url + "/token")
            let account = FCMServiceAccount(
                projectID: try #require(json["project_id"]?.stringValue), clientEmail: try #require(json["client_email"]?.stringValue),
                privateKeyPEM: try #require(json["private_key"]?.stringValue), privateKeyID: json["private_key_id"]?.stringValue,
                tokenURI: try #require(json["token_uri"]?.stringValue))

            // Access tokens and messages over HTTP/2 and TLS, trusting the written CA.
            var settings = HTTPClientConfiguration()
            settings.allowPrivateAddresses = true
            settings.caFile = sim.caFile.path
            let http = try HTTPClient(configuration: settings)
            var configuration = FCMClientConfiguration()
            configuration.url = try #require(URL(string: sim.url))
            configuration.trustRootsPEM = try String(contentsOf: sim.caFile, encoding: .utf8)
            let client = FCMClient(configuration: configuration)
            let tokens = try FCMAccessTokens(account: account, exchange: CurlTokenExchange(client: http))
            let push = AndroidDataPush(
                event: .start, activityID: "order-7", activityType: "DeliveryAttributes", contentState: ["eta": 12], attributes: ["order": "A7"])
            let built = try push.build(now: Date(), lastTimestamp: nil)
            let result = await client.send(
                FCMMessage(token: "fcm-token-process-000000001", data: built.data, priority: built.priority, ttl: 600, collapseKey: built.collapseKey),
                account: account, tokens: tokens)
            await client.shutdown()
            await http.shutdown()
            #expect(result.disposition == .delivered, "\(result.error ?? "")")
            #expect(result.response?.messageName?.hasPrefix("projects/islet-demo/messages/") == true)

            let devices = try JSONValue(parsing: try await httpRequest(port: sim.http1Port, path: "/devices").body)
            let activity = devices["devices"]?.arrayValue?.first?["activities"]?.arrayValue?.first
            #expect(activity?["activity_id"] == "order-7")
            #expect(activity?["content_state"] == ["eta": 12])
            let line = await sim.process.line(within: .seconds(30)) { $0.hasPrefix("#1 200 start") }
            #expect(line?.hasSuffix("→ started order-7") == true, "\(sim.process.lines)")

            #expect(await sim.terminate() == 0)
            #expect(sim.process.lines.last == "islet sim: SIGTERM, stopping")
        }
    }

    @Test func writesWhereItIsTold() async throws {
        try await withTemporaryDirectory { directory in
            let sim = try await FCMSimulatorProcess.start(
                in: directory,
                arguments: ["--ca-out", "certs.pem", "--fcm-account-out=firebase.json", "--fcm-project", "islet-elsewhere", "--quiet"])
            defer { sim.stop() }
            #expect(sim.banner.hasSuffix("CA in certs.pem, service account (project islet-elsewhere) in firebase.json"), "\(sim.banner)")
            let json = try JSONValue(parsing: try Data(contentsOf: directory.appendingPathComponent("firebase.json")))
            #expect(json["project_id"] == "islet-elsewhere")
            #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("certs.pem").path))
            #expect(await sim.terminate() == 0)
        }
    }

    @Test(arguments: [
        (["--fcm", "--fcm-port", "70000"], "invalid setting --fcm-port: \"70000\" is not a whole number from 0 to 65535"),
        (["--fcm", "--fcm-http-port"], "invalid setting --fcm-http-port: a value is required"),
        (["--fcm", "--fcm-project", "a/b"], "invalid setting --fcm-project: \"a/b\" is not a project id (letters, digits and hyphens)"),
        (["--fcm", "--fcm-account-out="], "invalid setting --fcm-account-out: a file name is required"),
        (["--fcm", "--port", "2197"], "invalid setting --port: is an option of the APNs simulator, which --fcm does not run; see islet sim --help"),
        (["--fcm", "--frobnicate"], "unknown option --frobnicate: no such option; see islet sim --help"),
        (["--fcm-port", "0"], "invalid setting --fcm-port: is an option of the FCM simulator: add --fcm"),
    ] as [([String], String)])
    func badFlagsStopWithOneClearLine(arguments: [String], message: String) async throws {
        let executable = builtProductPath("islet")
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try await runCommand(executable, ["sim"] + arguments)
        #expect(result.status == 2)
        #expect(result.error == "islet: \(message)\n")
    }

    @Test func theHelpTellsOfFCM() async throws {
        let executable = builtProductPath("islet")
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try await runCommand(executable, ["sim", "--help"])
        #expect(result.status == 0)
        for flag in ["--fcm ", "--fcm-port", "--fcm-http-port", "--fcm-project", "--fcm-account-out", "--inspect-port"] {
            #expect(result.output.contains(flag), "\(flag)")
        }
    }
}
