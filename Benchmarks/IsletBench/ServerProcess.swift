import Foundation

/// `islet serve` as a child process, for benchmarks that measure the server alone.
final class ServerProcess {
    let process = Process()
    let port: Int
    private let log: FileHandle

    init(islet: String, arguments: [String], logPath: String) throws {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        log = try FileHandle(forWritingTo: URL(fileURLWithPath: logPath))
        process.executableURL = URL(fileURLWithPath: islet)
        process.arguments = ["serve", "--port", "0", "--log-format", "json", "--log-level", "notice"] + arguments
        process.standardError = log
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        var found: Int?
        for _ in 0..<2_000 where found == nil {
            usleep(10_000)
            let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
            for line in text.split(separator: "\n") where line.contains("\"msg\":\"listening\"") {
                if let range = line.range(of: "http://127.0.0.1:") {
                    found = Int(line[range.upperBound...].prefix { $0.isNumber })
                }
            }
        }
        guard let found else {
            process.terminate()
            throw BenchHTTP.Failure(description: "islet serve did not start; see \(logPath)")
        }
        port = found
    }

    /// Peak resident memory so far, in MB (VmHWM).
    var peakRSSMegabytes: Double {
        let status = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8)) ?? ""
        for line in status.split(separator: "\n") where line.hasPrefix("VmHWM:") {
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "0") ?? 0
            return kilobytes / 1024
        }
        return 0
    }

    /// CPU time used so far (user and system), in seconds.
    var cpuSeconds: Double {
        let stat = (try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8)) ?? ""
        // Fields after the command name's closing parenthesis: utime is the 12th, stime the 13th.
        guard let close = stat.lastIndex(of: ")") else { return 0 }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return 0 }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func kill() {
        Glibc.kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }

    func stop() {
        process.terminate()
        process.waitUntilExit()
    }
}
