import Foundation
import IsletCore
import IsletCrypto
import IsletLog
import IsletServer
import Simulators
import Synchronization

/// `islet-bench retention [--minutes M] [--seconds S] [--devices D] [--updates U]
/// [--sample-seconds N]`: the history's retention under a steady load. A server
/// keeping its history M minutes (2), in this process (`--history-retention-days`
/// takes an hour at least, the window the budgets read: the setting is made here in
/// code, as a test makes it; events are kept as long, since every push sent is one),
/// sends to an in-process simulator for S seconds (480):
/// an activity after another, each followed by D devices (500), updated U times
/// (4) and ended. Every N seconds (10) it prints the database's size (the SQLite
/// file and its WAL) and what the app's history holds, as `GET /v1/apps/{app_id}`
/// says; at the end, the size once the retention window had passed (the retention
/// and three purges) beside the size at the end.
func retention(_ arguments: [String]) async throws {
    let minutes = Double(value("--minutes", in: arguments) ?? "2") ?? 2
    let duration = Double(value("--seconds", in: arguments) ?? "480") ?? 480
    let devices = Int(value("--devices", in: arguments) ?? "500") ?? 500
    let updates = Int(value("--updates", in: arguments) ?? "4") ?? 4
    let sampleEvery = Double(value("--sample-seconds", in: arguments) ?? "10") ?? 10

    let work = NSTemporaryDirectory() + "islet-bench-retention-\(getpid())-\(Int.random(in: 0..<1_000_000))"
    try FileManager.default.createDirectory(atPath: work, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: work) }
    let signingKey = try P256.SigningKey.generate()
    var options = APNsSimulatorOptions()
    options.port = 0
    options.inspectPort = nil
    options.channelsPort = nil
    options.threads = 1
    options.engine.pushHistoryLimit = 1
    options.engine.trustedKeys = [TrustedKey(keyID: "BENCHKEY01", teamID: "BENCHTEAM1", publicKey: signingKey.publicKey)]
    let answered = Atomic<Int>(0)
    let simulator = try APNsSimulator(options: options) { record in
        if record.answer.status == 200 { answered.add(1, ordering: .relaxed) }
    }
    try simulator.start()
    try (simulator.caCertificatePEM ?? "").write(toFile: work + "/ca.pem", atomically: true, encoding: .utf8)

    var configuration = Configuration()
    configuration.port = 0
    configuration.dataDirectory = work + "/data"
    configuration.adminToken = FanoutRig.adminToken
    configuration.apnsSandboxURL = "https://127.0.0.1:\(simulator.port)"
    configuration.apnsProductionURL = "https://127.0.0.1:\(simulator.port)"
    configuration.apnsCAFile = work + "/ca.pem"
    configuration.logLevel = .warning
    configuration.historyRetentionDays = minutes / 1_440
    // Each push sent is an event too (push.sent): kept as long here, or the file
    // would grow with them whatever the history's retention.
    configuration.eventRetentionDays = minutes / 1_440
    let application = try buildApplication(configuration)
    let port = try application.start()
    let database = configuration.resolvedDatabasePath

    let http = try BenchHTTP(port: port)
    let body = JSONValue.object([
        "name": "Bench", "bundle_id": "com.example.bench",
        "apns": ["team_id": "BENCHTEAM1", "key_id": "BENCHKEY01", "private_key": .string(signingKey.pemRepresentation)],
    ])
    let created = try JSONValue(parsing: try http.request("POST", "/v1/apps", key: FanoutRig.adminToken, body: body.jsonText).body)
    let appID = created["id"]?.stringValue ?? ""
    let serverKey = created["server_key"]?.stringValue ?? ""
    let deviceKey = created["device_key"]?.stringValue ?? ""

    // The devices, with their secrets.
    let lanes = 4
    let secrets = Mutex<[Int: String]>([:])
    onThreads(lanes) { lane in
        guard let http = try? BenchHTTP(port: port) else { return }
        for index in stride(from: lane, to: devices, by: lanes) {
            let answer = try? http.request(
                "PUT", "/v1/apps/\(appID)/devices/d\(index)", key: deviceKey, body: #"{"platform":"ios","environment":"sandbox"}"#)
            let secret = answer.flatMap { try? JSONValue(parsing: $0.body) }?["device_secret"]?.stringValue ?? ""
            secrets.withLock { $0[index] = secret }
        }
    }
    let deviceSecrets = secrets.withLock { $0 }

    /// The database's size on disk: the file and its write-ahead log, in MB.
    func sizes() -> (file: Double, wal: Double) {
        func megabytes(_ path: String) -> Double {
            let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.doubleValue ?? 0
            return size / 1_048_576
        }
        return (megabytes(database), megabytes(database + "-wal"))
    }

    let started = Date()
    var samples: [(seconds: Double, total: Double)] = []
    var nextSample = 0.0
    /// Prints a sample when one is due.
    func sampleIfDue() throws {
        let seconds = Date().timeIntervalSince(started)
        guard seconds >= nextSample else { return }
        nextSample += sampleEvery
        let size = sizes()
        let shown = try JSONValue(parsing: try http.request("GET", "/v1/apps/\(appID)", key: FanoutRig.adminToken).body)
        let history = shown["history"]
        samples.append((seconds, size.file + size.wal))
        emit(
            "sample seconds=\(Int(seconds)) file_mb=\(String(format: "%.2f", size.file)) wal_mb=\(String(format: "%.2f", size.wal))"
                + " activities=\(history?["activities"]?.int64Value ?? -1) sends=\(history?["sends"]?.int64Value ?? -1)"
                + " pushes=\(history?["pushes"]?.int64Value ?? -1)")
    }

    var activity = 0
    var queued = 0
    while Date().timeIntervalSince(started) < duration {
        activity += 1
        let activityID = "a\(activity)"
        // Each device follows the activity with a fresh update token (the first
        // creates it, as an activity a device started).
        onThreads(lanes) { lane in
            guard let http = try? BenchHTTP(port: port) else { return }
            var random = SystemRandomNumberGenerator()
            for index in stride(from: lane, to: devices, by: lanes) {
                let token = PushToken.make(byteCount: 32, using: &random)
                _ = try? http.request(
                    "PUT", "/v1/apps/\(appID)/devices/d\(index)/activities/\(activityID)", key: deviceKey,
                    body: #"{"activity_type":"MatchAttributes","token":""# + token + #""}"#,
                    headers: ["Islet-Device-Secret": deviceSecrets[index] ?? ""])
            }
        }
        /// Waits until every push sent so far is answered: paced by delivery, no
        /// update is queued behind another (which would supersede it).
        func drain() throws {
            let deadline = Date().addingTimeInterval(120)
            while answered.load(ordering: .relaxed) < queued && Date() < deadline {
                try sampleIfDue()
                usleep(10_000)
            }
            guard answered.load(ordering: .relaxed) >= queued else {
                throw BenchHTTP.Failure(description: "\(queued - answered.load(ordering: .relaxed)) pushes were not answered")
            }
            try sampleIfDue()
        }
        for update in 1...updates {
            let answer = try http.request(
                "POST", "/v1/apps/\(appID)/activities/\(activityID)/update", key: serverKey,
                body: #"{"content_state":{"home":\#(update),"away":0}}"#)
            guard answer.status == 202 else {
                throw BenchHTTP.Failure(description: "update answered \(answer.status): \(String(decoding: answer.body, as: UTF8.self))")
            }
            queued += devices
            try drain()
        }
        let end = try http.request("POST", "/v1/apps/\(appID)/activities/\(activityID)/end", key: serverKey, body: "{}")
        guard end.status == 202 else { throw BenchHTTP.Failure(description: "end answered \(end.status)") }
        queued += devices
        try drain()
    }
    let size = sizes()
    samples.append((Date().timeIntervalSince(started), size.file + size.wal))
    // Once the retention and three purges (a minute apart) have passed, the
    // history is as large as it gets: the file and the WAL have grown to hold it.
    let window = minutes * 60 + 180
    let atWindow = samples.first { $0.seconds >= window }?.total ?? 0
    let after = samples.filter { $0.seconds >= window }.map(\.total)
    emit("retention_seconds=\(Int(minutes * 60))")
    emit("window_seconds=\(Int(window))")
    emit("activities=\(activity)")
    emit("pushes_answered=\(answered.load(ordering: .relaxed))")
    emit("size_at_window_mb=\(String(format: "%.2f", atWindow))")
    emit("size_max_after_window_mb=\(String(format: "%.2f", after.max() ?? 0))")
    emit("size_end_mb=\(String(format: "%.2f", size.file + size.wal))")
    await application.shutdown()
    await simulator.shutdown()
}
