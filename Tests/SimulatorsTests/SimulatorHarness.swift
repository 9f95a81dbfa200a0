import Foundation
import IsletCore
import IsletCrypto
import Simulators
import Testing

/// An engine on a manual clock and a seeded random source, with one trusted key and
/// helpers to build signed requests.
struct SimulatorHarness {
    static let keyID = "KEY1234567"
    static let teamID = "TEAM123456"
    static let liveActivityTopic = "com.example.app.push-type.liveactivity"
    static let appTopic = "com.example.app"

    let clock: ManualWallClock
    let key: P256.SigningKey
    let engine: SimulatorEngine
    /// A provider token issued when the harness was made.
    let providerToken: String

    init(
        environment: APNsEnvironment = .sandbox,
        faults: FaultInjection = .none,
        seed: UInt64 = 1,
        keyEnvironments: Set<APNsEnvironment>? = nil,
        pushHistoryLimit: Int = 100_000,
        budgets: (priority10: Int?, frequentPriority10: Int?, starts: Int?) = (nil, nil, nil),
        channelLimit: Int = 10_000, broadcastEnabled: Bool = true,
        observer: (@Sendable (PushRecord) -> Void)? = nil
    ) throws {
        let clock = ManualWallClock()
        let key = try P256.SigningKey.generate()
        self.clock = clock
        self.key = key
        var configuration = SimulatorConfiguration(
            environment: environment,
            trustedKeys: [TrustedKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey, environments: keyEnvironments)],
            faultInjection: faults,
            pushHistoryLimit: pushHistoryLimit)
        configuration.priority10BudgetPerHour = budgets.priority10
        configuration.frequentPriority10BudgetPerHour = budgets.frequentPriority10
        configuration.startBudgetPerHour = budgets.starts
        configuration.channelLimit = channelLimit
        configuration.broadcastEnabled = broadcastEnabled
        engine = SimulatorEngine(configuration: configuration, clock: clock, random: SeededRandomSource(seed: seed), observer: observer)
        providerToken = try Self.jwt(key: key, keyID: Self.keyID, teamID: Self.teamID, issuedAt: clock.now())
    }

    static func jwt(key: P256.SigningKey, keyID: String?, teamID: String?, issuedAt: Date?) throws -> String {
        var claims: [String: JWTValue] = [:]
        if let teamID { claims["iss"] = .string(teamID) }
        if let issuedAt { claims["iat"] = .integer(Int64(issuedAt.timeIntervalSince1970)) }
        return try JSONWebToken.signES256(keyID: keyID, claims: claims, key: key)
    }

    /// A provider token from the trusted key, issued now.
    func freshToken() throws -> String {
        try Self.jwt(key: key, keyID: Self.keyID, teamID: Self.teamID, issuedAt: clock.now())
    }

    /// Sends a push. `headers` replace the defaults of the same name (a nil value
    /// removes one); `extraHeaders` are appended as they are.
    @discardableResult
    func send(
        to token: String,
        payload: JSONValue? = nil,
        body: Data? = nil,
        pushType: String? = "liveactivity",
        topic: String? = SimulatorHarness.liveActivityTopic,
        headers: [String: String?] = [:],
        extraHeaders: [(String, String)] = [],
        method: String = "POST",
        path: String? = nil,
        connection: UInt64 = 1,
        providerToken: String? = nil
    ) -> SimulatorResponse {
        var fields: [(String, String?)] = [
            ("authorization", "bearer \(providerToken ?? self.providerToken)"),
            ("apns-topic", topic),
            ("apns-push-type", pushType),
            ("apns-priority", "10"),
        ]
        for (name, value) in headers {
            if let index = fields.firstIndex(where: { $0.0 == name }) {
                fields[index].1 = value
            } else {
                fields.append((name, value))
            }
        }
        var list = fields.compactMap { name, value in value.map { (name: name, value: $0) } }
        list += extraHeaders.map { (name: $0.0, value: $0.1) }
        let data = body ?? Data((payload ?? Self.alert()).jsonText.utf8)
        let request = SimulatorRequest(method: method, path: path ?? "/3/device/\(token)", headers: list, body: data)
        return engine.handle(request, connection: ConnectionID(connection))
    }

    /// Sends a request to the channel management API; `headers` go beside the
    /// provider token.
    @discardableResult
    func manage(
        _ method: String, _ path: String, body: JSONValue? = nil, headers: [(String, String)] = [],
        providerToken: String? = nil, connection: UInt64 = 9
    ) -> SimulatorResponse {
        var list: [(name: String, value: String)] = [("authorization", "bearer \(providerToken ?? self.providerToken)")]
        list += headers.map { (name: $0.0, value: $0.1) }
        let request = SimulatorRequest(
            method: method, path: path, headers: list, body: body.map { Data($0.jsonText.utf8) } ?? Data())
        return engine.handleChannelRequest(request, connection: ConnectionID(connection))
    }

    /// Sends an alert to `token` on the app topic.
    @discardableResult
    func sendAlert(to token: String, connection: UInt64 = 1) -> SimulatorResponse {
        send(to: token, payload: Self.alert(), pushType: "alert", topic: Self.appTopic, connection: connection)
    }

    /// Unix seconds now.
    var now: Int64 { Int64(clock.now().timeIntervalSince1970) }

    /// The last push record.
    var lastRecord: PushRecord? { engine.pushes().last }

    // MARK: - Payloads

    static func alert(_ title: String = "Hello") -> JSONValue {
        ["aps": ["alert": ["title": .string(title), "body": "World"]]]
    }

    static func start(
        timestamp: Int64,
        attributesType: JSONValue? = "DeliveryAttributes",
        attributes: JSONValue? = ["orderID": "A-1"],
        contentState: JSONValue? = ["eta": "12:30", "step": 1],
        alert: JSONValue? = ["title": "Order on its way", "body": "Arrives at 12:30"],
        inputPushToken: Bool = true,
        extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var aps: [String: JSONValue] = ["timestamp": .integer(timestamp), "event": "start"]
        if let attributesType { aps["attributes-type"] = attributesType }
        if let attributes { aps["attributes"] = attributes }
        if let contentState { aps["content-state"] = contentState }
        if let alert { aps["alert"] = alert }
        if inputPushToken { aps["input-push-token"] = 1 }
        for (key, value) in extra { aps[key] = value }
        return ["aps": .object(aps)]
    }

    static func update(
        _ event: String = "update", timestamp: Int64?, contentState: JSONValue? = ["eta": "12:40", "step": 2],
        extra: [String: JSONValue] = [:]
    ) -> JSONValue {
        var aps: [String: JSONValue] = ["event": .string(event)]
        if let timestamp { aps["timestamp"] = .integer(timestamp) }
        if let contentState { aps["content-state"] = contentState }
        for (key, value) in extra { aps[key] = value }
        return ["aps": .object(aps)]
    }

    /// Starts an activity through a fresh push-to-start token; answers the activity.
    func startActivity(
        pushToStartToken: String = SimulatorHarness.token(0x51), payload: JSONValue? = nil
    ) throws -> SimulatedActivity {
        let response = send(to: pushToStartToken, payload: payload ?? Self.start(timestamp: now))
        #expect(response.status == 200)
        let record = try #require(lastRecord)
        #expect(record.deviceOutcome == .started)
        let id = try #require(record.activityID)
        return try #require(engine.activity(id: id))
    }

    /// A well-formed token made of one repeated byte.
    static func token(_ byte: UInt8, bytes: Int = 32) -> String {
        String(repeating: String(format: "%02x", byte), count: bytes)
    }
}

/// The body of an answer, parsed.
func parsedBody(_ response: SimulatorResponse) throws -> JSONValue {
    try JSONValue(parsing: response.body)
}

/// Checks that `response` is the refusal `reason` with its status and JSON body.
func expectRefusal(
    _ response: SimulatorResponse, _ status: Int, _ reason: APNsReason,
    sourceLocation: SourceLocation = #_sourceLocation
) {
    #expect(response.status == status, sourceLocation: sourceLocation)
    #expect(response.reason == reason, sourceLocation: sourceLocation)
    let body = try? parsedBody(response)
    #expect(body?["reason"] == .string(reason.rawValue), sourceLocation: sourceLocation)
    #expect(response.header("content-type") == "application/json", sourceLocation: sourceLocation)
    #expect(response.header("apns-id").map(APNsMessageID.isUUID) == true, sourceLocation: sourceLocation)
}
