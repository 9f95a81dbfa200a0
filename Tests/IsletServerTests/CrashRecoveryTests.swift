import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Testing

/// `islet serve` killed with SIGKILL in the middle of a fan-out, and started again
/// on the same database.
@Suite("Crash recovery of islet serve", .requires(.processes))
struct CrashRecoveryTests {
    let executable = builtProductPath("islet")

    /// Starts `islet serve` and answers the process and its API port.
    func launch(_ arguments: [String]) async throws -> (Subprocess, Int, ServeProcessTests.OutputCollector) {
        let process = try Subprocess(
            executable, ["serve", "--port", "0", "--log-format", "json"] + arguments,
            standardOutput: .collect, standardError: .collect)
        let output = ServeProcessTests.OutputCollector(standardErrorOf: process)
        var port: Int?
        for _ in 0..<2_400 where port == nil {
            try await Task.sleep(for: .milliseconds(25))
            port = output.value.split(separator: "\n").lazy.compactMap { line -> Int? in
                guard let object = try? JSONValue(parsing: Data(line.utf8)), object["msg"] == "listening",
                    let url = object["url"]?.stringValue
                else { return nil }
                return Int(url.split(separator: ":").last ?? "")
            }.first
        }
        guard let port else {
            process.stop()
            throw RawHTTPError("no listening line in: \(output.value)")
        }
        return (process, port, output)
    }

    /// A simulator trusting a fresh key, and the arguments of an `islet serve` sending
    /// to it (one node id across restarts: it takes back what it held).
    struct Setup {
        let simulator: APNsSimulator
        let signingKey: P256.SigningKey
        let arguments: [String]
    }

    func setUp(in dir: URL, database: String?, latency: Duration? = nil, extra: [String] = []) throws -> Setup {
        let signingKey = try P256.SigningKey.generate()
        var options = APNsSimulatorOptions()
        options.port = 0
        options.inspectPort = nil
        if let latency { options.latency = latency }
        options.engine.trustedKeys = [TrustedKey(keyID: "KEYID00001", teamID: "TEAMID0001", publicKey: signingKey.publicKey)]
        let simulator = try APNsSimulator(options: options)
        try simulator.start()
        let caFile = dir.appendingPathComponent("ca.pem")
        try #require(simulator.caCertificatePEM).write(to: caFile, atomically: true, encoding: .utf8)
        let arguments = [
            "--data-dir", dir.appendingPathComponent("data").path, "--admin-token", ServerHarness.adminToken,
            "--apns-sandbox-url", "https://127.0.0.1:\(simulator.port)",
            "--apns-production-url", "https://127.0.0.1:\(simulator.port)", "--apns-ca-file", caFile.path,
            "--node-id", "crash-test-node",
        ] + extra + (database.map { ["--database", $0, "--secrets-key", TestPostgres.secretsKey] } ?? [])
        return Setup(simulator: simulator, signingKey: signingKey, arguments: arguments)
    }

    /// A request to the API on `port`, its answer as JSON.
    func call(
        _ port: Int, _ method: String, _ path: String, _ key: String, _ body: JSONValue? = nil, secret: String? = nil
    ) async throws -> JSONValue {
        var headers = ["Authorization": "Bearer \(key)"]
        if let secret { headers["Islet-Device-Secret"] = secret }
        if body != nil { headers["Content-Type"] = "application/json" }
        let response = try await httpRequest(
            port: port, method: method, path: path, headers: headers, body: body.map { Data($0.jsonText.utf8) })
        return (try? JSONValue(parsing: response.body)) ?? .null
    }

    /// An app with the setup's credentials: its id, server key and device key.
    func createApp(_ port: Int, _ setup: Setup, name: String) async throws -> (id: String, serverKey: String, deviceKey: String) {
        let app = try await call(port, "POST", "/v1/apps", ServerHarness.adminToken, [
            "name": .string(name), "bundle_id": "com.example.crash",
            "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(setup.signingKey.pemRepresentation)],
        ])
        return (
            try #require(app["id"]?.stringValue), try #require(app["server_key"]?.stringValue),
            try #require(app["device_key"]?.stringValue)
        )
    }

    @Test func aKilledServerLosesNothingMidFanOut() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in try await TestPostgres.withSuiteDatabase { database in
            let setup = try setUp(
                in: dir, database: database, latency: .milliseconds(400), extra: ["--delivery-max-in-flight", "20"])
            let simulator = setup.simulator
            var (process, port, _) = try await launch(setup.arguments)
            defer { process.stop() }
            func call(
                _ method: String, _ path: String, _ key: String, _ body: JSONValue? = nil, secret: String? = nil
            ) async throws -> JSONValue {
                try await self.call(port, method, path, key, body, secret: secret)
            }
            let (appID, serverKey, deviceKey) = try await createApp(port, setup, name: "Fans")
            let devices = 120
            for index in 0..<devices {
                let device = try await call("PUT", "/v1/apps/\(appID)/devices/phone-\(index)", deviceKey, [
                    "platform": "ios", "environment": "sandbox", "tags": ["fans"],
                ])
                _ = try await call(
                    "PUT", "/v1/apps/\(appID)/devices/phone-\(index)/push-to-start/MatchAttributes", deviceKey,
                    ["token": .string(ServerHarness.token())], secret: device["device_secret"]?.stringValue)
            }
            let started = try await call("POST", "/v1/apps/\(appID)/activities", serverKey, [
                "activity_id": "final", "activity_type": "MatchAttributes", "attributes": ["home": "A", "away": "B"],
                "content_state": ["home": 0, "away": 0], "alert": ["title": "Kick-off", "body": "A v B"],
                "audience": ["tags": ["fans"]],
            ])
            #expect(started["targets"]?.int64Value == Int64(devices))
            // Kill it mid fan-out: once the first pushes have reached the simulator.
            let sending = Date().addingTimeInterval(10)
            while simulator.engine.pushes().isEmpty && Date() < sending {
                try await Task.sleep(for: .milliseconds(2))
            }
            process.send(SIGKILL)
            #expect(await process.exited())
            #expect(process.termination == .signal(SIGKILL))
            let beforeRestart = simulator.engine.pushes().count
            #expect(beforeRestart > 0, "the kill came before any push was sent")
            #expect(beforeRestart < devices, "the kill came after the fan-out finished")

            (process, port, _) = try await launch(setup.arguments)
            var items: [JSONValue] = []
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                items = try await call("GET", "/v1/apps/\(appID)/activities/final/pushes", serverKey)["items"]?.arrayValue ?? []
                if items.count == devices && items.allSatisfy({ $0["status"] == "sent" }) { break }
                try await Task.sleep(for: .milliseconds(100))
            }
            process.terminate()
            await process.exited()
            await simulator.shutdown()

            #expect(items.count == devices)
            #expect(items.allSatisfy { $0["status"] == "sent" })
            // Every push reached the simulator, each with the apns-id Islet recorded:
            // one in flight at the kill, sent again after the restart, kept its id.
            let recorded = Set(items.compactMap { $0["apns_id"]?.stringValue })
            let received = Set(simulator.engine.pushes().compactMap { $0.headers["apns-id"] })
            #expect(recorded.count == devices)
            #expect(received == recorded)
            #expect(Set(simulator.engine.pushes().compactMap(\.token)).count == devices)
        } }
    }

    /// A scheduled start accepted just before a SIGKILL is in the database: the
    /// server started again fires it, once.
    @Test func aKilledServerKeepsWhatItScheduled() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in try await TestPostgres.withSuiteDatabase { database in
            let setup = try setUp(in: dir, database: database)
            let simulator = setup.simulator
            var (process, port, _) = try await launch(setup.arguments)
            defer { process.stop() }
            func call(
                _ method: String, _ path: String, _ key: String, _ body: JSONValue? = nil, secret: String? = nil
            ) async throws -> JSONValue {
                try await self.call(port, method, path, key, body, secret: secret)
            }
            let (appID, serverKey, deviceKey) = try await createApp(port, setup, name: "Day")
            let token = ServerHarness.token()
            let device = try await call("PUT", "/v1/apps/\(appID)/devices/phone-1", deviceKey, ["platform": "ios", "environment": "sandbox"])
            _ = try await call(
                "PUT", "/v1/apps/\(appID)/devices/phone-1/push-to-start/DayAttributes", deviceKey, ["token": .string(token)],
                secret: device["device_secret"]?.stringValue)
            let sendAt = Date().addingTimeInterval(2 * Double(TestTime.scale))
            let scheduled = try await call("POST", "/v1/apps/\(appID)/activities", serverKey, [
                "activity_id": "day-1", "activity_type": "DayAttributes", "attributes": ["venue": "A"],
                "content_state": ["now": "Doors"], "alert": ["title": "Today", "body": "Doors open"],
                "audience": ["device_ids": ["phone-1"]], "send_at": .double(sendAt.timeIntervalSince1970),
            ])
            let scheduleID = try #require(scheduled["schedule_id"]?.stringValue)
            process.send(SIGKILL)
            await process.exited()
            // Killed before its time (the usual case): nothing was sent. On a machine
            // slow enough to reach the kill later, the end below still shows it sent once.
            if Date() < sendAt { #expect(simulator.engine.pushes().isEmpty) }

            (process, port, _) = try await launch(setup.arguments)
            var item: JSONValue = .null
            let deadline = Date().addingTimeInterval(60)
            while Date() < deadline {
                item = try await call("GET", "/v1/apps/\(appID)/schedules/\(scheduleID)", serverKey)
                if item["status"] == "sent", !simulator.engine.pushes().isEmpty { break }
                try await Task.sleep(for: .milliseconds(50))
            }
            // A few ticks more: it does not fire again.
            try await Task.sleep(for: .milliseconds(600))
            process.terminate()
            await process.exited()
            await simulator.shutdown()
            #expect(item["status"] == "sent" && item["targets"] == 1)
            #expect(simulator.engine.pushes().map(\.token) == [token])
        } }
    }
}
