import Foundation
import IsletTesting
import Testing

/// The dashboard's page, script and style: ordinary files in
/// Sources/IsletServer/Dashboard/Assets/, compiled into the binary by the EmbedAssets
/// plugin. The server answers each byte for byte as the file holds it, and the
/// script parses as JavaScript.
@Suite("Dashboard assets")
struct DashboardAssetTests {
    /// The repository's root: this file is Tests/IsletServerTests/… in it.
    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent()
    static let assets = root.appendingPathComponent("Sources/IsletServer/Dashboard/Assets")

    /// Each route, the file it serves and its content type.
    static let served: [(path: String, file: String, type: String)] = [
        ("/dashboard", "dashboard.html", "text/html; charset=utf-8"),
        ("/dashboard/app.js", "dashboard.js", "text/javascript; charset=utf-8"),
        ("/dashboard/app.css", "dashboard.css", "text/css; charset=utf-8"),
    ]

    static func file(_ name: String) throws -> Data {
        try Data(contentsOf: assets.appendingPathComponent(name))
    }

    @Test func theServerAnswersEachFileByteForByte() async throws {
        try await ServerHarness.with { h in
            for asset in Self.served {
                let reply = try await httpRequest(port: h.application.port, path: asset.path)
                let file = try Self.file(asset.file)
                #expect(reply.status == 200, "\(asset.path)")
                #expect(!file.isEmpty, "\(asset.file)")
                #expect(reply.body == file, "\(asset.path) is not \(asset.file) byte for byte")
                #expect(reply.headers["content-type"] == asset.type, "\(asset.path)")
                #expect(reply.headers["cache-control"] == "no-cache", "\(asset.path)")
                #expect(reply.headers["x-content-type-options"] == "nosniff", "\(asset.path)")
            }
            // The page alone carries the policy and framing headers.
            let page = try await httpRequest(port: h.application.port, path: "/dashboard")
            #expect(
                page.headers["content-security-policy"]
                    == "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
                    + "base-uri 'none'; form-action 'self'; frame-ancestors 'none'")
            #expect(page.headers["x-frame-options"] == "DENY")
            #expect(page.headers["referrer-policy"] == "no-referrer")
            let script = try await httpRequest(port: h.application.port, path: "/dashboard/app.js")
            #expect(script.headers["content-security-policy"] == nil)
        }
    }

    /// `node --check` parses the script without running it. A script with a syntax
    /// error is refused by the same check, so that this test can fail.
    @Test(.requires(.node)) func theScriptParses() async throws {
        let node = try #require(Self.onPath("node"), "node is not on PATH (\(Self.path)): install Node.js")
        let script = Self.assets.appendingPathComponent("dashboard.js").path
        let checked = try await runBlocking { try runCommand(node, ["--check", script]) }
        #expect(checked.status == 0, "node --check \(script):\n\(checked.error)")

        try await withTemporaryDirectory { directory in
            let broken = directory.appendingPathComponent("broken.js")
            var text = try Self.file("dashboard.js")
            text.append(contentsOf: Array("\n(() => {\n".utf8))
            try text.write(to: broken)
            let refused = try await runBlocking { try runCommand(node, ["--check", broken.path]) }
            #expect(refused.status != 0, "node --check accepted a script with an unclosed function")
            #expect(refused.error.contains("SyntaxError"), "\(refused.error)")
        }
    }

    static var path: String { ProcessInfo.processInfo.environment["PATH"] ?? "" }

    /// The first executable `name` in a folder of PATH.
    static func onPath(_ name: String) -> String? {
        path.split(separator: ":").map { URL(fileURLWithPath: String($0)).appendingPathComponent(name).path }
            .first { FileManager.default.isExecutableFile(atPath: $0) }
    }
}
