import Foundation
import IsletCore
import IsletTesting
import Testing

/// A client generated from the OpenAPI document, the way most backends would call
/// Islet: openapi-python-client (PyPI) turns the document the server serves into a
/// typed Python package, with no warning and every operation, and the README's
/// walk-through runs through it (scripts/peers/generated_client_walkthrough.py),
/// reading each answer by the attributes its declared schema gives it.
@Suite("A client generated from the OpenAPI document", .requires(.python), .timeLimit(.minutes(3)))
struct GeneratedClientTests {
    @Test func openapiPythonClientGeneratesATypedClientThatRunsTheWalkThrough() async throws {
        let python = try PythonTools.python()
        let generator = PythonTools.root.appendingPathComponent(".build/test-venv/bin/openapi-python-client").path
        try #require(FileManager.default.isExecutableFile(atPath: generator), "openapi-python-client is not installed at \(generator): run ./scripts/test-tools.sh")
        let script = try PythonTools.script("scripts/peers/generated_client_walkthrough.py")
        let bin = PythonTools.root.appendingPathComponent(".build/test-venv/bin").path
        let path = bin + ":" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        try await withTemporaryDirectory { folder in
            try await ServerHarness.with { harness in
                let document = try await harness.call("GET", "/openapi.json", key: nil)
                try #require(document.status == 200)
                let documentFile = folder.appendingPathComponent("openapi.json")
                try Data(document.json.jsonText.utf8).write(to: documentFile)
                let package = folder.appendingPathComponent("islet_client").path
                let generating = try ChildProcess(
                    generator, ["generate", "--path", documentFile.path, "--output-path", package, "--meta", "none"],
                    environment: ["PATH": path, "HOME": folder.path])
                defer { generating.stop() }
                let generated = await generating.exitStatus(within: .seconds(120))
                let said = generating.lines.joined(separator: "\n") + generating.standardError
                try #require(generated == 0, "openapi-python-client failed (\(String(describing: generated))):\n\(said)")
                // Every part of the document understood: nothing skipped.
                #expect(!said.contains("Warning") && !said.contains("Unable to"), "\(said)")

                let base = "http://127.0.0.1:\(harness.application.port)"
                let starting = try ChildProcess(
                    python, [script, folder.path, base, "start"],
                    environment: [
                        "ISLET_ADMIN_TOKEN": ServerHarness.adminToken, "ISLET_APNS_KEY_PEM": harness.signingKey.pemRepresentation,
                    ])
                defer { starting.stop() }
                let started = await starting.exitStatus()
                let stateLine = try #require(starting.lines.last, "no state from the start phase: \(starting.standardError)")
                try #require(started == 0, "the start phase failed: \(stateLine)\n\(starting.standardError)")
                let state = try JSONValue(parsing: Data(stateLine.utf8))
                #expect(state["app_id"]?.stringValue?.hasPrefix("app_") == true)

                // The simulated phone shows the activity and mints its update token.
                let token = try await harness.simulatedUpdateToken(activityID: "order-42")
                let finishing = try ChildProcess(
                    python, [script, folder.path, base, "finish", "--state", stateLine, "--update-token", token])
                defer { finishing.stop() }
                let finished = await finishing.exitStatus()
                let summaryLine = try #require(finishing.lines.last, "nothing from the finish phase: \(finishing.standardError)")
                try #require(finished == 0, "the finish phase failed: \(summaryLine)\n\(finishing.standardError)")
                let summary = try JSONValue(parsing: Data(summaryLine.utf8))
                #expect(summary["activity_status"] == "ended")
                #expect(summary["copies"] == ["phone-1"])
                #expect(summary["pushes"] == ["end", "start", "update"])
            }
        }
    }
}
