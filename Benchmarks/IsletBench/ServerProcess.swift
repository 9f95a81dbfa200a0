import Foundation
import IsletTesting

/// `islet serve` as a child process, for benchmarks that measure the server alone
/// (spawned as the tests spawn theirs: see `Subprocess`).
final class ServerProcess {
    let process: Subprocess
    let port: Int

    init(islet: String, arguments: [String], logPath: String) throws {
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        process = try Subprocess(
            islet, ["serve", "--port", "0", "--log-format", "json", "--log-level", "notice"] + arguments,
            standardError: .file(logPath))
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
            process.stop()
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
        process.stop()
    }

    /// SIGTERM, then waits for the exit (up to two minutes; killed after that).
    func stop() {
        process.terminate()
        let deadline = ContinuousClock.now + .seconds(120)
        while process.isRunning && ContinuousClock.now < deadline { usleep(10_000) }
        process.stop()
    }
}
