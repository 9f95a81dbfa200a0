import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import IsletLog
import IsletServer
import IsletSync
import IsletTesting
import Simulators
import Testing

/// One answer of the API, its body parsed.
struct Reply: Sendable {
    let status: Int
    let headers: [String: String]
    let json: JSONValue

    subscript(key: String) -> JSONValue? { json[key] }

    /// The `field`s of a problem's `errors`.
    var errorFields: [String] {
        (json["errors"]?.arrayValue ?? []).compactMap { $0["field"]?.stringValue }
    }
}

/// An app created through the admin API, with its keys and signing key.
struct TestApp: Sendable {
    let id: String
    let serverKey: String
    let deviceKey: String
}

/// The device secrets a test's devices were answered, kept as an app keeps them:
/// each from the answer that carried it, sent with every later call for the device.
final class DeviceSecretKeeper: Sendable {
    private let secrets = Lock<[String: String]>([:])

    /// The secret kept for a device.
    subscript(app: TestApp, deviceID: String) -> String? {
        get { secrets.withLock { $0[app.id + "/" + deviceID] } }
        set { secrets.withLock { $0[app.id + "/" + deviceID] = newValue } }
    }
}

/// Islet on port 0 in a temporary folder, with two simulators over TLS (sandbox and
/// production) sharing one CA, and a manual clock shared by all three.
struct ServerHarness: Sendable {
    static let adminToken = "test-admin-token-0123456789"

    let application: Application
    let clock: ManualWallClock
    let sandbox: APNsSimulator
    let production: APNsSimulator
    /// The FCM simulator (HTTP/2 and TLS, under the same CA), when asked for.
    let fcm: FCMSimulator?
    let signingKey: P256.SigningKey
    let directory: URL
    /// The secret of every device the harness registered.
    let deviceSecrets = DeviceSecretKeeper()

    static func with(
        logLevel: LogLevel = .warning, logs: MemoryLogSink = MemoryLogSink(),
        configure: @Sendable (inout Configuration) -> Void = { _ in },
        simulators: @Sendable (inout APNsSimulatorOptions) -> Void = { _ in }, fcm withFCM: Bool = false,
        _ body: (ServerHarness) async throws -> Void
    ) async throws {
        try await withTemporaryDirectory { directory in try await TestPostgres.withSuiteDatabase { database in
            let clock = ManualWallClock(start: Date())
            let signingKey = try P256.SigningKey.generate()
            let authority = try LocalCertificateAuthority.generate(commonName: "Islet test CA")
            func simulator(_ environment: APNsEnvironment) throws -> APNsSimulator {
                var options = APNsSimulatorOptions()
                options.port = 0
                options.inspectPort = nil
                options.channelsPort = 0
                options.tls = TLSServerConfiguration(
                    certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM)
                options.engine.environment = environment
                options.engine.trustedKeys = [TrustedKey(keyID: "KEYID00001", teamID: "TEAMID0001", publicKey: signingKey.publicKey)]
                simulators(&options)
                let simulator = try APNsSimulator(options: options, clock: clock)
                try simulator.start()
                return simulator
            }
            let sandbox = try simulator(.sandbox)
            let production = try simulator(.production)
            var fcm: FCMSimulator?
            if withFCM {
                fcm = try FCMSimulator(
                    tls: TLSServerConfiguration(
                        certificateChainPEM: authority.serverCertificateChainPEM, privateKeyPEM: authority.serverPrivateKeyPEM),
                    clock: clock)
                try fcm?.start()
            }
            let caFile = directory.appendingPathComponent("ca.pem")
            try authority.caCertificatePEM.write(to: caFile, atomically: true, encoding: .utf8)
            var config = Configuration()
            config.port = 0
            config.dataDirectory = directory.path
            config.databasePath = database
            // Dozens of harnesses run at once, each its own pool: a few connections
            // each keep the whole suite within the test server's connections.
            config.databasePoolSize = 3
            config.secretsKey = database.map { _ in TestPostgres.secretsKey }
            config.adminToken = adminToken
            config.apnsSandboxURL = "https://127.0.0.1:\(sandbox.port)"
            config.apnsProductionURL = "https://127.0.0.1:\(production.port)"
            config.apnsCAFile = caFile.path
            config.apnsChannelsSandboxURL = "https://127.0.0.1:\(sandbox.channelsPort ?? 0)"
            config.apnsChannelsProductionURL = "https://127.0.0.1:\(production.channelsPort ?? 0)"
            if let fcm {
                config.fcmURL = fcm.url
                config.fcmCAFile = caFile.path
                // Its token URI is on 127.0.0.1.
                config.fcmAllowPrivate = true
            }
            configure(&config)
            // Opening the store migrates it and starting prepares each service (the
            // delivery worker puts back what an earlier run left): blocking work, on a
            // thread of its own rather than one of the concurrency pool's.
            let application = try await runBlocking { [config] in
                try buildApplication(config, logger: Logger(level: logLevel, format: .logfmt, sink: logs), clock: clock)
            }
            do {
                _ = try await runBlocking { try application.start() }
            } catch {
                await application.shutdown()
                await sandbox.shutdown()
                await production.shutdown()
                await fcm?.shutdown()
                throw error
            }
            let harness = ServerHarness(
                application: application, clock: clock, sandbox: sandbox, production: production, fcm: fcm,
                signingKey: signingKey, directory: directory)
            do {
                try await body(harness)
            } catch {
                await harness.stop()
                throw error
            }
            await harness.stop()
        } }
    }

    /// The node id the server runs as (on every metric).
    var nodeID: String { application.configuration.resolvedNodeID }

    func stop() async {
        await application.shutdown()
        await sandbox.shutdown()
        await production.shutdown()
        await fcm?.shutdown()
    }

    // MARK: - Requests

    func call(
        _ method: String, _ path: String, key: String?, body: String? = nil, headers: [String: String] = [:]
    ) async throws -> Reply {
        var all = headers
        if let key { all["Authorization"] = "Bearer \(key)" }
        if body != nil { all["Content-Type"] = "application/json" }
        let response = try await httpRequest(
            port: application.port, method: method, path: path, headers: all, body: body.map { Data($0.utf8) })
        let json = response.body.isEmpty ? JSONValue.null : ((try? JSONValue(parsing: response.body)) ?? .string(response.text))
        return Reply(status: response.status, headers: response.headers, json: json)
    }

    func call(_ method: String, _ path: String, key: String?, json: JSONValue, headers: [String: String] = [:]) async throws -> Reply {
        try await call(method, path, key: key, body: json.jsonText, headers: headers)
    }

    /// Creates an app with the harness's signing key.
    func createApp(name: String = "Deliveries", bundleID: String = "com.example.deliveries") async throws -> TestApp {
        let reply = try await call("POST", "/v1/apps", key: Self.adminToken, json: [
            "name": .string(name), "bundle_id": .string(bundleID),
            "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(signingKey.pemRepresentation)],
        ])
        try #require(reply.status == 201, "\(reply.json)")
        return TestApp(
            id: try #require(reply["id"]?.stringValue), serverKey: try #require(reply["server_key"]?.stringValue),
            deviceKey: try #require(reply["device_key"]?.stringValue))
    }

    /// Registers a device (and optionally its device token, user id, tags).
    @discardableResult
    func registerDevice(
        _ app: TestApp, _ deviceID: String, environment: APNsEnvironment = .sandbox, apnsToken: String? = nil,
        userID: String? = nil, tags: [String]? = nil
    ) async throws -> Reply {
        var body: [String: JSONValue] = ["platform": "ios", "environment": .string(environment.rawValue)]
        if let apnsToken { body["apns_token"] = .string(apnsToken) }
        if let userID { body["user_id"] = .string(userID) }
        if let tags { body["tags"] = .array(tags.map(JSONValue.string)) }
        let reply = try await call(
            "PUT", "/v1/apps/\(app.id)/devices/\(deviceID)", key: app.deviceKey, json: .object(body),
            headers: secretHeader(app, deviceID))
        try #require([200, 201].contains(reply.status), "\(reply.json)")
        if let secret = reply["device_secret"]?.stringValue { deviceSecrets[app, deviceID] = secret }
        return reply
    }

    /// The `Islet-Device-Secret` header with the device's kept secret (none when
    /// the harness registered no such device).
    func secretHeader(_ app: TestApp, _ deviceID: String) -> [String: String] {
        deviceSecrets[app, deviceID].map { ["Islet-Device-Secret": $0] } ?? [:]
    }

    /// Registers a device with a fresh push-to-start token for `activityType`;
    /// answers the token.
    @discardableResult
    func registerStartable(
        _ app: TestApp, _ deviceID: String, activityType: String = "DeliveryAttributes", userID: String? = nil,
        environment: APNsEnvironment = .sandbox, token: String? = nil
    ) async throws -> String {
        try await registerDevice(app, deviceID, environment: environment, userID: userID)
        let token = token ?? Self.token()
        let reply = try await call(
            "PUT", "/v1/apps/\(app.id)/devices/\(deviceID)/push-to-start/\(activityType)", key: app.deviceKey,
            json: ["token": .string(token)], headers: secretHeader(app, deviceID))
        try #require([200, 201].contains(reply.status), "\(reply.json)")
        return token
    }

    /// Starts an activity on `audience`.
    func start(
        _ app: TestApp, _ activityID: String, audience: JSONValue, activityType: String = "DeliveryAttributes",
        headers: [String: String] = [:]
    ) async throws -> Reply {
        try await call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
            "activity_id": .string(activityID), "activity_type": .string(activityType),
            "attributes": ["order": .string(activityID)], "content_state": ["status": "preparing", "eta": 25],
            "alert": ["title": "Your order", "body": "Preparing"], "audience": audience,
        ], headers: headers)
    }

    func update(_ app: TestApp, _ activityID: String, state: JSONValue, headers: [String: String] = [:]) async throws -> Reply {
        try await call(
            "POST", "/v1/apps/\(app.id)/activities/\(activityID)/update", key: app.serverKey,
            json: ["content_state": state], headers: headers)
    }

    /// Registers `token` as the device's update token for an activity.
    @discardableResult
    func registerUpdateToken(
        _ app: TestApp, _ deviceID: String, _ activityID: String, token: String, activityType: String = "DeliveryAttributes"
    ) async throws -> Reply {
        try await call(
            "PUT", "/v1/apps/\(app.id)/devices/\(deviceID)/activities/\(activityID)", key: app.deviceKey,
            json: ["activity_type": .string(activityType), "token": .string(token)], headers: secretHeader(app, deviceID))
    }

    /// The pushes of an activity, once none is queued any more (or after 60 s).
    func settledPushes(_ app: TestApp, _ activityID: String, count: Int? = nil) async throws -> [JSONValue] {
        let deadline = Date().addingTimeInterval(60 * Double(TestTime.scale))
        while true {
            let reply = try await call("GET", "/v1/apps/\(app.id)/activities/\(activityID)/pushes", key: app.serverKey)
            let items = reply["items"]?.arrayValue ?? []
            let settled = items.allSatisfy { $0["status"]?.stringValue != "queued" }
            if (settled && (count == nil || items.count >= count!)) || Date() > deadline { return items }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    /// Waits until `condition` holds (or 60 s pass); answers whether it held.
    func eventually(_ condition: () async throws -> Bool) async throws -> Bool {
        let deadline = Date().addingTimeInterval(60 * Double(TestTime.scale))
        while Date() < deadline {
            if try await condition() { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return try await condition()
    }

    /// The update token the simulated device minted for the activity Islet started.
    func simulatedUpdateToken(_ simulator: APNsSimulator? = nil, activityID: String) async throws -> String {
        let simulator = simulator ?? sandbox
        var token: String?
        _ = try await eventually {
            token = simulator.engine.activities().first {
                $0.attributes?["islet_activity_id"]?.stringValue == activityID
            }?.updateToken
            return token != nil
        }
        return try #require(token, "the simulator started no activity for \(activityID)")
    }

    static func token() -> String {
        // A generator with state, not the zero-sized SystemRandomNumberGenerator: a
        // closure's inout access to a value of no size hands ThreadSanitizer an
        // address it has no shadow for, and the sanitizer itself crashed on it.
        var random = SeededRandomSource(seed: UInt64.random(in: .min ... .max))
        return PushToken.make(byteCount: 32, using: &random)
    }
}
