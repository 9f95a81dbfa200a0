import Foundation
import IsletCore
import IsletCrypto
import IsletSync
import SQLiteStorage
import Simulators
import Synchronization

/// Counts the update pushes the simulator accepted, and their `apns-id`s, and keeps
/// the first one's record (its headers and payload, for the wire reference).
final class AnswerCounter: Sendable {
    private let state = Lock<(total: Int, ids: Set<String>, first: PushRecord?)>((0, [], nil))

    func add(_ record: PushRecord) {
        state.withLock {
            $0.total += 1
            $0.ids.insert(record.answer.apnsID)
            if $0.first == nil { $0.first = record }
        }
    }

    var total: Int { state.withLock { $0.total } }
    var distinct: Int { state.withLock { $0.ids.count } }
    var first: PushRecord? { state.withLock { $0.first } }
}

/// An `islet serve` process with an in-process simulator behind it, and an app.
struct FanoutRig {
    let work: String
    let simulator: APNsSimulator
    let counter: AnswerCounter
    let serverArguments: [String]
    let islet: String
    /// The app's APNs key, which the simulator trusts.
    let signingKey: P256.SigningKey
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
        signingKey = try P256.SigningKey.generate()
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
            if record.event == "update" && record.answer.status == 200 { counter.add(record) }
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

    /// Rows the server's writes touched since it started, from its `/metrics`
    /// (`islet_database_rows_written_total`, SQLite only); nil when it shows none.
    func rowsWritten() throws -> Int64? {
        let http = try BenchHTTP(port: server.port)
        let text = String(decoding: try http.request("GET", "/metrics").body, as: UTF8.self)
        for line in text.split(separator: "\n") where line.hasPrefix("islet_database_rows_written_total{") {
            return line.split(separator: " ").last.flatMap { Int64($0) }
        }
        return nil
    }

    /// The server's SQLite database (without `--database`).
    var databasePath: String { work + "/data/islet.sqlite" }

    /// The update tokens of `activityID`'s holders, in the order the fan-out
    /// sends to them (by device id), read from the SQLite database.
    func updateTokens(activityID: String) throws -> [String] {
        var options = SQLiteOptions()
        options.readOnly = true
        let connection = try SQLiteConnection(path: databasePath, options: options)
        return try connection.query(
            "SELECT update_token FROM activity_instances WHERE app_id = ? AND activity_id = ? AND update_token IS NOT NULL ORDER BY device_id",
            [appID, activityID]
        ).compactMap { $0[0].text }
    }

    /// Waits until the servers have finished what the last send left them to do
    /// (recording each push's answer): until they spend less than a tenth of a
    /// core over half a second, or 60 s pass.
    func waitIdle() {
        let processes = [server] + others
        let deadline = Date().addingTimeInterval(60)
        var last = processes.map(\.cpuSeconds).reduce(0, +)
        while Date() < deadline {
            usleep(500_000)
            let now = processes.map(\.cpuSeconds).reduce(0, +)
            if now - last < 0.05 { return }
            last = now
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
///
/// On SQLite, two more measures:
/// - `--wire-rounds R`: the wire reference (see `WireReference`), h2load sending the
///   fan-out's push to its tokens on the same simulator, taking turns with the
///   fan-out for R rounds (the first fan-out is the first round's; each later round
///   sends the update again). Prints each side's rounds, the medians, and
///   `fanout_over_wire`, the ratio of the medians. `--h2load PATH` names h2load.
/// - `--database-growth`: the database measured (see `DatabaseFootprint`) with the
///   server stopped, once the holders are registered and once every fan-out was
///   answered and recorded; prints its growth per delivered push in bytes
///   (`db_bytes_per_push`) and in rows (`rows_added_per_push`). The server is
///   restarted for the fan-out, so its peak RSS and CPU are the fan-out's alone.
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
    var plan = FanoutPlan(devices: devices, connections: connections, killAt: killAt)
    plan.populated = arguments.contains("--populate")
    plan.wireRounds = Int(value("--wire-rounds", in: arguments) ?? "0") ?? 0
    plan.h2load = value("--h2load", in: arguments) ?? "h2load"
    plan.databaseGrowth = arguments.contains("--database-growth")
    if database != nil && (plan.populated || plan.wireRounds > 0 || plan.databaseGrowth) {
        throw BenchHTTP.Failure(
            description: "--populate, --wire-rounds and --database-growth read or write SQLite; leave out --database")
    }
    if killAt != nil && (plan.wireRounds > 0 || plan.databaseGrowth) {
        throw BenchHTTP.Failure(description: "--wire-rounds and --database-growth measure a whole fan-out; leave out --kill-at")
    }
    var rig = try FanoutRig(islet: islet, extraArguments: extra, nodes: nodes)
    do {
        try await measure(&rig, plan)
    } catch {
        // The servers go with the run, whatever ends it.
        await rig.cleanUp()
        throw error
    }
}

/// What `fanout` measures, from its flags.
struct FanoutPlan {
    var devices: Int
    var connections: Int
    var killAt: Double?
    var populated = false
    var wireRounds = 0
    var h2load = "h2load"
    var databaseGrowth = false
}

/// The fan-out `fanout` times, on a started rig; cleans it up when done.
private func measure(_ rig: inout FanoutRig, _ plan: FanoutPlan) async throws {
    let devices = plan.devices
    var before: DatabaseFootprint?
    if plan.populated {
        rig.server.stop()
        let began = Date()
        try populate(path: rig.databasePath, app: rig.appID, count: devices, sharedActivity: "final")
        emit("populate_seconds=\(String(format: "%.1f", Date().timeIntervalSince(began)))")
        if plan.databaseGrowth { before = try DatabaseFootprint(path: rig.databasePath) }
        try rig.restart()
    } else {
        let registrations = try rig.registerHolders(count: devices, activityID: "final", connections: plan.connections)
        emit("registration_requests_per_second=\(Int(registrations))")
        if plan.databaseGrowth {
            rig.server.stop()
            before = try DatabaseFootprint(path: rig.databasePath)
            try rig.restart()
        }
    }
    let tokens = plan.wireRounds > 0 ? try rig.updateTokens(activityID: "final") : []
    // The rows the server writes from here on (its count starts with the process).
    let writtenBefore = plan.databaseGrowth ? try rig.rowsWritten() : nil
    let started = Date()
    try rig.sendUpdate(activityID: "final")
    if let killAt = plan.killAt {
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
        var finished = rig.waitFor({ rig.counter.total >= devices }, timeout: 600)
        let seconds = Date().timeIntervalSince(started)
        let firstRate = Double(rig.counter.total) / seconds
        emit("fanout_pushes_per_second=\(Int(firstRate))")
        emit("fanout_seconds=\(String(format: "%.3f", seconds))")
        // The pushes the fan-outs delivered (h2load's, counted too, are left out).
        var delivered = rig.counter.total
        if plan.wireRounds > 0 {
            guard let push = rig.counter.first else { throw BenchHTTP.Failure(description: "the fan-out sent no update") }
            let wire = try WireReference(
                h2load: plan.h2load, simulatorPort: rig.simulator.port, push: push, tokens: tokens,
                signingKey: rig.signingKey, work: rig.work)
            var fanoutRates = [firstRate]
            var wireRates: [Double] = []
            for round in 0..<plan.wireRounds {
                if round > 0 {
                    rig.waitIdle()
                    let base = rig.counter.total
                    let began = Date()
                    try rig.sendUpdate(activityID: "final")
                    finished = rig.waitFor({ rig.counter.total >= base + devices }, timeout: 600) && finished
                    let answered = rig.counter.total - base
                    fanoutRates.append(Double(answered) / Date().timeIntervalSince(began))
                    delivered += answered
                }
                rig.waitIdle()
                wireRates.append(try wire.run())
            }
            let fanoutMedian = median(fanoutRates)
            let wireMedian = median(wireRates)
            emit("fanout_rounds=\(fanoutRates.map { String(Int($0)) }.joined(separator: ","))")
            emit("wire_rounds=\(wireRates.map { String(Int($0)) }.joined(separator: ","))")
            emit("fanout_median_pushes_per_second=\(Int(fanoutMedian))")
            emit("wire_pushes_per_second=\(Int(wireMedian))")
            emit("fanout_over_wire=\(String(format: "%.3f", wireMedian > 0 ? fanoutMedian / wireMedian : 0))")
        }
        emit("finished=\(finished)")
        if let before {
            rig.waitIdle()
            // Read before the server stops, with its /proc entry.
            let rss = rig.server.peakRSSMegabytes
            let cpu = ([rig.server] + rig.others).map(\.cpuSeconds).reduce(0, +)
            let writtenAfter = try rig.rowsWritten()
            rig.server.stop()
            let after = try DatabaseFootprint(path: rig.databasePath)
            let pushes = Double(max(delivered, 1))
            emit("db_pushes=\(delivered)")
            emit("db_bytes_before=\(before.bytes) db_bytes_after=\(after.bytes)")
            emit("db_rows_before=\(before.rows) db_rows_after=\(after.rows)")
            emit("db_rows_added_by_table=\(after.rowsAdded(since: before))")
            emit("db_bytes_per_push=\(String(format: "%.1f", Double(after.bytes - before.bytes) / pushes))")
            emit("rows_added_per_push=\(String(format: "%.3f", Double(after.rows - before.rows) / pushes))")
            if let writtenBefore, let writtenAfter {
                emit("db_rows_written=\(writtenAfter - writtenBefore)")
                emit("row_writes_per_push=\(String(format: "%.3f", Double(writtenAfter - writtenBefore) / pushes))")
            }
            emit("server_peak_rss_mb=\(String(format: "%.1f", rss))")
            emit("server_cpu_seconds=\(String(format: "%.2f", cpu))")
            await rig.cleanUp()
            return
        }
    }
    emit("server_peak_rss_mb=\(String(format: "%.1f", rig.server.peakRSSMegabytes))")
    emit("server_cpu_seconds=\(String(format: "%.2f", ([rig.server] + rig.others).map(\.cpuSeconds).reduce(0, +)))")
    await rig.cleanUp()
}

/// The middle value (the mean of the two middle ones for an even count); 0 for none.
func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    guard !sorted.isEmpty else { return 0 }
    let middle = sorted.count / 2
    return sorted.count % 2 == 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

/// Writes one `key=value` line at once (standard output may be a pipe or a file,
/// where `print` would hold lines back until exit).
func emit(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}
