import IsletSync
import APNsSimulator
import Foundation
import IsletCore
import IsletCrypto
import Synchronization

/// Counts the update pushes the simulator accepted, and their `apns-id`s.
final class AnswerCounter: Sendable {
    private let state = Lock<(total: Int, ids: Set<String>)>((0, []))

    func add(_ apnsID: String) {
        state.withLock {
            $0.total += 1
            $0.ids.insert(apnsID)
        }
    }

    var total: Int { state.withLock { $0.total } }
    var distinct: Int { state.withLock { $0.ids.count } }
}

/// An `islet serve` process with an in-process simulator behind it, and an app.
struct FanoutRig {
    let work: String
    let simulator: APNsSimulator
    let counter: AnswerCounter
    let serverArguments: [String]
    let islet: String
    /// Node 1, which takes the update.
    var server: ServerProcess
    /// Nodes 2…N on the same database.
    var others: [ServerProcess] = []
    var serverKey = ""
    var deviceKey = ""
    var appID = ""
    static let adminToken = "bench-admin-token-0123456789"

    init(islet: String, extraArguments: [String] = [], nodes: Int = 1, channels: Bool = false) throws {
        self.islet = islet
        work = NSTemporaryDirectory() + "islet-bench-\(getpid())-\(Int.random(in: 0..<1_000_000))"
        try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
        let signingKey = try P256.SigningKey.generate()
        try signingKey.pemRepresentation.write(toFile: work + "/key.p8", atomically: true, encoding: .utf8)
        var options = APNsSimulatorOptions()
        options.port = 0
        options.inspectPort = nil
        options.channelsPort = channels ? 0 : nil
        options.threads = 1
        options.engine.pushHistoryLimit = 1
        options.engine.trustedKeys = [TrustedKey(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", publicKey: signingKey.publicKey)]
        let counter = AnswerCounter()
        self.counter = counter
        simulator = try APNsSimulator(options: options) { record in
            if record.event == "update" && record.answer.status == 200 { counter.add(record.answer.apnsID) }
        }
        try simulator.start()
        try (simulator.caCertificatePEM ?? "").write(toFile: work + "/ca.pem", atomically: true, encoding: .utf8)
        serverArguments = [
            "--data-dir", work + "/data", "--admin-token", Self.adminToken,
            "--apns-sandbox-url", "https://127.0.0.1:\(simulator.port)",
            "--apns-production-url", "https://127.0.0.1:\(simulator.port)", "--apns-ca-file", work + "/ca.pem",
        ] + (simulator.channelsPort.map {
            ["--apns-channels-sandbox-url", "https://127.0.0.1:\($0)", "--apns-channels-production-url", "https://127.0.0.1:\($0)"]
        } ?? []) + extraArguments
        server = try ServerProcess(
            islet: islet, arguments: serverArguments + ["--node-id", "bench-node-1"], logPath: work + "/serve.log")
        for node in 1..<max(1, nodes) {
            others.append(try ServerProcess(
                islet: islet, arguments: serverArguments + ["--node-id", "bench-node-\(node + 1)"],
                logPath: work + "/serve-\(node + 1).log"))
        }
        let http = try BenchHTTP(port: server.port)
        let body = JSONValue.object([
            "name": "Bench", "bundle_id": "com.example.bench",
            "apns": ["team_id": "BENCHTEAM1", "key_id": "BENCHKEY01", "private_key": .string(signingKey.pemRepresentation)],
        ])
        let created = try JSONValue(parsing: try http.request("POST", "/v1/apps", key: Self.adminToken, body: body.jsonText).body)
        appID = created["id"]?.stringValue ?? ""
        serverKey = created["server_key"]?.stringValue ?? ""
        deviceKey = created["device_key"]?.stringValue ?? ""
    }

    /// Starts node 1 again, under its node id: it takes back what it held.
    mutating func restart() throws {
        server = try ServerProcess(
            islet: islet, arguments: serverArguments + ["--node-id", "bench-node-1"],
            logPath: work + "/serve-\(Int.random(in: 0..<1_000_000)).log")
    }

    /// Registers `count` devices, each with an update token for `activityID`, over
    /// `connections` keep-alive connections. Answers requests per second.
    func registerHolders(count: Int, activityID: String, connections: Int) throws -> Double {
        let port = server.port
        let appID = appID
        let deviceKey = deviceKey
        let failures = Atomic<Int>(0)
        let started = Date()
        onThreads(connections) { shard in
            guard let http = try? BenchHTTP(port: port) else {
                failures.add(1, ordering: .relaxed)
                return
            }
            var random = SystemRandomNumberGenerator()
            for index in stride(from: shard, to: count, by: connections) {
                let device = "/v1/apps/\(appID)/devices/d\(index)"
                let token = PushToken.make(byteCount: 32, using: &random)
                let a = try? http.request("PUT", device, key: deviceKey, body: #"{"platform":"ios","environment":"sandbox"}"#)
                // The app requires device secrets: the registration's answer holds this one.
                let secret = a.flatMap { try? JSONValue(parsing: $0.body) }?["device_secret"]?.stringValue ?? ""
                let b = try? http.request(
                    "PUT", device + "/activities/\(activityID)", key: deviceKey,
                    body: #"{"activity_type":"MatchAttributes","token":""# + token + #""}"#,
                    headers: ["Islet-Device-Secret": secret])
                if a?.status ?? 0 >= 300 || b?.status ?? 0 >= 300 { failures.add(1, ordering: .relaxed) }
            }
        }
        let failed = failures.load(ordering: .relaxed)
        if failed > 0 { throw BenchHTTP.Failure(description: "\(failed) registrations failed") }
        return Double(count * 2) / Date().timeIntervalSince(started)
    }

    func sendUpdate(activityID: String) throws {
        let http = try BenchHTTP(port: server.port)
        let response = try http.request(
            "POST", "/v1/apps/\(appID)/activities/\(activityID)/update", key: serverKey,
            body: #"{"content_state":{"home":1,"away":0}}"#)
        guard response.status == 202 else {
            throw BenchHTTP.Failure(description: "update answered \(response.status): \(String(decoding: response.body, as: UTF8.self))")
        }
    }

    func waitFor(_ condition: () -> Bool, timeout: TimeInterval) -> Bool {
        let deadline = Date().addingTimeInterval(timeout)
        while Date() < deadline {
            if condition() { return true }
            usleep(2_000)
        }
        return condition()
    }

    func cleanUp() async {
        server.stop()
        for other in others { other.stop() }
        await simulator.shutdown()
        try? FileManager.default.removeItem(atPath: work)
    }
}

/// `islet-bench fanout`: one update through the API to an activity held by N
/// devices, timed until the simulator has answered the last push. The devices are
/// registered through the API, or with `--populate` written straight into the
/// server's SQLite database while it is stopped (for a million). With
/// `--kill-at F`, the server is killed with SIGKILL once a fraction F of the pushes
/// was answered, restarted, and the fan-out timed to its end, counting pushes lost
/// and sent twice.
func fanout(_ arguments: [String]) async throws {
    let islet = value("--islet", in: arguments) ?? ".build/release/islet"
    let devices = Int(value("--devices", in: arguments) ?? "10000") ?? 10_000
    let connections = Int(value("--connections", in: arguments) ?? "4") ?? 4
    let killAt = value("--kill-at", in: arguments).flatMap(Double.init)
    // `--database URL`: every node on that database (PostgreSQL); `--nodes N`: N
    // nodes on it, node 1 taking the update.
    let database = value("--database", in: arguments)
    let nodes = Int(value("--nodes", in: arguments) ?? "1") ?? 1
    let pool = value("--database-pool-size", in: arguments)
    // Every node of a PostgreSQL database seals credentials with one key.
    let secretsKey = try SecretsKey.generate().base64
    let extra = (database.map { ["--database", $0, "--secrets-key", secretsKey] } ?? [])
        + (pool.map { ["--database-pool-size", $0] } ?? [])
    let populated = arguments.contains("--populate")
    if populated && database != nil {
        throw BenchHTTP.Failure(description: "--populate writes into SQLite; leave out --database")
    }
    var rig = try FanoutRig(islet: islet, extraArguments: extra, nodes: nodes)
    do {
        try await measure(&rig, devices: devices, connections: connections, killAt: killAt, populated: populated)
    } catch {
        // The servers go with the run, whatever ends it.
        await rig.cleanUp()
        throw error
    }
}

/// The fan-out `fanout` times, on a started rig; cleans it up when done.
private func measure(
    _ rig: inout FanoutRig, devices: Int, connections: Int, killAt: Double?, populated: Bool
) async throws {
    if populated {
        rig.server.stop()
        let began = Date()
        try populate(path: rig.work + "/data/islet.sqlite", app: rig.appID, count: devices, sharedActivity: "final")
        emit("populate_seconds=\(String(format: "%.1f", Date().timeIntervalSince(began)))")
        try rig.restart()
    } else {
        let registrations = try rig.registerHolders(count: devices, activityID: "final", connections: connections)
        emit("registration_requests_per_second=\(Int(registrations))")
    }
    let started = Date()
    try rig.sendUpdate(activityID: "final")
    if let killAt {
        _ = rig.waitFor({ rig.counter.total >= Int(Double(devices) * killAt) }, timeout: 600)
        rig.server.kill()
        let answeredBeforeKill = rig.counter.total
        let restarted = Date()
        try rig.restart()
        let finished = rig.waitFor({ rig.counter.distinct >= devices }, timeout: 600)
        let recovery = Date().timeIntervalSince(restarted)
        // Let pushes still in flight land before counting duplicates.
        usleep(500_000)
        emit("answered_before_kill=\(answeredBeforeKill)")
        emit("recovery_seconds=\(String(format: "%.2f", recovery))")
        emit("lost=\(devices - rig.counter.distinct)")
        emit("sent_twice=\(rig.counter.total - rig.counter.distinct)")
        emit("finished=\(finished)")
    } else {
        let finished = rig.waitFor({ rig.counter.total >= devices }, timeout: 600)
        let seconds = Date().timeIntervalSince(started)
        emit("fanout_pushes_per_second=\(Int(Double(rig.counter.total) / seconds))")
        emit("fanout_seconds=\(String(format: "%.3f", seconds))")
        emit("finished=\(finished)")
    }
    emit("server_peak_rss_mb=\(String(format: "%.1f", rig.server.peakRSSMegabytes))")
    emit("server_cpu_seconds=\(String(format: "%.2f", ([rig.server] + rig.others).map(\.cpuSeconds).reduce(0, +)))")
    await rig.cleanUp()
}

/// Writes one `key=value` line at once (standard output may be a pipe or a file,
/// where `print` would hold lines back until exit).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
