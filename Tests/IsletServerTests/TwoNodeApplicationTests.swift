import Foundation
import IsletCore
import IsletLog
import IsletServer
import IsletTesting
import Testing

/// Two Islet applications in one process on one PostgreSQL schema: what one node
/// changes, the other sees at once.
@Suite("Two nodes on one database", .requires(.postgres))
struct TwoNodeApplicationTests {
    static let adminToken = "two-node-admin-token-0123456789"

    /// Runs `body` with two started applications, `node-a` and `node-b`, sharing a
    /// fresh schema; both are shut down afterwards.
    func withTwoNodes(
        appKeyCacheSeconds: Double = 5, clock: (any WallClock)? = nil,
        _ body: (Application, Application) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { dir in
            try await TestPostgres.withSchema { url in
                func node(_ id: String) throws -> Application {
                    var config = Configuration()
                    config.port = 0
                    config.dataDirectory = dir.appendingPathComponent(id).path
                    config.databasePath = url
                    config.secretsKey = TestPostgres.secretsKey
                    config.databasePoolSize = 2
                    config.nodeID = id
                    config.adminToken = Self.adminToken
                    config.appKeyCacheSeconds = appKeyCacheSeconds
                    let logger = Logger(level: .error, format: .logfmt, sink: MemoryLogSink())
                    let application = try clock.map { try buildApplication(config, logger: logger, clock: $0) }
                        ?? buildApplication(config, logger: logger)
                    try application.start()
                    return application
                }
                let a = try node("node-a")
                let b: Application
                do { b = try node("node-b") } catch {
                    await a.shutdown()
                    throw error
                }
                do {
                    try await body(a, b)
                } catch {
                    await a.shutdown()
                    await b.shutdown()
                    throw error
                }
                await a.shutdown()
                await b.shutdown()
            }
        }
    }

    func call(
        _ node: Application, _ method: String, _ path: String, key: String, body: JSONValue? = nil, secret: String? = nil
    ) async throws -> (Int, JSONValue) {
        var headers = ["Authorization": "Bearer \(key)"]
        if let secret { headers["Islet-Device-Secret"] = secret }
        if body != nil { headers["Content-Type"] = "application/json" }
        let response = try await httpRequest(
            port: node.port, method: method, path: path, headers: headers, body: body.map { Data($0.jsonText.utf8) })
        return (response.status, (try? JSONValue(parsing: response.body)) ?? .null)
    }

    @Test func aRotatedKeyStopsWorkingOnTheOtherNodeAtOnce() async throws {
        // The cache would keep the old key for ten minutes: only the notice can end it
        // within the test.
        try await withTwoNodes(appKeyCacheSeconds: 600) { a, b in
            let (created, app) = try await call(a, "POST", "/v1/apps", key: Self.adminToken, body: ["name": "N", "bundle_id": "com.example.n"])
            #expect(created == 201)
            let appID = try #require(app["id"]?.stringValue)
            let oldKey = try #require(app["device_key"]?.stringValue)
            let device = "/v1/apps/\(appID)/devices/phone-1"
            let registration: JSONValue = ["platform": "ios", "environment": "sandbox"]
            // Node b reads the key and keeps the app in its cache.
            let (registered, answer) = try await call(b, "PUT", device, key: oldKey, body: registration)
            #expect(registered == 201)
            let secret = answer["device_secret"]?.stringValue
            let (rotated, keys) = try await call(a, "POST", "/v1/apps/\(appID)/keys/rotate", key: Self.adminToken)
            #expect(rotated == 200)
            let newKey = try #require(keys["device_key"]?.stringValue)
            // Told through the database, node b drops its cache long before the ten
            // minutes it would otherwise keep the old key.
            #expect(await eventually(within: .seconds(60)) {
                (try? await call(b, "PUT", device, key: oldKey, body: registration, secret: secret).0) == 401
            })
            #expect(try await call(b, "PUT", device, key: newKey, body: registration, secret: secret).0 < 300)
        }
    }

    @Test func eachNodeNamesItselfAndListsTheOther() async throws {
        try await withTwoNodes { a, b in
            let health = try await httpRequest(port: b.port, path: "/healthz")
            let json = try JSONValue(parsing: health.body)
            #expect(json["node_id"]?.stringValue == "node-b")
            #expect(json["backend"]?.stringValue == "postgresql")
            #expect(await eventually {
                let listed = try? await call(a, "GET", "/v1/nodes", key: Self.adminToken).1["items"]?.arrayValue
                return listed?.compactMap { $0["node_id"]?.stringValue } == ["node-a", "node-b"]
            })
            let items = try #require(try await call(b, "GET", "/v1/nodes", key: Self.adminToken).1["items"]?.arrayValue)
            let dates = ISO8601DateFormatter()
            dates.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
            for item in items {
                #expect(item["claimed_pushes"]?.int64Value == 0)
                #expect(item["started_at"]?.stringValue.flatMap { dates.date(from: $0) } != nil)
                #expect(item["last_heartbeat_at"]?.stringValue.flatMap { dates.date(from: $0) } != nil)
            }
            // Not for an app's keys: the admin token only.
            #expect(try await call(a, "GET", "/v1/nodes", key: "not-the-admin-token-000").0 == 401)
            let metrics = try await httpRequest(port: b.port, path: "/metrics")
            #expect(String(decoding: metrics.body, as: UTF8.self).contains(#"islet_push_queue_depth{node="node-b"} 0"#))
        }
    }

    @Test func anAppsRateLimitHoldsForTheClusterNotPerNode() async throws {
        // One clock for both nodes, moved only by the test: what each admits is
        // exact, whatever the machine's load.
        let clock = ManualWallClock(start: Date())
        try await withTwoNodes(clock: clock) { a, b in
            /// An app with `limits`, set before either node has read it (a node that
            /// read it before a change may go on with the old figures until the
            /// change's notice reaches it).
            func app(_ limits: JSONValue) async throws -> (id: String, serverKey: String) {
                let (_, app) = try await call(a, "POST", "/v1/apps", key: Self.adminToken, body: ["name": "N", "bundle_id": "com.example.n"])
                let appID = try #require(app["id"]?.stringValue)
                let (patched, _) = try await call(a, "PATCH", "/v1/apps/\(appID)", key: Self.adminToken, body: ["rate_limits": limits])
                #expect(patched == 200)
                return (appID, try #require(app["server_key"]?.stringValue))
            }
            /// Sends `count` cancellations of schedules that do not exist (cheap
            /// requests of the `sends` family), alternating between the nodes;
            /// answers how many each node admitted (anything but 429).
            func send(_ count: Int, _ app: (id: String, serverKey: String)) async throws -> (a: Int, b: Int) {
                var admitted = (a: 0, b: 0)
                for n in 0..<count {
                    let node = n % 2 == 0 ? a : b
                    let (status, _) = try await call(node, "DELETE", "/v1/apps/\(app.id)/schedules/none-\(n)", key: app.serverKey)
                    #expect(status == 404 || status == 429)
                    if status != 429 {
                        if n % 2 == 0 { admitted.a += 1 } else { admitted.b += 1 }
                    }
                }
                return admitted
            }

            // 10 a second, 20 at once: a node taking one token at a time.
            let slow = try await app(["sends_per_second": 10, "sends_burst": 20])
            var admitted = try await send(40, slow)
            #expect(admitted.a + admitted.b == 20, "\(admitted)")
            #expect(admitted.a == 10 && admitted.b == 10)
            clock.advance(by: 1)
            admitted = try await send(40, slow)
            #expect(admitted.a + admitted.b == 10, "\(admitted)")

            // 400 a second, 400 at once: nodes take batches of 20; the cluster admits
            // no more than the limit, and at most a batch per node less.
            let fast = try await app(["sends_per_second": 400, "sends_burst": 400])
            admitted = try await send(600, fast)
            let total = admitted.a + admitted.b
            #expect(total <= 400, "\(admitted)")
            #expect(total >= 360, "\(admitted)")
            #expect(admitted.a >= 160 && admitted.b >= 160, "\(admitted)")
        }
    }
}
