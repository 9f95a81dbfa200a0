import IsletSync
import Foundation
import IsletCore
import IsletTesting
import Testing

/// Runs the real `islet` executable, as `make run` does.
@Suite("islet serve as a process")
struct ServeProcessTests {
    let executable = builtProductPath("islet")

    /// One output stream of a child, collected as it arrives.
    struct OutputCollector: Sendable {
        let process: Subprocess
        let isStandardError: Bool

        init(standardErrorOf process: Subprocess) {
            self.process = process
            isStandardError = true
        }

        init(standardOutputOf process: Subprocess) {
            self.process = process
            isStandardError = false
        }

        var value: String { isStandardError ? process.standardError : process.standardOutput }
    }

    @Test func startsAnswersHealthzAndStopsCleanlyOnSIGTERM() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let process = try Subprocess(
                executable, ["serve", "--port", "0", "--data-dir", dir.path, "--log-format", "json"],
                standardOutput: .collect, standardError: .collect)
            let output = OutputCollector(standardErrorOf: process)
            defer { process.stop() }

            var port: Int?
            for _ in 0..<2_400 where port == nil {
                try await Task.sleep(for: .milliseconds(25))
                port = output.value.split(separator: "\n").lazy.compactMap { line -> Int? in
                    guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                        object["msg"] as? String == "listening", let url = object["url"] as? String
                    else { return nil }
                    return Int(url.split(separator: ":").last ?? "")
                }.first
            }
            let listening = try #require(port, "no listening line in: \(output.value)")
            let health = try await httpRequest(port: listening, path: "/healthz")
            #expect(health.status == 200)
            #expect(health.json?["status"] as? String == "ok")

            process.terminate()  // SIGTERM
            #expect(await process.exited())
            #expect(process.termination == .exit(0))
            let log = output.value
            #expect(log.contains("\"reason\":\"SIGTERM\""))
            #expect(log.contains("\"msg\":\"stopped\""))
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("islet.sqlite").path))
        }
    }

    @Test func badSettingStopsWithOneClearLine() throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try runCommand(executable, ["serve", "--port", "99999"])
        #expect(result.status == 2)
        #expect(result.error == "islet: invalid setting --port (ISLET_PORT): \"99999\" is not a port number (0-65535)\n")
    }

    @Test func unknownCommandIsRefused() throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try runCommand(executable, ["serv"])
        #expect(result.status == 2)
        #expect(result.error.hasPrefix("islet: unknown command \"serv\""))
    }

    @Test func simulatorModePrintsAWalkThroughThatWorks() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let process = try Subprocess(
                executable,
                [
                    "serve", "--simulator", "--port", "0", "--simulator-port", "0", "--simulator-inspect-port", "0",
                    "--data-dir", dir.path,
                ],
                standardOutput: .collect, standardError: .collect)
            let output = OutputCollector(standardOutputOf: process)
            defer { process.stop() }
            var exports: [String: String] = [:]
            for _ in 0..<2_400 where exports["DEVICE_KEY"] == nil {
                try await Task.sleep(for: .milliseconds(25))
                for line in output.value.split(separator: "\n") where line.hasPrefix("  export ") {
                    for pair in line.dropFirst("  export ".count).split(separator: " ") {
                        let parts = pair.split(separator: "=", maxSplits: 1)
                        if parts.count == 2 { exports[String(parts[0])] = String(parts[1]) }
                    }
                }
            }
            let text = output.value
            #expect(text.contains("Admin token (generated once"))
            let api = try #require(exports["ISLET"].flatMap { Int($0.split(separator: ":").last ?? "") })
            let sim = try #require(exports["SIM"].flatMap { Int($0.split(separator: ":").last ?? "") })
            let app = try #require(exports["APP"])
            let serverKey = try #require(exports["SERVER_KEY"])
            let deviceKey = try #require(exports["DEVICE_KEY"])
            // The walk-through's own bodies, sent as printed.
            func body(after marker: String) throws -> String {
                let line = try #require(text.split(separator: "\n").first { $0.contains(marker) && $0.contains("-d '") })
                let start = try #require(line.range(of: "-d '"))
                return String(line[start.upperBound...].dropLast())
            }
            func call(_ method: String, _ path: String, _ key: String, _ body: String?) async throws -> RawHTTPResponse {
                try await httpRequest(
                    port: api, method: method, path: path,
                    headers: ["Authorization": "Bearer \(key)", "Content-Type": "application/json"], body: body.map { Data($0.utf8) })
            }
            #expect(try await call("PUT", "/v1/apps/\(app)/devices/phone-1", deviceKey, try body(after: "/devices/phone-1 ")).status == 201)
            #expect(try await call("PUT", "/v1/apps/\(app)/devices/phone-1/push-to-start/DeliveryAttributes", deviceKey, try body(after: "/push-to-start/")).status == 201)
            #expect(try await call("POST", "/v1/apps/\(app)/activities", serverKey, try body(after: "/activities -H")).status == 202)
            var token: String?
            for _ in 0..<2_400 where token == nil {
                try await Task.sleep(for: .milliseconds(25))
                let activities = try await httpRequest(port: sim, path: "/activities")
                token = (try? JSONValue(parsing: activities.body))?["activities"]?.arrayValue?.first?["update_token"]?.stringValue
            }
            let updateToken = try #require(token)
            #expect(try await call(
                "PUT", "/v1/apps/\(app)/devices/phone-1/activities/order-42", deviceKey,
                #"{"activity_type":"DeliveryAttributes","token":""# + updateToken + #""}"#).status == 201)
            #expect(try await call("POST", "/v1/apps/\(app)/activities/order-42/update", serverKey, try body(after: "/update ")).status == 202)
            #expect(try await call("POST", "/v1/apps/\(app)/activities/order-42/end", serverKey, try body(after: "/end ")).status == 202)
            var status: String?
            for _ in 0..<2_400 where status != "ended" {
                try await Task.sleep(for: .milliseconds(25))
                let activities = try await httpRequest(port: sim, path: "/activities")
                status = (try? JSONValue(parsing: activities.body))?["activities"]?.arrayValue?.first?["status"]?.stringValue
            }
            #expect(status == "ended")
        }
    }

    /// Starts `islet serve` with `arguments`, waits for its listening line on
    /// standard output, runs `body` with the port and the collected output, then
    /// stops it with SIGTERM and expects exit status 0.
    func whileServing(
        _ arguments: [String], environment: [String: String] = [:],
        _ body: (Int, OutputCollector) async throws -> Void = { _, _ in }
    ) async throws {
        let process = try Subprocess(
            executable, ["serve"] + arguments, environment: environment, standardOutput: .collect, standardError: .collect)
        let output = OutputCollector(standardOutputOf: process)
        defer { process.stop() }
        func port() -> Int? {
            output.value.split(separator: "\n").lazy.compactMap { line -> Int? in
                guard line.hasPrefix("islet: listening on http://") else { return nil }
                return Int(line.split(separator: ":").last ?? "")
            }.first
        }
        _ = await eventually(within: .seconds(60)) { port() != nil || !process.isRunning }
        let listening = try #require(port(), "no listening line in: \(output.value)")
        try await body(listening, output)
        process.terminate()
        #expect(await process.exited())
        #expect(process.termination == .exit(0))
    }

    @Test func aBadHostStopsBeforeAnythingIsWritten() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let data = dir.appendingPathComponent("data").path
            let result = try runCommand(executable, ["serve", "--host", "not-an-ip", "--port", "0", "--data-dir", data])
            #expect(result.status == 2)
            #expect(result.error == "islet: invalid setting --host (ISLET_HOST): \"not-an-ip\" is not an IP address (such as 127.0.0.1, 0.0.0.0 or ::1) or localhost\n")
            #expect(!FileManager.default.fileExists(atPath: data))
        }
    }

    /// A PostgreSQL server that refuses the password, or none at all: exit status 2
    /// and one line naming the setting and the cause, never the password.
    @Test func aRefusedOrUnreachableDatabaseStopsTheStartWithoutItsPassword() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let serverPort = try #require(TestPostgres.port, "run through make test or scripts/with-postgres.sh")
        let nothing = try ReservedPort()
        try await withTemporaryDirectory { dir in
            for (url, cause) in [
                ("postgresql://islet_password:wrong-pw-7781@127.0.0.1:\(serverPort)/postgres", "password"),
                ("postgresql://islet:other-pw-7781@127.0.0.1:\(nothing.port)/postgres?connect_timeout=5", "127.0.0.1"),
                ("postgresql://islet@127.0.0.1:\(serverPort)/postgres?sslmode=bogus", "sslmode"),
            ] {
                let result = try runCommand(
                    executable, [
                        "serve", "--port", "0", "--data-dir", dir.appendingPathComponent("data").path, "--database", url,
                        "--secrets-key", TestPostgres.secretsKey,
                    ])
                #expect(result.status == 2, "\(result.error)")
                let lines = result.error.split(separator: "\n")
                #expect(lines.count == 1, "\(result.error)")
                #expect(result.error.hasPrefix("islet: "), "\(result.error)")
                #expect(result.error.contains("--database (ISLET_DATABASE)"), "\(result.error)")
                #expect(result.error.contains(cause), "\(result.error)")
                #expect(!result.error.contains("-pw-7781"), "\(result.error)")
            }
        }
    }

    @Test func aFlagOverridesABadEnvironmentValue() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            try await whileServing(["--port", "0", "--data-dir", dir.path], environment: ["ISLET_PORT": "99999"]) { port, _ in
                let health = try await httpRequest(port: port, path: "/healthz")
                #expect(health.status == 200)
            }
        }
    }

    @Test func theListeningAddressIsPrintedWhateverTheLogLevel() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            try await whileServing(["--port", "0", "--log-level", "warning", "--data-dir", dir.path]) { port, _ in
                let health = try await httpRequest(port: port, path: "/healthz")
                #expect(health.status == 200)
            }
        }
    }

    @Test func theAdminTokenIsShownOnceByTheFirstStartThatWorks() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let data = dir.appendingPathComponent("data")
            let tokenFile = data.appendingPathComponent("admin-token").path
            // A first start that fails (its port is taken) writes no token.
            let taken = try ReservedPort()
            let failed = try runCommand(executable, ["serve", "--port", String(taken.port), "--data-dir", data.path])
            #expect(failed.status == 1)
            #expect(!failed.output.contains("Admin token"))
            #expect(!FileManager.default.fileExists(atPath: tokenFile))
            // The next start generates it, keeps it and shows it.
            var shown: String?
            try await whileServing(["--port", "0", "--data-dir", data.path]) { port, output in
                let line = try #require(output.value.split(separator: "\n").first { $0.hasPrefix("Admin token (generated once") })
                shown = line.split(separator: " ").last.map(String.init)
                let token = try #require(shown)
                let apps = try await httpRequest(port: port, path: "/v1/apps", headers: ["Authorization": "Bearer \(token)"])
                #expect(apps.status == 200)
            }
            let kept = try String(contentsOfFile: tokenFile, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(kept == shown)
            let attributes = try FileManager.default.attributesOfItem(atPath: tokenFile)
            #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600)
            // Later starts use it and do not show it again.
            try await whileServing(["--port", "0", "--data-dir", data.path]) { _, output in
                #expect(!output.value.contains("Admin token"))
            }
        }
    }

    @Test func helpAndMissingCommands() throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let bare = try runCommand(executable, [])
        #expect(bare.status == 2)
        #expect(bare.output.isEmpty)
        #expect(bare.error.contains("Usage: islet <command>"))
        let help = try runCommand(executable, ["help"])
        #expect(help.status == 0)
        #expect(help.output.contains("Usage: islet <command>"))
        let jwt = try runCommand(executable, ["jwt", "--help"])
        #expect(jwt.status == 0)
        #expect(jwt.output.hasPrefix("Usage: islet jwt --key FILE.p8"))
        for arguments in [["schema", "from-swift", "--help"], ["schema", "--help"]] {
            let schema = try runCommand(executable, arguments)
            #expect(schema.status == 0, "\(arguments)")
            #expect(schema.output.hasPrefix("Usage: islet schema from-swift"), "\(arguments)")
            #expect(!schema.error.contains("cannot read"))
        }
    }

    @Test func aKeyThatIsNotAKeyIsRefusedInASentence() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("AuthKey.p8")
            try "not a key".write(to: file, atomically: true, encoding: .utf8)
            let result = try runCommand(executable, ["jwt", "--key", file.path, "--key-id", "K", "--team-id", "T"])
            #expect(result.status == 2)
            #expect(result.error.contains("the text is not a private key in PEM"), "\(result.error)")
            #expect(!result.error.contains("error:"))
            #expect(!result.error.contains("invalidKey"))
        }
    }
}
