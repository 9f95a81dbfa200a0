import Foundation
import IsletCore
import IsletCrypto
import IsletSync
import IsletTesting
import Simulators
import Testing

/// Several `islet serve` processes on one PostgreSQL schema, sending to one
/// simulator: a node killed mid fan-out, the same `Idempotency-Key` at two nodes at
/// once, one activity updated through two nodes, a node stopped with SIGTERM while it
/// holds pushes.
@Suite("Several islet serve nodes on one database", .requires(.postgres, .processes), .serialized)
struct MultiNodeTests {
    /// The lease every node runs with: short, so that a dead node's pushes are taken
    /// over soon.
    static let lease = 3

    @Test func aNodeKilledMidFanOutLosesNothingAndOnlyItsPushesGoTwice() async throws {
        // Open until node-2 holds pushes the simulator has seen; then closed while
        // node-2 is killed, so that it dies holding them however slow the machine.
        let gate = AnswerGate(closed: false)
        try await Cluster.run(latency: .milliseconds(400), gate: gate) { cluster in
            let nodes = try await cluster.launch(["node-1", "node-2", "node-3"], ["--delivery-max-in-flight", "1000"])
            let (first, second) = (nodes[0], nodes[1])
            let app = try await cluster.createApp(through: first)
            let devices = 10_000
            let tokens = (0..<devices).map { _ in MultiNodeTests.token() }
            for token in tokens { try cluster.simulator.engine.registerToken(token, kind: .liveActivityUpdate) }
            let registering = ContinuousClock.now
            try await cluster.registerUpdateTokens(tokens, app: app, activityID: "final", across: nodes)
            print("MultiNodeTests: \(devices) devices registered in \(ContinuousClock.now - registering)")

            let update = try await first.call(
                "POST", "/v1/apps/\(app.id)/activities/final/update", app.serverKey, ["content_state": ["home": 1, "away": 0]])
            #expect(update.status == 202)
            #expect(update.json["targets"]?.int64Value == Int64(devices))
            // Killed once it holds pushes of which the simulator has seen some: those
            // were sent and are not yet answered (the simulator answers late).
            let inFlight = try await eventually(within: .seconds(60)) {
                gate.close()
                let claimed = try await cluster.heldIDs(by: "node-2")
                let received = cluster.simulator.engine.pushes().compactMap { $0.headers["apns-id"] }
                if received.contains(where: { claimed.contains($0) }) { return true }
                gate.open()
                return false
            }
            #expect(inFlight, "node-2 never held a push the simulator had received")
            let nodesSeen = try await first.call("GET", "/v1/nodes", ServerHarness.adminToken)
            let claimedByTwo = nodesSeen.json["items"]?.arrayValue?.first { $0["node_id"] == "node-2" }?["claimed_pushes"]
            #expect((claimedByTwo?.int64Value ?? 0) > 0, "GET /v1/nodes: \(nodesSeen.json.jsonText)")
            // What node-2 holds just before the kill and just after: on a slow
            // machine the kill and the look after it can outlast the lease, and the
            // survivors then hold what node-2 died holding.
            let heldBefore = try await cluster.heldIDs(by: "node-2")
            try await second.kill()
            let killed = ContinuousClock.now
            let heldAtDeath = heldBefore.union(try await cluster.heldIDs(by: "node-2"))
            #expect(!heldAtDeath.isEmpty)
            gate.open()

            let finished = await eventually(within: .seconds(120)) {
                Set(cluster.simulator.engine.pushes().compactMap(\.token)).count == devices
            }
            let elapsed = ContinuousClock.now - killed
            print("MultiNodeTests: the survivors finished \(elapsed) after the kill; node-2 held \(heldAtDeath.count) pushes")
            #expect(finished)
            #expect(elapsed < .seconds(MultiNodeTests.lease + 20), "the survivors finished \(elapsed) after the kill")
            #expect(await eventually { (try? await cluster.sentCount()) == devices })

            let received = cluster.simulator.engine.pushes()
            let recorded = try await cluster.recordedIDs()
            #expect(Set(received.compactMap(\.token)) == Set(tokens))
            #expect(received.allSatisfy { $0.answer.status == 200 })
            var byToken: [String: [PushRecord]] = [:]
            for push in received { byToken[push.token ?? "", default: []].append(push) }
            let twice = byToken.filter { $0.value.count > 1 }
            print("MultiNodeTests: \(twice.count) pushes reached the simulator twice")
            #expect(!twice.isEmpty, "no push node-2 had in flight was sent again")
            for (token, pushes) in byToken {
                let ids = Set(pushes.compactMap { $0.headers["apns-id"] })
                // Every attempt carries the apns-id Islet recorded for the push.
                #expect(ids == [recorded[token] ?? "none"], "\(pushes.count) pushes to one token, apns-ids \(ids)")
                if pushes.count > 1 {
                    #expect(heldAtDeath.contains(ids.first ?? ""), "a push sent twice that node-2 did not hold")
                    #expect(pushes.count == 2)
                }
            }
        }
    }

    @Test func oneIdempotencyKeyAtTwoNodesAtOnceQueuesOnce() async throws {
        try await Cluster.run(latency: .milliseconds(5)) { cluster in
            let nodes = try await cluster.launch(["node-a", "node-b"])
            let app = try await cluster.createApp(through: nodes[0])
            let deviceToken = MultiNodeTests.token()
            let updateToken = MultiNodeTests.token()
            let device = try await nodes[1].call("PUT", "/v1/apps/\(app.id)/devices/phone", app.deviceKey, [
                "platform": "ios", "environment": "sandbox", "apns_token": .string(deviceToken),
            ])
            #expect(device.status == 201)
            let secret = try #require(device.json["device_secret"]?.stringValue)
            let activity = try await nodes[0].call("PUT", "/v1/apps/\(app.id)/devices/phone/activities/board", app.deviceKey, [
                "activity_type": "BoardAttributes", "token": .string(updateToken),
            ], headers: ["Islet-Device-Secret": secret])
            #expect(activity.status == 201)
            try cluster.simulator.engine.registerToken(updateToken, kind: .liveActivityUpdate)

            let rounds = 50
            for round in 0..<rounds {
                // Even rounds an alert (no row to lock), odd ones an update of one
                // activity (its row locked): the two paths a key can race on.
                let path: String
                let body: JSONValue
                if round.isMultiple(of: 2) {
                    path = "/v1/apps/\(app.id)/notifications"
                    body = ["audience": ["device_ids": ["phone"]], "alert": ["title": .string("round \(round)"), "body": "b"]]
                } else {
                    path = "/v1/apps/\(app.id)/activities/board/update"
                    body = ["content_state": ["round": .integer(Int64(round))]]
                }
                let request = SimultaneousRequest(
                    method: "POST", path: path,
                    headers: ["Authorization": "Bearer \(app.serverKey)", "Idempotency-Key": "round-\(round)-\(UUID())"],
                    body: body)
                let answers = try await SimultaneousRequest.atOnce(request, to: nodes.map(\.port))
                #expect(answers[0].status == 202 && answers[1].status == 202, "round \(round): \(answers.map(\.status))")
                #expect(try JSONValue(parsing: answers[0].body) == JSONValue(parsing: answers[1].body), "round \(round): \(answers[0].text) and \(answers[1].text)")
                let replayed = answers.filter { $0.headers["idempotent-replayed"] == "true" }
                #expect(replayed.count == 1, "round \(round): \(replayed.count) answers marked replayed")
                // Each push arrives before the next round, so that no update supersedes
                // another still queued.
                let arrived = await eventually {
                    cluster.simulator.engine.pushes().contains { MultiNodeTests.round(of: $0) == round }
                }
                #expect(arrived, "round \(round): nothing reached the simulator")
            }
            #expect(await eventually { (try? await cluster.sentCount()) == rounds })
            // One send per round: the replayed request queued nothing.
            #expect(try await cluster.psql("SELECT count(*) FROM sends") == "\(rounds)")
            let received = cluster.simulator.engine.pushes()
            #expect(received.count == rounds)
            for round in 0..<rounds {
                let count = received.filter { MultiNodeTests.round(of: $0) == round }.count
                #expect(count == 1, "round \(round) reached the simulator \(count) times")
            }
        }
    }

    @Test func updatesThroughTwoNodesKeepTheirOrder() async throws {
        try await Cluster.run(latency: .milliseconds(50)) { cluster in
            let nodes = try await cluster.launch(["node-a", "node-b"])
            let app = try await cluster.createApp(through: nodes[0])
            let token = MultiNodeTests.token()
            let simulated = try cluster.simulator.engine.registerToken(token, kind: .liveActivityUpdate)
            try await cluster.registerUpdateTokens([token], app: app, activityID: "match", across: [nodes[1]])

            let updates = 20
            for index in 0..<updates {
                let node = nodes[index % 2]
                let answer = try await node.call(
                    "POST", "/v1/apps/\(app.id)/activities/match/update", app.serverKey,
                    ["content_state": ["n": .integer(Int64(index))]])
                #expect(answer.status == 202, "update \(index) through \(node.id): \(answer.text)")
            }
            let newest: JSONValue = ["n": .integer(Int64(updates - 1))]
            let activityID = try #require(simulated.activityID)
            let shown = await eventually { cluster.simulator.engine.activity(id: activityID)?.contentState == newest }
            #expect(shown, "the device shows \(cluster.simulator.engine.activity(id: activityID)?.contentState?.jsonText ?? "nothing")")
            // Settled: each update sent, or dropped because a newer one replaced it
            // while it was queued.
            #expect(await eventually { (try? await cluster.openCount()) == 0 })

            let received = cluster.simulator.engine.pushes().filter { $0.token == token }
            var stamps: [(n: Int64, timestamp: Int64)] = []
            for push in received {
                let aps = push.payload?["aps"]
                let n = try #require(aps?["content-state"]?["n"]?.int64Value)
                let timestamp = try #require(aps?["timestamp"]?.int64Value)
                stamps.append((n, timestamp))
            }
            #expect(Set(stamps.map(\.n)).count == stamps.count, "an update reached the device twice: \(stamps)")
            stamps.sort { $0.n < $1.n }
            print("MultiNodeTests: \(stamps.count) of \(updates) updates reached the device (the others were superseded while queued)")
            #expect(stamps.last?.n == Int64(updates - 1))
            for (earlier, later) in zip(stamps, stamps.dropFirst()) {
                #expect(later.timestamp > earlier.timestamp, "update \(later.n) is stamped \(later.timestamp), update \(earlier.n) \(earlier.timestamp)")
            }
            let device = cluster.simulator.engine.activity(id: activityID)
            #expect(device?.lastTimestamp == stamps.last?.timestamp)
            #expect(try await cluster.psql(
                "SELECT count(*) FROM pushes WHERE NOT (status = 'sent' OR (status = 'dropped' AND reason = 'Superseded'))") == "0")
            #expect(try await cluster.sentCount() == stamps.count)
        }
    }

    @Test func aNodeStoppedWithSIGTERMHandsBackWhatItHolds() async throws {
        try await Cluster.run(latency: .seconds(1)) { cluster in
            let grace = ["--shutdown-grace-seconds", "0"]
            let nodes = try await cluster.launch(["node-a", "node-b"], grace + ["--delivery-max-in-flight", "200"])
            let (survivor, stopping) = (nodes[0], nodes[1])
            let app = try await cluster.createApp(through: survivor)
            let devices = 1_000
            let tokens = (0..<devices).map { _ in MultiNodeTests.token() }
            for token in tokens { try cluster.simulator.engine.registerToken(token, kind: .liveActivityUpdate) }
            try await cluster.registerUpdateTokens(tokens, app: app, activityID: "final", across: nodes)

            let update = try await survivor.call(
                "POST", "/v1/apps/\(app.id)/activities/final/update", app.serverKey, ["content_state": ["home": 2, "away": 1]])
            #expect(update.json["targets"]?.int64Value == Int64(devices))
            #expect(await eventually { ((try? await cluster.heldIDs(by: "node-b"))?.count ?? 0) > 0 }, "node-b never claimed a push")
            let stopped = ContinuousClock.now
            try await stopping.terminate()
            print("MultiNodeTests: node-b stopped \(ContinuousClock.now - stopped) after SIGTERM")
            #expect(stopping.process.termination == .exit(0))
            #expect(stopping.output.value.contains("handed back pushes still in flight"), "\(stopping.output.value)")
            #expect(try await cluster.heldIDs(by: "node-b").isEmpty)

            #expect(await eventually(within: .seconds(120)) {
                Set(cluster.simulator.engine.pushes().compactMap(\.token)).count == devices
            })
            print("MultiNodeTests: node-a sent the rest \(ContinuousClock.now - stopped) after SIGTERM")
            #expect(await eventually { (try? await cluster.sentCount()) == devices })
            let recorded = try await cluster.recordedIDs()
            for push in cluster.simulator.engine.pushes() {
                #expect(push.headers["apns-id"] == recorded[push.token ?? ""], "a push sent again with another apns-id")
            }
        }
    }

    // MARK: - Helpers

    static func token() -> String { ServerHarness.token() }

    /// The round a push of the idempotency test belongs to: an alert's title or an
    /// update's content state says.
    static func round(of push: PushRecord) -> Int? {
        let aps = push.payload?["aps"]
        if let title = aps?["alert"]?["title"]?.stringValue, title.hasPrefix("round ") {
            return Int(title.dropFirst("round ".count))
        }
        return aps?["content-state"]?["round"]?.int64Value.map(Int.init)
    }
}

/// An app as created: its id and keys.
struct ClusterApp: Sendable {
    let id: String
    let serverKey: String
    let deviceKey: String
}

/// One `islet serve` child process.
final class ServeNode: Sendable {
    let id: String
    let process: Subprocess
    let port: Int
    let output: ServeProcessTests.OutputCollector

    init(id: String, process: Subprocess, port: Int, output: ServeProcessTests.OutputCollector) {
        self.id = id
        self.process = process
        self.port = port
        self.output = output
    }

    /// One request with a key; the answer's body parsed (`null` when it is not JSON).
    func call(
        _ method: String, _ path: String, _ key: String, _ body: JSONValue? = nil, headers extra: [String: String] = [:]
    ) async throws -> (status: Int, json: JSONValue, text: String) {
        var headers = extra
        headers["Authorization"] = "Bearer \(key)"
        if body != nil { headers["Content-Type"] = "application/json" }
        let response = try await httpRequest(
            port: port, method: method, path: path, headers: headers, body: body.map { Data($0.jsonText.utf8) })
        return (response.status, (try? JSONValue(parsing: response.body)) ?? .null, response.text)
    }

    /// SIGKILL, and reaped.
    func kill() async throws {
        process.send(SIGKILL)
        try await waitForExit()
    }

    /// SIGTERM, and waits for the exit.
    func terminate() async throws {
        process.terminate()
        try await waitForExit()
    }

    /// Sleeps between looks rather than blocking a thread of the concurrency pool,
    /// on which the other node's and the tests' own servers answer.
    private func waitForExit() async throws {
        guard await process.exited(within: .seconds(60)) else { throw RawHTTPError("\(id) did not exit") }
    }
}

/// A request sent the same way to several nodes.
struct SimultaneousRequest: Sendable {
    let method: String
    let path: String
    let headers: [String: String]
    let body: JSONValue

    /// Sends `request` to every port at the same moment: each on a connection
    /// opened beforehand, written from a thread of its own once all are open.
    static func atOnce(_ request: SimultaneousRequest, to ports: [Int]) async throws -> [RawHTTPResponse] {
        let connections = try ports.map { try RawHTTPConnection(port: $0) }
        let body = Data(request.body.jsonText.utf8)
        var head = "\(request.method) \(request.path) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n"
        head += "Content-Type: application/json\r\nContent-Length: \(body.count)\r\n"
        for (name, value) in request.headers { head += "\(name): \(value)\r\n" }
        let message = Data((head + "\r\n").utf8) + body
        return try await withThrowingTaskGroup(of: (Int, RawHTTPResponse).self) { group in
            for (index, connection) in connections.enumerated() {
                group.addTask {
                    try await connection.async { connection in
                        try connection.write(message)
                        return (index, try connection.readResponse())
                    }
                }
            }
            var answers: [RawHTTPResponse?] = Array(repeating: nil, count: ports.count)
            for try await (index, answer) in group { answers[index] = answer }
            return answers.compactMap { $0 }
        }
    }
}

/// The nodes of one test, the simulator they send to and the schema they share.
/// Everything it starts is stopped when `run`'s body returns or throws.
final class Cluster: Sendable {
    let simulator: APNsSimulator
    let databaseURL: String
    let directory: URL
    let signingKey: P256.SigningKey
    private let caFile: URL
    private let nodes = Lock<[ServeNode]>([])
    private let started = Lock<[Subprocess]>([])

    private init(simulator: APNsSimulator, databaseURL: String, directory: URL, signingKey: P256.SigningKey) throws {
        self.simulator = simulator
        self.databaseURL = databaseURL
        self.directory = directory
        self.signingKey = signingKey
        caFile = directory.appendingPathComponent("ca.pem")
        guard let pem = simulator.caCertificatePEM else { throw RawHTTPError("the simulator made no CA") }
        try pem.write(to: caFile, atomically: true, encoding: .utf8)
    }

    /// Runs `body` with a simulator answering after `latency` and a fresh schema,
    /// then kills every node it started and stops the simulator.
    static func run(latency: Duration, gate: AnswerGate? = nil, _ body: (Cluster) async throws -> Void) async throws {
        let executable = builtProductPath("islet")
        try #require(FileManager.default.isExecutableFile(atPath: executable), "islet not built at \(executable)")
        try await withTemporaryDirectory { dir in try await TestPostgres.withSchema { url in
            let signingKey = try P256.SigningKey.generate()
            var options = APNsSimulatorOptions()
            options.port = 0
            options.inspectPort = nil
            options.latency = latency
            options.answerGate = gate
            options.engine = SimulatorConfiguration(
                trustedKeys: [TrustedKey(keyID: "KEYID00001", teamID: "TEAMID0001", publicKey: signingKey.publicKey)],
                pushHistoryLimit: 100_000)
            let simulator = try APNsSimulator(options: options)
            try simulator.start()
            let cluster: Cluster
            do {
                cluster = try Cluster(simulator: simulator, databaseURL: url, directory: dir, signingKey: signingKey)
            } catch {
                await simulator.shutdown()
                throw error
            }
            do {
                try await body(cluster)
            } catch {
                await cluster.stop()
                throw error
            }
            await cluster.stop()
        } }
    }

    /// Kills (and reaps) every process started, then stops the simulator.
    private func stop() async {
        for process in started.withLock({ $0 }) { process.stop() }
        await simulator.shutdown()
    }

    /// Starts one node per id, at once, each with `extra` arguments; answers them
    /// once each listens.
    func launch(_ ids: [String], _ extra: [String] = []) async throws -> [ServeNode] {
        try await withThrowingTaskGroup(of: ServeNode.self) { group in
            for id in ids { group.addTask { try await self.launch(id, extra) } }
            var nodes: [ServeNode] = []
            for try await node in group { nodes.append(node) }
            return ids.map { id in nodes.first { $0.id == id }! }
        }
    }

    /// Starts the node `id` with `extra` arguments; answers it once it listens.
    func launch(_ id: String, _ extra: [String] = []) async throws -> ServeNode {
        let process = try Subprocess(builtProductPath("islet"), [
            "serve", "--port", "0", "--log-format", "json", "--node-id", id, "--database", databaseURL, "--secrets-key", TestPostgres.secretsKey,
            "--data-dir", directory.appendingPathComponent(id).path, "--admin-token", ServerHarness.adminToken,
            "--apns-sandbox-url", "https://127.0.0.1:\(simulator.port)",
            "--apns-production-url", "https://127.0.0.1:\(simulator.port)", "--apns-ca-file", caFile.path,
            "--push-lease-seconds", "\(MultiNodeTests.lease)",
        ] + extra, standardError: .collect)
        let output = ServeProcessTests.OutputCollector(standardErrorOf: process)
        started.withLock { $0.append(process) }
        var port: Int?
        _ = await eventually(within: .seconds(60)) {
            port = output.value.split(separator: "\n").lazy.compactMap { line -> Int? in
                guard let object = try? JSONValue(parsing: Data(line.utf8)), object["msg"] == "listening",
                    let url = object["url"]?.stringValue
                else { return nil }
                return Int(url.split(separator: ":").last ?? "")
            }.first
            return port != nil || !process.isRunning
        }
        guard let port else { throw RawHTTPError("\(id) did not listen: \(output.value)") }
        let node = ServeNode(id: id, process: process, port: port, output: output)
        nodes.withLock { $0.append(node) }
        return node
    }

    /// Creates an app whose key the simulator trusts.
    func createApp(through node: ServeNode) async throws -> ClusterApp {
        let app = try await node.call("POST", "/v1/apps", ServerHarness.adminToken, [
            "name": "Fans", "bundle_id": "com.example.fans",
            "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(signingKey.pemRepresentation)],
        ])
        return ClusterApp(
            id: try #require(app.json["id"]?.stringValue), serverKey: try #require(app.json["server_key"]?.stringValue),
            deviceKey: try #require(app.json["device_key"]?.stringValue))
    }

    /// Registers one device per token (`phone-<index>`) holding the token as its
    /// update token of `activityID`: through every node in `nodes`, four
    /// keep-alive connections each, at once.
    func registerUpdateTokens(_ tokens: [String], app: ClusterApp, activityID: String, across nodes: [ServeNode]) async throws {
        let workers = nodes.flatMap { node in Array(repeating: node.port, count: 4) }
        let shared = tokens
        // Set when a worker fails, so that the others stop too rather than finish.
        let failed = Lock(false)
        try await withThrowingTaskGroup(of: Void.self) { group in
            for (worker, port) in workers.enumerated() {
                group.addTask {
                    try await runBlocking {
                        let client = KeepAliveClient(port: port, key: app.deviceKey)
                        for index in stride(from: worker, to: shared.count, by: workers.count) {
                            if failed.withLock({ $0 }) { return }
                            let device = "/v1/apps/\(app.id)/devices/phone-\(index)"
                            do {
                                let registered = try client.put(device, ["platform": "ios", "environment": "sandbox"])
                                try client.put(
                                    device + "/activities/\(activityID)",
                                    ["activity_type": "MatchAttributes", "token": .string(shared[index])],
                                    headers: ["Islet-Device-Secret": registered["device_secret"]?.stringValue ?? ""])
                            } catch {
                                failed.withLock { $0 = true }
                                throw error
                            }
                        }
                    }
                }
            }
            try await group.waitForAll()
        }
    }

    /// Runs one statement on the test's schema.
    @discardableResult
    func psql(_ statement: String) async throws -> String { try await TestPostgres.psql(databaseURL, statement) }

    /// The `apns-id` Islet recorded for each token's push.
    func recordedIDs() async throws -> [String: String] {
        var ids: [String: String] = [:]
        for line in try await psql("SELECT token || ' ' || apns_id FROM pushes").split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2 { ids[String(parts[0])] = String(parts[1]) }
        }
        // A push of a send's window has no row: its id comes from the send and the
        // device.
        for line in try await psql(
            """
            SELECT i.update_token || ' ' || s.id || ' ' || i.device_id FROM sends s
            JOIN activity_instances i ON i.app_id = s.app_id AND i.activity_id = s.activity_id
            WHERE s.audience = 'copies' AND i.update_token IS NOT NULL
                AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id)
            """
        ).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 3, let send = Int64(parts[1]) {
                ids[String(parts[0])] = APNsMessageID.derived(sendID: send, deviceID: String(parts[2]))
            }
        }
        return ids
    }

    /// The `apns-id`s of the pushes `node` holds in flight: its rows, and the copies
    /// of the windows it holds.
    func heldIDs(by node: String) async throws -> Set<String> {
        var ids = Set(
            try await psql("SELECT apns_id FROM pushes WHERE claimed_by = '\(node)' AND status = 'sending'")
                .split(separator: "\n").map(String.init))
        for line in try await psql(
            """
            SELECT w.send_id || ' ' || i.device_id FROM send_windows w JOIN sends s ON s.id = w.send_id
            JOIN activity_instances i ON i.app_id = s.app_id AND i.activity_id = s.activity_id
                AND i.device_id > w.after_device AND i.device_id <= w.through_device
            WHERE w.claimed_by = '\(node)'
                AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id AND p.device_id = i.device_id)
            """
        ).split(separator: "\n") {
            let parts = line.split(separator: " ")
            if parts.count == 2, let send = Int64(parts[0]) {
                ids.insert(APNsMessageID.derived(sendID: send, deviceID: String(parts[1])))
            }
        }
        return ids
    }

    /// Pushes sent: rows, and what the sends' windows settled.
    func sentCount() async throws -> Int {
        Int(try await psql(
            "SELECT (SELECT count(*) FROM pushes WHERE status = 'sent') + (SELECT coalesce(sum(sent), 0) FROM sends)")) ?? -1
    }

    /// Rows queued or in flight, sends still open, and windows in flight.
    func openCount() async throws -> Int {
        Int(try await psql(
            """
            SELECT (SELECT count(*) FROM pushes WHERE status IN ('queued', 'sending'))
                + (SELECT count(*) FROM sends WHERE state IN ('queued', 'claimed')) + (SELECT count(*) FROM send_windows)
            """)) ?? -1
    }
}

/// Sends requests one after another on one kept-alive connection, opening another
/// when the server closes it.
final class KeepAliveClient {
    private let port: Int
    private let key: String
    private var connection: RawHTTPConnection?

    init(port: Int, key: String) {
        self.port = port
        self.key = key
    }

    /// A PUT that must answer 200 or 201; answers the answer's body. Sent again,
    /// once, on a fresh connection when the kept one fails (a PUT may be repeated).
    @discardableResult
    func put(_ path: String, _ body: JSONValue, headers: [String: String] = [:]) throws -> JSONValue {
        let data = Data(body.jsonText.utf8)
        let extra = headers.map { "\($0.key): \($0.value)\r\n" }.joined()
        let head = "PUT \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer \(key)\r\n" + extra
            + "Content-Type: application/json\r\nContent-Length: \(data.count)\r\n\r\n"
        var response: RawHTTPResponse
        do {
            response = try send(Data(head.utf8) + data)
        } catch {
            connection = nil
            response = try send(Data(head.utf8) + data)
        }
        if response.headers["connection"]?.lowercased() == "close" { connection = nil }
        guard response.status == 200 || response.status == 201 else {
            throw RawHTTPError("PUT \(path): \(response.status) \(response.text)")
        }
        return (try? JSONValue(parsing: response.body)) ?? .null
    }

    private func send(_ message: Data) throws -> RawHTTPResponse {
        let connection = try self.connection ?? RawHTTPConnection(port: port)
        self.connection = connection
        try connection.write(message)
        return try connection.readResponse()
    }
}
