import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import IsletSync
import IsletTesting
import Simulators
import Testing

/// A simulator on real sockets (port 0), a trusted key, and clients that trust its CA.
struct LiveSimulator {
    static let keyID = "LIVEKEY123"
    static let teamID = "LIVETEAM12"
    let key: P256.SigningKey
    let simulator: APNsSimulator

    init(configure: (inout APNsSimulatorOptions) throws -> Void = { _ in }) throws {
        try self.init(observer: nil, configure: configure)
    }

    /// `observer` sees each push's record as the engine answers it (before an
    /// answer gate lets the answer go).
    init(
        observer: (@Sendable (PushRecord) -> Void)?, configure: (inout APNsSimulatorOptions) throws -> Void
    ) throws {
        key = try P256.SigningKey.generate()
        var options = APNsSimulatorOptions()
        options.port = 0
        options.inspectPort = 0
        options.engine.trustedKeys = [TrustedKey(keyID: Self.keyID, teamID: Self.teamID, publicKey: key.publicKey)]
        try configure(&options)
        simulator = try APNsSimulator(options: options, observer: observer)
        try simulator.start()
    }

    func client() throws -> HTTP2Client {
        try HTTP2Client(configuration: HTTP2ClientConfiguration(
            host: "127.0.0.1", port: simulator.port, tls: TLSClientConfiguration(trustRootsPEM: simulator.caCertificatePEM)))
    }

    func token(issuedAt: Date = Date()) throws -> String {
        try JSONWebToken.signES256(
            keyID: Self.keyID, claims: ["iss": .string(Self.teamID), "iat": .integer(Int64(issuedAt.timeIntervalSince1970))], key: key)
    }

    func push(
        _ payload: String, to deviceToken: String = String(repeating: "ab", count: 32), pushType: String = "alert",
        topic: String = "com.example.app", apnsID: String? = nil, providerToken: String
    ) -> HTTP2Request {
        var headers: [(name: String, value: String)] = [
            ("authorization", "bearer \(providerToken)"), ("apns-topic", topic), ("apns-push-type", pushType),
        ]
        if let apnsID { headers.append(("apns-id", apnsID)) }
        return HTTP2Request(path: "/3/device/\(deviceToken)", headers: headers, body: Data(payload.utf8))
    }

    func inspect(_ path: String, method: String = "GET", body: String? = nil) async throws -> RawHTTPResponse {
        try await httpRequest(
            port: simulator.inspectPort!, method: method, path: path,
            headers: body == nil ? [:] : ["Content-Type": "application/json"], body: body.map { Data($0.utf8) })
    }
}

let alert = #"{"aps":{"alert":{"title":"Order","body":"On its way"}}}"#

@Suite("APNs simulator over TLS")
struct SimulatorServerTests {
    @Test func validPushIsAnsweredAndRecorded() async throws {
        let live = try LiveSimulator()
        let client = try live.client()
        let id = "0f8e2c1a-3b4d-4e5f-8a9b-1c2d3e4f5a6b"
        let response = try await client.send(live.push(alert, apnsID: id, providerToken: try live.token()))
        #expect(response.status == 200)
        #expect(response.header("apns-id") == id)
        #expect(response.header("apns-unique-id") != nil)

        let pushes = try #require(try await live.inspect("/pushes").json?["pushes"] as? [[String: Any]])
        #expect(pushes.count == 1)
        #expect((pushes[0]["answer"] as? [String: Any])?["apns_id"] as? String == id)
        #expect(pushes[0]["device_outcome"] as? String == "alert_shown")
        #expect(try await live.inspect("/reset", method: "POST").status == 204)
        #expect((try await live.inspect("/pushes").json?["pushes"] as? [Any])?.isEmpty == true)
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func inspectionProblemsCarryATitleAndNameTheirParameter() async throws {
        let live = try LiveSimulator()
        let bad = try await live.inspect("/pushes?after=abc")
        #expect(bad.status == 400)
        #expect(bad.headers["content-type"] == "application/problem+json")
        #expect(bad.json?["title"] as? String == "Bad Request")
        #expect((bad.json?["detail"] as? String)?.hasPrefix("after: ") == true)
        #expect(try await live.inspect("/pushes?after=-1").status == 400)
        #expect(try await live.inspect("/pushes?after=0").status == 200)
        let missing = try await live.inspect("/activities/nope")
        #expect(missing.status == 404)
        #expect(missing.json?["title"] as? String == "Not Found")
        await live.simulator.shutdown()
    }

    @Test func theInspectionAPIListensOnItsOwnAddress() async throws {
        // --host moves APNs only; the inspection API binds inspectHost.
        let live = try LiveSimulator { $0.inspectHost = "127.0.0.2" }
        let moved = try await httpRequest(port: live.simulator.inspectPort!, host: "127.0.0.2", path: "/healthz")
        #expect(moved.status == 200)
        await live.simulator.shutdown()
    }

    @Test func liveActivityStartMintsAnUpdateTokenThatTakesUpdates() async throws {
        let live = try LiveSimulator()
        let client = try live.client()
        let jwt = try live.token()
        let now = Int(Date().timeIntervalSince1970)
        let start = #"{"aps":{"timestamp":\#(now),"event":"start","content-state":{"eta":5},"attributes-type":"DeliveryAttributes","attributes":{"order":"A1"},"alert":{"title":"Order","body":"Started"},"input-push-token":1}}"#
        let topic = "com.example.app.push-type.liveactivity"
        #expect(try await client.send(live.push(start, pushType: "liveactivity", topic: topic, providerToken: jwt)).status == 200)
        let activities = try #require(try await live.inspect("/activities").json?["activities"] as? [[String: Any]])
        #expect(activities.count == 1)
        let updateToken = try #require(activities[0]["update_token"] as? String)
        let update = #"{"aps":{"timestamp":\#(now + 1),"event":"update","content-state":{"eta":3}}}"#
        #expect(try await client.send(live.push(update, to: updateToken, pushType: "liveactivity", topic: topic, providerToken: jwt)).status == 200)
        // An alert to a Live Activity token is refused, as APNs does.
        let wrongKind = try await client.send(live.push(alert, to: updateToken, providerToken: jwt))
        #expect(wrongKind.status == 400)
        #expect(String(decoding: wrongKind.body, as: UTF8.self).contains("DeviceTokenNotForTopic"))
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func oneStreamUntilTheFirstValidProviderToken() async throws {
        let live = try LiveSimulator { $0.maxStreams = 500 }
        let client = try live.client()
        let refused = try await client.send(live.push(alert, providerToken: "not.a.token"))
        #expect(refused.status == 403)
        #expect(await client.statistics.peerMaxConcurrentStreams == 1)
        #expect(try await client.send(live.push(alert, providerToken: try live.token())).status == 200)
        // The raised limit arrives in a SETTINGS frame right after the answer.
        #expect(await eventually { await client.statistics.peerMaxConcurrentStreams == 500 })
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func aChangedProviderTokenWithinTwentyMinutesIsRefusedOnThatConnectionOnly() async throws {
        let live = try LiveSimulator()
        let first = try live.token(issuedAt: Date().addingTimeInterval(-60))
        let second = try live.token()
        let client = try live.client()
        #expect(try await client.send(live.push(alert, providerToken: first)).status == 200)
        let refused = try await client.send(live.push(alert, providerToken: second))
        #expect(refused.status == 429)
        #expect(String(decoding: refused.body, as: UTF8.self).contains("TooManyProviderTokenUpdates"))
        let other = try live.client()
        #expect(try await other.send(live.push(alert, providerToken: second)).status == 200)
        await client.shutdown()
        await other.shutdown()
        await live.simulator.shutdown()
    }

    @Test(arguments: [500, 503, 429])
    func injectedFailuresReachTheCaller(status: Int) async throws {
        let live = try LiveSimulator { $0.engine.faultInjection = try FaultInjection(failRate: 1.0, status: status) }
        let client = try live.client()
        let response = try await client.send(live.push(alert, providerToken: try live.token()))
        #expect(response.status == status)
        let reason = ["500": "InternalServerError", "503": "ServiceUnavailable", "429": "TooManyRequests"]["\(status)"]!
        #expect(String(decoding: response.body, as: UTF8.self).contains(reason))
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func goawayAfterNStreamsLosesAndRepeatsNothing() async throws {
        let live = try LiveSimulator { $0.goawayAfterStreams = 40 }
        let client = try live.client()
        let jwt = try live.token()
        let ids = (0..<400).map { _ in UUID().uuidString.lowercased() }
        let statuses = try await withThrowingTaskGroup(of: Int.self) { group in
            for id in ids {
                group.addTask { try await client.send(live.push(alert, apnsID: id, providerToken: jwt)).status }
            }
            return try await group.reduce(into: [Int]()) { $0.append($1) }
        }
        #expect(statuses.count == 400 && statuses.allSatisfy { $0 == 200 })
        let recorded = live.simulator.engine.pushes().compactMap(\.answer.apnsID)
        #expect(recorded.count == 400)
        #expect(Set(recorded) == Set(ids))
        #expect(await client.statistics.goawaysReceived >= 9)
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func latencyDelaysEveryAnswer() async throws {
        let live = try LiveSimulator { $0.latency = .milliseconds(150) }
        let client = try live.client()
        let jwt = try live.token()
        _ = try await client.send(live.push(alert, providerToken: jwt))
        let started = ContinuousClock.now
        _ = try await client.send(live.push(alert, providerToken: jwt))
        #expect(ContinuousClock.now - started >= .milliseconds(150))
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func aClosedGateHoldsAnswersUntilItOpens() async throws {
        let gate = AnswerGate(closed: true)
        // Set by the simulator itself once it has handled the push.
        let received = TestSignal()
        let live = try LiveSimulator(observer: { _ in received.set() }) { $0.answerGate = gate }
        let client = try live.client()
        let jwt = try live.token()
        let answered = Lock(false)
        let sent = Task {
            let status = try await client.send(live.push(alert, providerToken: jwt)).status
            answered.withLock { $0 = true }
            return status
        }
        // The device has the push, but its answer waits behind the gate.
        #expect(await received.wait(), "the simulator never received the push")
        #expect(live.simulator.engine.pushes().count == 1)
        #expect(answered.withLock { $0 } == false)
        gate.open()
        #expect(try await sent.value == 200)
        #expect(try await client.send(live.push(alert, providerToken: jwt)).status == 200)
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func tokensRegisteredByHandKeepTheirKindAndEnvironment() async throws {
        let live = try LiveSimulator()
        let token = String(repeating: "cd", count: 32)
        let registered = try await live.inspect("/tokens", method: "POST", body: #"{"token":"\#(token)","kind":"device","environment":"production"}"#)
        #expect(registered.status == 201)
        #expect(try await live.inspect("/tokens", method: "POST", body: #"{"token":"xyz","kind":"device"}"#).status == 422)
        #expect(try await live.inspect("/tokens", method: "POST", body: #"{"token":"\#(token)","kind":"sideways"}"#).status == 422)
        let client = try live.client()
        let response = try await client.send(live.push(alert, to: token, providerToken: try live.token()))
        #expect(response.status == 400)
        #expect(String(decoding: response.body, as: UTF8.self).contains("BadDeviceToken"))
        let tokens = try #require(try await live.inspect("/tokens").json?["tokens"] as? [[String: Any]])
        #expect(tokens.contains { $0["token"] as? String == token })
        await client.shutdown()
        await live.simulator.shutdown()
    }

    @Test func garbageOnTheAPNsPortDoesNotStopTheSimulator() async throws {
        let live = try LiveSimulator()
        let port = live.simulator.port
        try await runBlocking {
            let junk = try RawHTTPConnection(port: port)
            try junk.write("GET / HTTP/1.1\r\nHost: x\r\n\r\n")
            #expect(junk.readsEndOfStream())
        }
        let client = try live.client()
        #expect(try await client.send(live.push(alert, providerToken: try live.token())).status == 200)
        await client.shutdown()
        await live.simulator.shutdown()
    }
}
