import IsletSync
import Foundation
import IsletCore
import Synchronization

/// `islet-bench paced --port P --app A --key K --kind register|update|healthz --rate R
/// --seconds S [--connections C] [--secrets S0,S1,…] [--timeline FILE]`: sends requests
/// at a fixed rate and measures each one's latency from the moment it was due (so a
/// slow answer also counts against the requests queued behind it). Prints
/// `achieved_rps=… p50_ms=… p90_ms=… p99_ms=… p999_ms=… max_ms=…`; with `--timeline`,
/// writes each request's due time (seconds from the start) and latency (ms), a line
/// each, in the order they were due. `register` registers update tokens for the devices paced-0, paced-1, …
/// (one per connection, registered beforehand), sending device `paced-i` the i-th of
/// `--secrets`, its device secret.
func paced(_ arguments: [String]) throws {
    guard let port = value("--port", in: arguments).flatMap(Int.init), let app = value("--app", in: arguments),
        let key = value("--key", in: arguments), let kind = value("--kind", in: arguments),
        let rate = value("--rate", in: arguments).flatMap(Double.init)
    else {
        throw BenchHTTP.Failure(description: "paced needs --port, --app, --key, --kind and --rate")
    }
    let seconds = value("--seconds", in: arguments).flatMap(Double.init) ?? 5
    let connections = value("--connections", in: arguments).flatMap(Int.init) ?? 16
    let secrets = value("--secrets", in: arguments).map { $0.split(separator: ",").map(String.init) } ?? []
    let timeline = value("--timeline", in: arguments)
    // (due, in seconds from the start; latency, in ms)
    let latencies = Lock<[(Double, Double)]>([])
    let failures = Atomic<Int>(0)
    let start = Date().addingTimeInterval(0.2)
    let interval = Double(connections) / rate
    onThreads(connections) { lane in
        guard let http = try? BenchHTTP(port: port) else {
            failures.add(1, ordering: .relaxed)
            return
        }
        var mine: [(Double, Double)] = []
        var random = SystemRandomNumberGenerator()
        var n = 0
        while true {
            let due = start.addingTimeInterval(Double(lane) / rate + Double(n) * interval)
            if due.timeIntervalSince(start) >= seconds { break }
            let wait = due.timeIntervalSinceNow
            if wait > 0 { usleep(UInt32(wait * 1_000_000)) }
            n += 1
            let response: BenchHTTP.Response?
            switch kind {
            case "register":
                let token = PushToken.make(byteCount: 32, using: &random)
                response = try? http.request(
                    "PUT", "/v1/apps/\(app)/devices/paced-\(lane)/activities/paced-\(lane)-\(n)", key: key,
                    body: #"{"activity_type":"MatchAttributes","token":""# + token + #""}"#,
                    headers: lane < secrets.count ? ["Islet-Device-Secret": secrets[lane]] : [:])
            case "update":
                response = try? http.request(
                    "POST", "/v1/apps/\(app)/activities/bench-update/update", key: key,
                    body: #"{"content_state":{"home":\#(n),"away":0}}"#)
            default:
                response = try? http.request("GET", "/healthz")
            }
            if response == nil || response!.status >= 300 { failures.add(1, ordering: .relaxed) }
            mine.append((due.timeIntervalSince(start), -due.timeIntervalSinceNow * 1000))
        }
        latencies.withLock { $0 += mine }
    }
    let samples = latencies.withLock { $0 }
    let sorted = samples.map(\.1).sorted()
    guard !sorted.isEmpty else { throw BenchHTTP.Failure(description: "no request completed") }
    if let timeline {
        let lines = samples.sorted { $0.0 < $1.0 }.map { String(format: "%.4f %.3f", $0.0, $0.1) }
        try (lines.joined(separator: "\n") + "\n").write(toFile: timeline, atomically: true, encoding: .utf8)
    }
    func percentile(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
    emit("achieved_rps=\(Int(Double(sorted.count) / seconds))")
    emit("p50_ms=\(String(format: "%.2f", percentile(0.5)))")
    emit("p90_ms=\(String(format: "%.2f", percentile(0.9)))")
    emit("p99_ms=\(String(format: "%.2f", percentile(0.99)))")
    emit("p999_ms=\(String(format: "%.2f", percentile(0.999)))")
    emit("max_ms=\(String(format: "%.2f", sorted[sorted.count - 1]))")
    emit("failures=\(failures.load(ordering: .relaxed))")
}
