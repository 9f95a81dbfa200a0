import Foundation
import IsletTesting
import Synchronization
import Testing

/// Runs the real `islet` executable, as `make run` does.
@Suite("islet serve as a process")
struct ServeProcessTests {
    let executable = builtProductPath("islet")

    /// Collects a pipe's output as it arrives.
    final class OutputCollector: Sendable {
        private let text = Mutex("")
        init(_ pipe: Pipe) {
            pipe.fileHandleForReading.readabilityHandler = { [self] handle in
                let data = handle.availableData
                if data.isEmpty { handle.readabilityHandler = nil; return }
                text.withLock { $0 += String(decoding: data, as: UTF8.self) }
            }
        }
        var value: String { text.withLock { $0 } }
    }

    @Test func startsAnswersHealthzAndStopsCleanlyOnSIGTERM() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = ["serve", "--port", "0", "--data-dir", dir.path, "--log-format", "json"]
            let errorPipe = Pipe()
            process.standardError = errorPipe
            process.standardOutput = Pipe()
            let output = OutputCollector(errorPipe)
            try process.run()

            var port: Int?
            for _ in 0..<400 where port == nil {
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
            for _ in 0..<400 where process.isRunning { try await Task.sleep(for: .milliseconds(25)) }
            #expect(!process.isRunning)
            #expect(process.terminationReason == .exit)
            #expect(process.terminationStatus == 0)
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
}
