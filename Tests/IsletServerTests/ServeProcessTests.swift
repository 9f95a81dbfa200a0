import IsletSync
import Foundation
import IsletCore
import IsletTesting
import Testing

/// Runs the real `islet` executable, as `make run` does.
@Suite("islet serve as a process")
struct ServeProcessTests {
    let executable = builtProductPath("islet")

    /// Collects a pipe's output as it arrives.
    final class OutputCollector: Sendable {
        private let text = Lock("")
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
            defer { killIfRunning(process) }

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
            _ = await eventually { !process.isRunning }
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

    @Test func simulatorModePrintsAWalkThroughThatWorks() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in
            let process = Process()
            process.executableURL = URL(fileURLWithPath: executable)
            process.arguments = [
                "serve", "--simulator", "--port", "0", "--simulator-port", "0", "--simulator-inspect-port", "0",
                "--data-dir", dir.path,
            ]
            let outputPipe = Pipe()
            process.standardOutput = outputPipe
            process.standardError = Pipe()
            let output = OutputCollector(outputPipe)
            try process.run()
            defer { killIfRunning(process) }
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
}
