import Foundation
import IsletCore
import IsletTesting
import Testing

/// The API against its own OpenAPI document: schemathesis (pinned in
/// scripts/test-requirements.txt, installed by scripts/test-tools.sh) generates
/// requests from the document, valid and invalid, one operation at a time and in
/// sequences, and checks every answer: no 5xx, only documented statuses, content
/// types and shapes, every valid request accepted, every invalid one refused, 405
/// with Allow for other methods, authentication never ignored.
@Suite("The API against its OpenAPI document", .requires(.python))
struct OpenAPIConformanceTests {
    /// The repository's root: this file is Tests/IsletServerTests/… in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()

    /// Test cases per operation and phase: about a minute on a 2-core machine.
    /// `ISLET_CONFORMANCE_EXAMPLES` and `ISLET_CONFORMANCE_SEED` change the run;
    /// `ISLET_CONFORMANCE_REPORT` names a file to keep schemathesis's report in.
    static let maxExamples = ProcessInfo.processInfo.environment["ISLET_CONFORMANCE_EXAMPLES"] ?? "40"
    static let seed = ProcessInfo.processInfo.environment["ISLET_CONFORMANCE_SEED"] ?? "20261201"

    @Test func schemathesisFindsNothing() async throws {
        let schemathesis = Self.root.appendingPathComponent(".build/test-venv/bin/schemathesis").path
        let hooks = Self.root.appendingPathComponent("scripts/conformance/hooks.py").path
        try #require(
            FileManager.default.isExecutableFile(atPath: schemathesis),
            "schemathesis is not installed at \(schemathesis): run ./scripts/test-tools.sh (make test runs it) to make .build/test-venv")
        try #require(FileManager.default.fileExists(atPath: hooks), "the schemathesis hooks are missing at \(hooks)")

        try await ServerHarness.with { h in
            // One app whose keys every app route gets, with a device, a token and an
            // activity to find; another for the admin routes to change and rotate
            // (rotating the first would stop its keys mid-run).
            let app = try await h.createApp()
            let target = try await h.createApp(name: "Admin target", bundleID: "com.example.target")
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            try #require(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)

            let document = try await h.call("GET", "/openapi.json", key: nil)
            try #require(document.status == 200)
            let directory = h.directory.appendingPathComponent("schemathesis")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            let documentFile = directory.appendingPathComponent("openapi.json")
            try Data(document.json.jsonText.utf8).write(to: documentFile)
            let config = directory.appendingPathComponent("schemathesis.toml")
            try Self.config(hooks: hooks, app: app, adminTarget: target.id).write(to: config, atomically: true, encoding: .utf8)
            let report = directory.appendingPathComponent("report.txt")

            let status = try await Self.run(
                schemathesis,
                [
                    "--config-file", config.path, "run", "http://127.0.0.1:\(h.application.port)/openapi.json",
                    "--checks", "all", "--phases", "examples,coverage,fuzzing,stateful",
                    "--max-examples", Self.maxExamples, "--seed", Self.seed, "--no-color",
                ],
                in: directory, environment: ["ISLET_OPENAPI_DOCUMENT": documentFile.path], output: report)
            let text = (try? String(contentsOf: report, encoding: .utf8)) ?? ""
            if let keep = ProcessInfo.processInfo.environment["ISLET_CONFORMANCE_REPORT"] {
                try? Data(text.utf8).write(to: URL(fileURLWithPath: keep))
            }
            #expect(status == 0, "schemathesis found faults (exit status \(status)):\n\(text)")
            // Every operation it selected (all but the document's own route) was tested.
            let selected = text.split(separator: "\n").lazy.compactMap { line -> Substring? in
                guard let range = line.range(of: "Selected: ") else { return nil }
                return line[range.upperBound...]
            }.first
            let parts = selected?.split(separator: "/").map { Int($0) ?? 0 } ?? []
            #expect(parts.count == 2 && parts[0] == parts[1] && parts[0] >= 40, "\(text)")
            #expect(text.contains("Tested: \(parts.first ?? 0)\n"), "schemathesis did not test every operation:\n\(text)")
        }
    }

    /// Each route gets its own credential: schemathesis gives each security scheme
    /// of the document its bearer key. The app id is pinned so that requests reach
    /// the routes' logic (an id of no app is a documented 404, and one of those is
    /// all a generated id would find).
    static func config(hooks: String, app: TestApp, adminTarget: String) -> String {
        """
        hooks = "\(hooks)"

        [auth.openapi.adminToken]
        bearer = "\(ServerHarness.adminToken)"
        [auth.openapi.serverKey]
        bearer = "\(app.serverKey)"
        [auth.openapi.deviceKey]
        bearer = "\(app.deviceKey)"

        # A request slower than this has hung; it is not a matter of a busy machine.
        [checks]
        max_response_time = 60.0

        [[operations]]
        include-tag = "admin"
        parameters = { "path.app_id" = "\(adminTarget)" }

        [[operations]]
        exclude-tag = "admin"
        parameters = { "path.app_id" = "\(app.id)" }

        """
    }

    /// Runs a command in `directory`, its output to `output`, without blocking a
    /// thread while it runs; answers its exit status.
    static func run(
        _ executable: String, _ arguments: [String], in directory: URL, environment: [String: String], output: URL
    ) async throws -> Int32 {
        _ = FileManager.default.createFile(atPath: output.path, contents: nil)
        var variables = environment
        variables["PYTHONDONTWRITEBYTECODE"] = variables["PYTHONDONTWRITEBYTECODE"] ?? "1"
        let process = try Subprocess(
            executable, arguments, environment: variables, directory: directory.path,
            standardOutput: .file(output.path), standardError: .file(output.path))
        defer { process.stop() }
        // Generous: the whole run takes minutes on a busy machine.
        guard await process.exited(within: .seconds(1_800)) else {
            throw RawHTTPError("\(executable) did not finish within 30 minutes")
        }
        return switch process.termination {
        case .exit(let status): status
        case .signal(let number): 128 + number
        case nil: -1
        }
    }
}
