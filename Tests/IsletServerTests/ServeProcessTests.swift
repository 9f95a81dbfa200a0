import IsletSync
import Foundation
import IsletCore
import IsletTesting
import Testing

/// Runs the real `islet` executable, as `make run` does.
@Suite("islet serve as a process", .requires(.processes))
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

    @Test func badSettingStopsWithOneClearLine() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try await runCommand(executable, ["serve", "--port", "99999"])
        #expect(result.status == 2)
        #expect(result.error == "islet: invalid setting --port (ISLET_PORT): \"99999\" is not a port number (0-65535)\n")
    }

    @Test func unknownCommandIsRefused() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let result = try await runCommand(executable, ["serv"])
        #expect(result.status == 2)
        #expect(result.error.hasPrefix("islet: unknown command \"serv\""))
    }

    /// Starts `islet serve --simulator` on `dir`; answers the process, once its
    /// walk-through is printed, with the walk-through and its exports.
    func startWithWalkthrough(_ dir: URL) async throws -> (Subprocess, String, [String: String]) {
        let process = try Subprocess(
            executable,
            [
                "serve", "--simulator", "--port", "0", "--simulator-port", "0", "--simulator-inspect-port", "0",
                "--data-dir", dir.path,
            ],
            standardOutput: .collect, standardError: .collect)
        let output = OutputCollector(standardOutputOf: process)
        var exports: [String: String] = [:]
        for _ in 0..<2_400 where exports["DEVICE_KEY"] == nil || !output.value.contains("The API is described") {
            try await Task.sleep(for: .milliseconds(25))
            for line in output.value.split(separator: "\n") where line.hasPrefix("  export ") {
                for pair in line.dropFirst("  export ".count).split(separator: " ") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    if parts.count == 2 { exports[String(parts[0])] = String(parts[1]) }
                }
            }
        }
        return (process, output.value, exports)
    }

    @Test func simulatorModePrintsAWalkThroughThatWorks() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let (process, text, found) = try await startWithWalkthrough(dir)
            defer { process.stop() }
            var exports = found
            #expect(text.contains("Admin token (generated once"))
            let sim = try #require(exports["SIM"].flatMap { Int($0.split(separator: ":").last ?? "") })
            #expect(exports["APP"] != nil && exports["SERVER_KEY"] != nil)
            // The walk-through's commands, step by step, run as printed by a shell.
            let steps = Self.walkthroughSteps(text)
            try #require(steps.count == 6, "\(text)")
            #expect(steps[1].contains { $0.contains("Islet-Device-Secret: $DEVICE_SECRET") })
            // curl prints no newline after an answer: the secret goes on a line of its own.
            let first = try await Self.shell(steps[1] + ["echo", #"echo "kept=$DEVICE_SECRET""#], exports)
            let secret = try #require(
                first.split(separator: "\n").last { $0.hasPrefix("kept=") }.map { String($0.dropFirst("kept=".count)) },
                "\(first)")
            #expect(secret.hasPrefix("islet_ds_"), "\(first)")
            #expect(first.contains(#""registered_at""#), "the push-to-start token was refused: \(first)")
            exports["DEVICE_SECRET"] = secret
            // The iPhone and the Android phone of step 1.
            let second = try await Self.shell(steps[2], exports)
            #expect(second.contains(#""targets":2"#) && second.contains(#""android_targets":1"#), "\(second)")
            // A service account the embedded FCM trusts, for an app of one's own.
            #expect(text.contains(#""type":"service_account""#) && text.contains(#""token_uri":"https://127.0.0.1:"#), "\(text)")
            var started = false
            for _ in 0..<2_400 where !started {
                try await Task.sleep(for: .milliseconds(25))
                let activities = try await httpRequest(port: sim, path: "/activities")
                started = (try? JSONValue(parsing: activities.body))?["activities"]?.arrayValue?.first?["update_token"]?.stringValue != nil
            }
            try #require(started)
            let third = try await Self.shell(steps[3], exports)
            #expect(third.contains(#""device_id":"phone-1""#) && third.contains(#""registered_at""#), "\(third)")
            _ = try await Self.shell(steps[4], exports)
            // The phone shows the update, with its send id; the app's receipt names it.
            var shown: String?
            for _ in 0..<2_400 where shown == nil {
                try await Task.sleep(for: .milliseconds(25))
                let activities = try await httpRequest(port: sim, path: "/activities")
                let state = (try? JSONValue(parsing: activities.body))?["activities"]?.arrayValue?.first?["content_state"]
                if state?["status"] == "on the way" { shown = state?["islet"]?["send_id"]?.stringValue }
            }
            let sendID = try #require(shown)
            let fifth = try await Self.shell(steps[5], exports)
            #expect(fifth.contains(#""send_id":"\#(sendID)""#) && fifth.contains(#""received_at":"#), "\(fifth)")
            let activity = try await Self.shell(
                [#"curl -s $ISLET/v1/apps/$APP/activities/order-42 -H "Authorization: Bearer $SERVER_KEY""#], exports)
            #expect(activity.contains(#""last_received_send_id":"\#(sendID)""#), "\(activity)")
            var status: String?
            for _ in 0..<2_400 where status != "ended" {
                try await Task.sleep(for: .milliseconds(25))
                let activities = try await httpRequest(port: sim, path: "/activities")
                status = (try? JSONValue(parsing: activities.body))?["activities"]?.arrayValue?.first?["status"]?.stringValue
            }
            #expect(status == "ended")
            // The Android phone of step 1 got the same start, update and end from the FCM simulator.
            let fcm = try #require(exports["FCM"].flatMap { Int($0.split(separator: ":").last ?? "") })
            var androidEnded = false
            var seen = ""
            for _ in 0..<2_400 where !androidEnded {
                seen = String(decoding: try await httpRequest(port: fcm, path: "/devices").body, as: UTF8.self)
                androidEnded = seen.contains(#""ended":true"#)
                if !androidEnded { try await Task.sleep(for: .milliseconds(25)) }
            }
            if !androidEnded {
                let pushes = try await Self.shell(
                    [#"curl -s $ISLET/v1/apps/$APP/activities/order-42/pushes -H "Authorization: Bearer $SERVER_KEY""#],
                    exports)
                Issue.record("the Android phone did not end: \(seen); the server's pushes: \(pushes)")
            }

            // Started again on the same data, the walk-through registers a phone of
            // its own: phone-1 and its secret belong to the first start's.
            process.terminate()
            #expect(await process.exited())
            let (again, textAgain, exportsAgain) = try await startWithWalkthrough(dir)
            defer { again.stop() }
            #expect(textAgain.contains("The demo app was given fresh keys"))
            let stepsAgain = Self.walkthroughSteps(textAgain)
            try #require(stepsAgain.count == 6, "\(textAgain)")
            // Not phone-1 itself (phone-1… of its own may well begin the same way).
            let joined = stepsAgain[1].joined(separator: "\n")
            #expect(!joined.contains("/devices/phone-1 ") && !joined.contains("/devices/phone-1/"), "\(joined)")
            let registered = try await Self.shell(stepsAgain[1], exportsAgain)
            #expect(registered.hasPrefix("islet_ds_") && registered.contains(#""registered_at""#), "\(registered)")
        }
    }

    /// The commands of the walk-through, by step: its exports first, then the
    /// commands of each numbered step (lines indented by two spaces).
    static func walkthroughSteps(_ text: String) -> [[String]] {
        var steps: [[String]] = []
        var inside = false
        for line in text.split(separator: "\n", omittingEmptySubsequences: false) {
            if line.hasPrefix("Paste into another shell:") {
                inside = true
                steps = [[]]
            } else if inside, let first = line.first, first.isNumber {
                if line.hasPrefix("6.") { break }
                steps.append([])
            } else if inside, line.hasPrefix("  "), !line.hasPrefix("   "), !steps.isEmpty {
                steps[steps.count - 1].append(String(line.dropFirst(2)))
            } else if inside, line.hasPrefix("The API is described") {
                break
            }
        }
        return steps
    }

    /// Runs `lines` with bash (stopping at the first that fails), with
    /// `environment`; answers what it printed.
    static func shell(_ lines: [String], _ environment: [String: String]) async throws -> String {
        let process = try Subprocess(
            "/bin/bash", ["-e", "-o", "pipefail", "-c", lines.joined(separator: "\n")], environment: environment,
            standardOutput: .collect, standardError: .collect)
        defer { process.stop() }
        #expect(await process.exited(within: .seconds(60 * TestTime.scale)))
        _ = await eventually(within: .seconds(10)) { process.standardOutputClosed }
        #expect(process.termination == .exit(0), "\(lines.joined(separator: "\n"))\n\(process.standardError)")
        return process.standardOutput
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
            let result = try await runCommand(executable, ["serve", "--host", "not-an-ip", "--port", "0", "--data-dir", data])
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
                let result = try await runCommand(
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

    /// Every file `islet serve --simulator` writes in its data folder is its user's
    /// only, the CA of the embedded FCM included (one an older Islet left 0644
    /// is replaced).
    @Test func everyFileTheSimulatorWritesIsItsUsersOnly() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let ca = dir.appendingPathComponent("simulator-fcm-ca.pem").path
            #expect(FileManager.default.createFile(atPath: ca, contents: Data("old\n".utf8), attributes: [.posixPermissions: 0o644]))
            let (process, text, exports) = try await startWithWalkthrough(dir)
            defer { process.stop() }
            #expect(exports["DEVICE_KEY"] != nil, "\(text)")
            let files = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
            #expect(files.contains("simulator-fcm-ca.pem") && files.contains("islet.sqlite"), "\(files)")
            for file in files {
                let attributes = try FileManager.default.attributesOfItem(atPath: dir.appendingPathComponent(file).path)
                #expect((attributes[.posixPermissions] as? NSNumber)?.intValue == 0o600, "\(file)")
            }
            #expect(try String(contentsOfFile: ca, encoding: .utf8).hasPrefix("-----BEGIN CERTIFICATE-----"))
        }
    }

    @Test func theAdminTokenIsShownOnceByTheFirstStartThatWorks() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in
            let data = dir.appendingPathComponent("data")
            let tokenFile = data.appendingPathComponent("admin-token").path
            // A first start that fails (its port is taken) writes no token.
            let taken = try ReservedPort()
            let failed = try await runCommand(executable, ["serve", "--port", String(taken.port), "--data-dir", data.path])
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

    @Test func helpAndMissingCommands() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let bare = try await runCommand(executable, [])
        #expect(bare.status == 2)
        #expect(bare.output.isEmpty)
        #expect(bare.error.contains("Usage: islet <command>"))
        let help = try await runCommand(executable, ["help"])
        #expect(help.status == 0)
        #expect(help.output.contains("Usage: islet <command>"))
        let jwt = try await runCommand(executable, ["jwt", "--help"])
        #expect(jwt.status == 0)
        #expect(jwt.output.hasPrefix("Usage: islet jwt --key FILE.p8"))
        for arguments in [["schema", "from-swift", "--help"], ["schema", "--help"]] {
            let schema = try await runCommand(executable, arguments)
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
            let result = try await runCommand(executable, ["jwt", "--key", file.path, "--key-id", "K", "--team-id", "T"])
            #expect(result.status == 2)
            #expect(result.error.contains("the text is not a private key in PEM"), "\(result.error)")
            #expect(!result.error.contains("error:"))
            #expect(!result.error.contains("invalidKey"))
        }
    }
}
