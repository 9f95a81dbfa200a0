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
        appKeyCacheSeconds: Double = 5, _ body: (Application, Application) async throws -> Void
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
                    let application = try buildApplication(config, logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()))
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
}
