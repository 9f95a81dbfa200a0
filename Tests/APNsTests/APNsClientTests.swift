import APNs
import Foundation
import HTTP2
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Synchronization
import Testing

/// A simulator over TLS on port 0 and an APNs client pointed at it, sharing a clock.
struct Rig {
    let clock: ManualWallClock
    let key: APNsSigningKey
    let simulator: APNsSimulator
    let client: APNsClient

    init(
        simulator configureSimulator: (inout APNsSimulatorOptions) throws -> Void = { _ in },
        client configureClient: (inout APNsClientConfiguration) -> Void = { _ in },
        trusted: Bool = true
    ) throws {
        clock = ManualWallClock(start: Date())
        key = APNsSigningKey(keyID: "RIGKEY0001", teamID: "RIGTEAM001", key: try P256.SigningKey.generate())
        var options = APNsSimulatorOptions()
        options.port = 0
        options.inspectPort = nil
        if trusted {
            options.engine.trustedKeys = [TrustedKey(keyID: key.keyID, teamID: key.teamID, publicKey: key.key.publicKey)]
        }
        try configureSimulator(&options)
        simulator = try APNsSimulator(options: options, clock: clock, random: SeededRandomSource(seed: 7))
        try simulator.start()
        var configuration = APNsClientConfiguration()
        configuration.sandboxURL = URL(string: "https://127.0.0.1:\(simulator.port)")!
        configuration.productionURL = configuration.sandboxURL
        configuration.trustRootsPEM = simulator.caCertificatePEM
        // The connect deadline stretches with the suite's (a sanitizer's run is
        // several times slower, and thousands of pushes wait on one connection).
        configuration.connectTimeout = TestTime.scaled(configuration.connectTimeout)
        configureClient(&configuration)
        client = APNsClient(configuration: configuration, clock: clock)
    }

    func alert(to token: String = String(repeating: "ab", count: 32), apnsID: String? = nil) -> APNsRequest {
        APNsRequest(
            deviceToken: token, topic: "com.example.app", pushType: .alert, apnsID: apnsID,
            payload: Data(#"{"aps":{"alert":{"title":"Order","body":"On its way"}}}"#.utf8))
    }

    func send(_ request: APNsRequest) async -> APNsResult {
        await client.send(request, key: key, environment: .sandbox)
    }

    func stop() async {
        await client.shutdown()
        await simulator.shutdown()
    }
}

@Suite("APNs client against the simulator")
struct APNsClientTests {
    @Test func broadcastsGoToTheirChannelAndChannelsAreManagedOnTheirOwnHost() async throws {
        let rig = try Rig(simulator: { $0.channelsPort = 0 })
        var settings = APNsChannelConfiguration()
        settings.sandboxURL = URL(string: "https://127.0.0.1:\(try #require(rig.simulator.channelsPort))")!
        settings.trustRootsPEM = rig.simulator.caCertificatePEM
        let channels = APNsChannelClient(configuration: settings, tokens: { rig.client.tokenManager(for: $0) })
        let id = try await channels.create(bundleID: "com.example.app", storesMostRecent: false, key: rig.key, environment: .sandbox)
        #expect(rig.simulator.engine.channels().map(\.id) == [id])
        let phone = try rig.simulator.engine.subscribe(channelID: id, token: "phone-1")

        let update = Data(#"{"aps":{"timestamp":1800000001,"event":"update","content-state":{"step":2}}}"#.utf8)
        let sent = await rig.send(.broadcast(channelID: id, bundleID: "com.example.app", priority: .powerConsidered, payload: update))
        #expect(sent.disposition == .delivered, "\(sent)")
        #expect(sent.response?.status == 200)
        let record = try #require(rig.simulator.engine.pushes().last)
        #expect(record.path == "/4/broadcasts/apps/com.example.app")
        #expect(record.headers["apns-channel-id"] == id)
        #expect(record.headers["apns-priority"] == "5")
        #expect(record.headers["apns-expiration"] == "0")
        #expect(record.headers["apns-topic"] == nil)
        #expect(record.deliveries?.map(\.activityID) == [phone.id])
        #expect(rig.simulator.engine.activity(id: phone.id)?.contentState == ["step": 2])

        // A channel APNs does not have is refused, naming it (like a dead token: it
        // reaches no one again); deleting one twice is no error.
        try await channels.delete(bundleID: "com.example.app", channelID: id, key: rig.key, environment: .sandbox)
        try await channels.delete(bundleID: "com.example.app", channelID: id, key: rig.key, environment: .sandbox)
        #expect(rig.simulator.engine.channels().isEmpty)
        let refused = await rig.send(.broadcast(channelID: id, bundleID: "com.example.app", payload: update))
        #expect(refused.disposition == .tokenDead(since: nil))
        #expect(refused.response?.reason == .channelNotRegistered)
        // APNs's refusal of a channel request comes back with its reason.
        do {
            _ = try await channels.create(bundleID: "com.example.app.push-type.liveactivity", storesMostRecent: true, key: rig.key, environment: .sandbox)
            Issue.record("a topic with a push-type suffix was accepted")
        } catch {
            #expect(error.reason == .topicDisallowed)
            #expect(error.status == 400)
        }
        await channels.shutdown()
        await rig.stop()
    }

    @Test func deliversAndKeepsTheApnsID() async throws {
        let rig = try Rig()
        let request = rig.alert()
        let result = await rig.send(request)
        #expect(result.disposition == .delivered)
        #expect(result.attempts == 1)
        #expect(result.response?.apnsID == request.apnsID)
        #expect(result.response?.uniqueID != nil)
        #expect(rig.simulator.engine.pushes().map(\.answer.apnsID) == [request.apnsID])
        await rig.stop()
    }

    @Test func everyFieldOfTheRequestReachesAPNs() async throws {
        let rig = try Rig()
        let token = String(repeating: "cd", count: 32)
        let expiration = Int64(Date().timeIntervalSince1970) + 3_600
        let request = APNsRequest(
            deviceToken: token, topic: "com.example.app", pushType: .alert, priority: .powerConsidered,
            expiration: expiration, collapseID: "order-42", payload: Data(#"{"aps":{"alert":{"title":"A","body":"B"}}}"#.utf8))
        #expect(await rig.send(request).disposition == .delivered)
        let plain = rig.alert()
        #expect(await rig.send(plain).disposition == .delivered)
        let records = rig.simulator.engine.pushes()
        #expect(records.count == 2)
        let full = try #require(records.first)
        #expect(full.method == "POST")
        #expect(full.path == "/3/device/" + token)
        #expect(full.headers["apns-topic"] == "com.example.app")
        #expect(full.headers["apns-push-type"] == "alert")
        #expect(full.headers["apns-priority"] == "5")
        #expect(full.headers["apns-expiration"] == String(expiration))
        #expect(full.headers["apns-collapse-id"] == "order-42")
        #expect(full.headers["apns-id"] == request.apnsID)
        #expect(full.headers["authorization"]?.hasPrefix("bearer ") == true)
        #expect(full.payload == (try JSONValue(parsing: request.payload)))
        // Optional fields left out are not sent, and nothing of the first request
        // stays in the connection's buffer.
        let second = try #require(records.last)
        #expect(second.headers["apns-priority"] == "10")
        #expect(second.headers["apns-expiration"] == nil)
        #expect(second.headers["apns-collapse-id"] == nil)
        #expect(second.headers["apns-id"] == plain.apnsID)
        #expect(second.path == "/3/device/" + String(repeating: "ab", count: 32))
        await rig.stop()
    }

    @Test func theAnswerIsReadAsAPNsSentIt() async throws {
        // A plain HTTP/2 server stands in for APNs: it answers with ids of its own,
        // which the response must carry rather than the request's.
        let server = try HTTP2Server(configuration: HTTP2ServerConfiguration(), delegate: GoneAnswer())
        try server.start()
        var configuration = APNsClientConfiguration()
        configuration.sandboxURL = URL(string: "http://127.0.0.1:\(server.port)")!
        let client = APNsClient(configuration: configuration)
        let key = APNsSigningKey(keyID: "KID0000001", teamID: "TEAM000001", key: try P256.SigningKey.generate())
        let request = APNsRequest(deviceToken: String(repeating: "ab", count: 32), topic: "com.example.app", pushType: .alert, payload: Data("{}".utf8))
        let result = await client.send(request, key: key, environment: .sandbox)
        #expect(result.disposition == .tokenDead(since: Date(timeIntervalSince1970: 1_700_000_000)))
        #expect(result.apnsID == request.apnsID)
        #expect(result.response?.status == 410)
        #expect(result.response?.apnsID == GoneAnswer.apnsID)
        #expect(result.response?.uniqueID == GoneAnswer.uniqueID)
        #expect(result.response?.reason == .unregistered)
        #expect(result.response?.timestamp == Date(timeIntervalSince1970: 1_700_000_000))
        await client.shutdown()
        await server.shutdown()
    }

    /// The client makes one attempt per push and never sends it again on its own:
    /// a passing fault is answered as such, for the delivery policy to decide.
    @Test(arguments: [500, 503])
    func aPassingFaultIsAnsweredAfterOneAttempt(status: Int) async throws {
        let rig = try Rig(simulator: { $0.engine.faultInjection = try FaultInjection(failRate: 1, status: status) }, client: { $0.breakerThreshold = 100 })
        let request = rig.alert()
        let result = await rig.send(request)
        #expect(result.disposition == .retry)
        #expect(result.attempts == 1)
        #expect(result.response?.status == status)
        let records = rig.simulator.engine.pushes()
        #expect(records.count == 1)
        #expect(records.first?.answer.apnsID == request.apnsID)
        await rig.stop()
    }

    @Test func connectionFailuresCountAgainstTheHostUntilItsBreakerPausesIt() async throws {
        // Nothing listens on the port: every attempt is a transport failure.
        let refusing = try ReservedPort()
        let port = refusing.port
        var configuration = APNsClientConfiguration()
        configuration.sandboxURL = URL(string: "http://127.0.0.1:\(port)")!
        configuration.connectTimeout = .milliseconds(50)
        configuration.breakerThreshold = 3
        configuration.breakerOpenDuration = 10
        let clock = ManualWallClock(start: Date())
        let client = APNsClient(configuration: configuration, clock: clock)
        let key = APNsSigningKey(keyID: "KID0000001", teamID: "TEAM000001", key: try P256.SigningKey.generate())
        let request = APNsRequest(deviceToken: String(repeating: "ab", count: 32), topic: "com.example.app", pushType: .alert, payload: Data("{}".utf8))
        for _ in 0..<3 {
            let failed = await client.send(request, key: key, environment: .sandbox)
            #expect(failed.disposition == .retry)
            #expect(failed.attempts == 1)
            #expect(failed.error?.code == .transport)
            #expect(failed.response == nil)
        }
        #expect(client.breaker(for: "127.0.0.1:\(port)").openings == 1)
        // The host is paused: the push is not tried, and the answer says for how long.
        let paused = await client.send(request, key: key, environment: .sandbox)
        #expect(paused.disposition == .retryLater(after: 10))
        #expect(paused.attempts == 0)
        #expect(paused.error?.code == .circuitOpen)
        clock.advance(by: 4)
        #expect(await client.send(request, key: key, environment: .sandbox).disposition == .retryLater(after: 6))
        // Once the pause is over, one probe goes through (and fails again here).
        clock.advance(by: 6)
        let probe = await client.send(request, key: key, environment: .sandbox)
        #expect(probe.attempts == 1)
        #expect(probe.disposition == .retry)
        await client.shutdown()
        withExtendedLifetime(refusing) {}
    }

    @Test func tooManyRequestsIsRetryLaterWithoutRetrying() async throws {
        let rig = try Rig(simulator: { $0.engine.faultInjection = try FaultInjection(failRate: 1, status: 429) })
        let result = await rig.send(rig.alert())
        #expect(result.disposition == .retryLater(after: nil))
        #expect(result.attempts == 1)
        #expect(result.response?.reason == .tooManyRequests)
        await rig.stop()
    }

    @Test func aTokenFromTheOtherEnvironmentIsUnknownHere() async throws {
        let rig = try Rig()
        let token = String(repeating: "cd", count: 32)
        try rig.simulator.engine.registerToken(token, kind: .device, environment: .production)
        let result = await rig.send(rig.alert(to: token))
        #expect(result.disposition == .tokenUnknownInEnvironment)
        #expect(result.response?.reason == .badDeviceToken)
        await rig.stop()
    }

    @Test func aDismissedActivitysTokenIsDeadWithItsTimestamp() async throws {
        let rig = try Rig()
        let updateToken = String(repeating: "9f", count: 32)
        try rig.simulator.engine.registerToken(updateToken, kind: .liveActivityUpdate)
        let now = Int(rig.clock.now().timeIntervalSince1970)
        let end = APNsRequest(
            deviceToken: updateToken, topic: "com.example.app.push-type.liveactivity", pushType: .liveactivity,
            payload: Data(#"{"aps":{"timestamp":\#(now),"event":"end","content-state":{"done":true},"dismissal-date":\#(now)}}"#.utf8))
        #expect(await rig.send(end).disposition == .delivered)
        rig.clock.advance(by: 60)
        let update = APNsRequest(
            deviceToken: updateToken, topic: "com.example.app.push-type.liveactivity", pushType: .liveactivity,
            payload: Data(#"{"aps":{"timestamp":\#(now + 60),"event":"update","content-state":{"done":true}}}"#.utf8))
        let result = await rig.send(update)
        guard case .tokenDead(let since?) = result.disposition else {
            Issue.record("expected a dead token with a timestamp, got \(result.disposition)")
            await rig.stop()
            return
        }
        #expect(abs(since.timeIntervalSince1970 - Double(now)) < 2)
        #expect(result.response?.status == 410)
        await rig.stop()
    }

    @Test func anAlertToALiveActivityTokenIsTheWrongTopic() async throws {
        let rig = try Rig()
        let token = String(repeating: "7e", count: 32)
        try rig.simulator.engine.registerToken(token, kind: .pushToStart)
        let result = await rig.send(rig.alert(to: token))
        #expect(result.disposition == .wrongTopic)
        #expect(result.response?.reason == .deviceTokenNotForTopic)
        await rig.stop()
    }

    @Test func aRefusedKeyIsAnsweredEachTimeAndNamedAStandingRefusal() async throws {
        let rig = try Rig(trusted: false)
        // The client sends what it is given; remembering the refusal is the
        // transport's (RefusedCredentials), from the policy's standingRefusal.
        for sent in 1...2 {
            let result = await rig.send(rig.alert())
            #expect(result.disposition == .credentialsRejected)
            #expect(result.attempts == 1)
            #expect(result.response?.reason == .invalidProviderToken)
            #expect(result.response.flatMap(APNsFailurePolicy.standingRefusal) == "InvalidProviderToken")
            #expect(rig.simulator.engine.pushes().count == sent)
        }
        await rig.stop()
    }

    @Test func aPayloadProblemIsNeverRetried() async throws {
        let rig = try Rig()
        var request = rig.alert()
        request.payload = Data(repeating: 0x20, count: 5_000)
        let result = await rig.send(request)
        #expect(result.disposition == .rejected)
        #expect(result.attempts == 1)
        #expect(result.response?.status == 413)
        await rig.stop()
    }

    @Test func oneProviderTokenServesEveryPushAndConnection() async throws {
        let rig = try Rig(client: { $0.connectionsPerPool = 4 })
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { _ = await rig.send(rig.alert()) } }
        }
        rig.clock.advance(by: 19 * 60)
        #expect(await rig.send(rig.alert()).disposition == .delivered)
        #expect(rig.client.tokenManager(for: rig.key).tokensMinted == 1)
        #expect(rig.simulator.engine.pushes().allSatisfy { $0.answer.status == 200 })
        await rig.stop()
    }

    @Test func aPoolOnTwoThreadsSendsOnEveryConnection() async throws {
        let rig = try Rig(client: {
            $0.connectionsPerPool = 4
            $0.threadsPerPool = 2
        })
        // Pushes sent from completions, as the delivery worker sends them: each is
        // sent on a connection of the thread that answered the one before.
        let total = 2_000
        let started = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
        let delivered = Atomic<Int>(0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            @Sendable func sendNext() {
                guard started.wrappingAdd(1, ordering: .relaxed).newValue <= total else { return }
                rig.client.send(rig.alert(), key: rig.key, environment: .sandbox) { result in
                    if result.disposition == .delivered { delivered.wrappingAdd(1, ordering: .relaxed) }
                    if finished.wrappingAdd(1, ordering: .relaxed).newValue == total { continuation.resume() }
                    sendNext()
                }
            }
            for _ in 0..<64 { sendNext() }
        }
        #expect(delivered.load(ordering: .relaxed) == total)
        #expect(Set(rig.simulator.engine.pushes().map(\.connection)).count == 4)
        await rig.stop()
    }

    @Test func aPushSentFromACompletionGoesOnTheConnectionThatAnswered() async throws {
        let rig = try Rig(client: { $0.connectionsPerPool = 4 })
        // One chain of pushes, each sent from the completion of the one before:
        // every push after the first reuses the connection that freed a stream.
        let total = 40
        let sent = Atomic<Int>(0)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            @Sendable func sendNext() {
                guard sent.wrappingAdd(1, ordering: .relaxed).newValue <= total else {
                    continuation.resume()
                    return
                }
                rig.client.send(rig.alert(), key: rig.key, environment: .sandbox) { result in
                    #expect(result.disposition == .delivered)
                    sendNext()
                }
            }
            sendNext()
        }
        let pushes = rig.simulator.engine.pushes()
        #expect(pushes.count == total)
        #expect(Set(pushes.map(\.connection)).count == 1)
        await rig.stop()
    }

    @Test func repeated503sOpenTheBreakerWhichThenLetsOneProbeThrough() async throws {
        let rig = try Rig(
            simulator: { $0.engine.faultInjection = try FaultInjection(failRate: 1, status: 503) },
            client: {
                $0.breakerThreshold = 3
                $0.breakerOpenDuration = 10
            })
        for _ in 0..<3 {
            let result = await rig.send(rig.alert())
            #expect(result.disposition == .retry)
            #expect(result.response?.status == 503)
        }
        // Open: nothing reaches APNs, and each push is told when to come back.
        for _ in 0..<5 {
            let result = await rig.send(rig.alert())
            #expect(result.disposition == .retryLater(after: 10))
            #expect(result.error?.code == .circuitOpen)
            #expect(result.attempts == 0)
        }
        #expect(rig.simulator.engine.pushes().count == 3)
        #expect(rig.client.breaker(for: "127.0.0.1:\(rig.simulator.port)").openings == 1)
        // After the pause one probe goes through; it fails, and the breaker closes
        // the door again.
        rig.clock.advance(by: 11)
        #expect(await rig.send(rig.alert()).response?.status == 503)
        #expect(rig.simulator.engine.pushes().count == 4)
        #expect(await rig.send(rig.alert()).error?.code == .circuitOpen)
        #expect(rig.simulator.engine.pushes().count == 4)
        await rig.stop()
    }

    @Test func tokensAreReplacedBeforeAnHourButNeverWithinTwentyMinutes() async throws {
        let rig = try Rig()
        #expect(await rig.send(rig.alert()).disposition == .delivered)
        rig.clock.advance(by: 56 * 60)
        #expect(await rig.send(rig.alert()).disposition == .delivered)
        #expect(rig.client.tokenManager(for: rig.key).tokensMinted == 2)
        #expect(rig.simulator.engine.pushes().allSatisfy { $0.answer.reason != .tooManyProviderTokenUpdates })
        await rig.stop()
    }

    @Test func anExpiredProviderTokenIsReplacedAndThePushMayGoAgainAtOnce() async throws {
        let rig = try Rig(client: { $0.providerTokenMaximumAge = 3 * 3600 })
        #expect(await rig.send(rig.alert()).disposition == .delivered)
        rig.clock.advance(by: 61 * 60)
        let request = rig.alert()
        let refused = await rig.send(request)
        #expect(refused.disposition == .retryNow)
        #expect(refused.attempts == 1)
        #expect(refused.response?.reason == .expiredProviderToken)
        #expect(rig.client.tokenManager(for: rig.key).tokensMinted == 2)
        #expect(await rig.send(request).disposition == .delivered)
        #expect(rig.client.tokenManager(for: rig.key).tokensMinted == 2)
        #expect(rig.simulator.engine.pushes().map(\.answer.reason) == [nil, .expiredProviderToken, nil])
        await rig.stop()
    }

    @Test func aProviderTokenTooYoungToReplaceIsARefusal() async throws {
        // A server that calls every token expired: it is not 20 minutes old, which
        // only a wrong clock or a wrong key explains, and a new token would not help.
        let server = try HTTP2Server(configuration: HTTP2ServerConfiguration(), delegate: ExpiredTokenAnswer())
        try server.start()
        var configuration = APNsClientConfiguration()
        configuration.sandboxURL = URL(string: "http://127.0.0.1:\(server.port)")!
        let client = APNsClient(configuration: configuration, clock: ManualWallClock(start: Date()))
        let key = APNsSigningKey(keyID: "KID0000001", teamID: "TEAM000001", key: try P256.SigningKey.generate())
        let request = APNsRequest(deviceToken: String(repeating: "ab", count: 32), topic: "com.example.app", pushType: .alert, payload: Data("{}".utf8))
        let result = await client.send(request, key: key, environment: .sandbox)
        #expect(result.disposition == .credentialsRejected)
        #expect(result.attempts == 1)
        #expect(result.response?.reason == .expiredProviderToken)
        #expect(client.tokenManager(for: key).tokensMinted == 1)
        // Not a refusal of the key: the next push is tried.
        #expect(await client.send(request, key: key, environment: .sandbox).attempts == 1)
        await client.shutdown()
        await server.shutdown()
    }

    @Test func goawayStormAndInjected503sLoseNoneOfTenThousandPushes() async throws {
        let rig = try Rig(
            simulator: {
                $0.goawayAfterStreams = 500
                $0.engine.faultInjection = try FaultInjection(failRate: 0.05, status: 503)
                $0.engine.pushHistoryLimit = 20_000
            },
            client: {
                $0.breakerThreshold = 1_000
                $0.connectionsPerPool = 2
            })
        let requests = (0..<10_000).map { _ in rig.alert() }
        // Every push is answered: delivered, or to send again (as the delivery policy
        // would, with the same apns-id): a 503, or, on a machine slow enough that a
        // push waits for a connection past the connect deadline, a push that never
        // reached the network. A stream the GOAWAYs refused is re-sent by the HTTP/2
        // layer, never answered as a failure. Whatever the timing, nothing is lost
        // and nothing is accepted twice (the count of accepted apns-ids below).
        var pending = requests
        var rounds = 0
        while !pending.isEmpty, rounds < 20 {
            rounds += 1
            let answers = await withTaskGroup(of: (APNsRequest, APNsResult).self) { group in
                for request in pending { group.addTask { (request, await rig.send(request)) } }
                return await group.reduce(into: []) { $0.append($1) }
            }
            for (_, result) in answers where result.disposition != .delivered {
                let refused = result.response?.status == 503
                let neverSent = result.response == nil && result.error?.message.contains("connecting took longer") == true
                #expect(result.disposition == .retry && (refused || neverSent), "\(result)")
            }
            pending = answers.filter { $0.1.disposition != .delivered }.map(\.0)
        }
        #expect(pending.isEmpty)
        let accepted = rig.simulator.engine.pushes().filter { $0.answer.status == 200 }.compactMap(\.answer.apnsID)
        #expect(accepted.count == 10_000)
        #expect(Set(accepted) == Set(requests.map(\.apnsID)))
        await rig.stop()
    }
}

@Suite("Failure policy")
struct FailurePolicyTests {
    @Test(arguments: [
        (200, nil, TransportDisposition.delivered),
        (500, APNsReason.internalServerError, .retry),
        (503, .serviceUnavailable, .retry),
        (503, .shutdown, .retry),
        (429, .tooManyRequests, .retryLater(after: nil)),
        (429, .tooManyProviderTokenUpdates, .retryLater(after: nil)),
        (429, nil, .retryLater(after: nil)),
        (400, .badDeviceToken, .tokenUnknownInEnvironment),
        (400, .deviceTokenNotForTopic, .wrongTopic),
        (400, .topicDisallowed, .wrongTopic),
        (400, .badTopic, .wrongTopic),
        (403, .expiredProviderToken, .credentialsRejected),
        (403, .invalidProviderToken, .credentialsRejected),
        (403, .missingProviderToken, .credentialsRejected),
        (403, .unknown("SomethingNew"), .credentialsRejected),
        (413, .payloadTooLarge, .rejected),
        (400, .payloadEmpty, .rejected),
        (400, .badPriority, .rejected),
        (502, nil, .retry),
        (410, nil, .tokenDead(since: nil)),
        (400, .channelNotRegistered, .tokenDead(since: nil)),
        (400, .badChannelId, .rejected),
    ] as [(Int, APNsReason?, TransportDisposition)])
    func classifies(status: Int, reason: APNsReason?, expected: TransportDisposition) {
        #expect(APNsFailurePolicy.classify(APNsResponse(status: status, reason: reason)) == expected)
    }

    @Test func anExpiredProviderTokenThatWasReplacedMayGoAgainAtOnce() {
        let answer = APNsResponse(status: 403, reason: .expiredProviderToken)
        #expect(APNsFailurePolicy.classify(answer, providerTokenReplaced: true) == .retryNow)
        #expect(APNsFailurePolicy.classify(answer, providerTokenReplaced: false) == .credentialsRejected)
        // Only that reason is mended by a new token.
        #expect(APNsFailurePolicy.classify(APNsResponse(status: 403, reason: .invalidProviderToken), providerTokenReplaced: true) == .credentialsRejected)
    }

    @Test func goneTokensCarryTheirTimestamp() {
        let when = Date(timeIntervalSince1970: 1_800_000_000)
        #expect(APNsFailurePolicy.classify(APNsResponse(status: 410, reason: .unregistered, timestamp: when)) == .tokenDead(since: when))
        #expect(APNsFailurePolicy.classify(APNsResponse(status: 410, reason: .expiredToken, timestamp: when)) == .tokenDead(since: when))
    }
}

@Suite("Circuit breaker")
struct CircuitBreakerTests {
    @Test func opensAfterTheThresholdProbesThenCloses() {
        let clock = ManualWallClock()
        let breaker = CircuitBreaker(failureThreshold: 3, openDuration: 10, clock: clock)
        for _ in 0..<2 { breaker.recordFailure() }
        #expect(breaker.permit().allowed)
        breaker.recordFailure()
        let refused = breaker.permit()
        #expect(!refused.allowed)
        #expect(refused.retryAfter == 10)
        clock.advance(by: 10)
        #expect(breaker.permit().allowed)  // the probe
        #expect(!breaker.permit().allowed)  // others wait for it
        breaker.recordSuccess()
        #expect(breaker.current == .closed)
        #expect(breaker.permit().allowed)
        #expect(breaker.openings == 1)
    }

    @Test func aFailedProbeOpensItAgain() {
        let clock = ManualWallClock()
        let breaker = CircuitBreaker(failureThreshold: 1, openDuration: 5, clock: clock)
        breaker.recordFailure()
        clock.advance(by: 5)
        #expect(breaker.permit().allowed)
        breaker.recordFailure()
        #expect(!breaker.permit().allowed)
        #expect(breaker.openings == 2)
    }

    @Test func aNeutralAnswerEndsAProbeWithoutCountingAgainstTheHost() {
        let clock = ManualWallClock()
        let breaker = CircuitBreaker(failureThreshold: 2, openDuration: 5, clock: clock)
        breaker.recordFailure()
        breaker.recordNeutral()
        breaker.recordFailure()
        #expect(!breaker.permit().allowed)
    }
}

@Suite("Provider tokens")
struct ProviderTokenTests {
    @Test func reusedUntilTheMaximumAgeAndSignedForTheKey() throws {
        let clock = ManualWallClock()
        let key = APNsSigningKey(keyID: "KID0000001", teamID: "TEAM000001", key: try P256.SigningKey.generate())
        let manager = ProviderTokenManager(signingKey: key, clock: clock)
        let first = try manager.currentToken()
        clock.advance(by: 54 * 60)
        #expect(try manager.currentToken() == first)
        clock.advance(by: 61)
        let second = try manager.currentToken()
        #expect(second != first)
        let parsed = try JSONWebToken(parsing: second)
        #expect(parsed.header["kid"] == .string("KID0000001"))
        #expect(parsed.claims["iss"] == .string("TEAM000001"))
        #expect(parsed.claims["iat"]?.integerValue == Int64(clock.now().timeIntervalSince1970))
        #expect(parsed.isValidES256(using: key.key.publicKey))
    }

    @Test func anExpiredAnswerReplacesOnlyATokenAtLeastTwentyMinutesOld() throws {
        let clock = ManualWallClock()
        let key = APNsSigningKey(keyID: "KID0000001", teamID: "TEAM000001", key: try P256.SigningKey.generate())
        let manager = ProviderTokenManager(signingKey: key, clock: clock)
        let first = try manager.currentToken()
        clock.advance(by: 19 * 60)
        #expect(!manager.tokenExpired(first))
        #expect(try manager.currentToken() == first)
        clock.advance(by: 60)
        #expect(manager.tokenExpired(first))
        #expect(try manager.currentToken() != first)
        #expect(manager.tokensMinted == 2)
    }
}

/// Answers every push 410 Unregistered, with an `apns-id` and `apns-unique-id` of its own.
final class GoneAnswer: HTTP2ServerDelegate {
    static let apnsID = "00000000-0000-4000-8000-00000000aaaa"
    static let uniqueID = "11111111-0000-4000-8000-00000000bbbb"

    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(
            status: 410, headers: [("apns-id", Self.apnsID), ("apns-unique-id", Self.uniqueID)],
            body: Data(#"{"reason":"Unregistered","timestamp":1700000000000}"#.utf8)))
    }
}

/// Answers every push 403 ExpiredProviderToken.
final class ExpiredTokenAnswer: HTTP2ServerDelegate {
    func handle(_ request: HTTP2ServerRequest, on connection: HTTP2ServerConnectionContext) -> HTTP2ServerReply {
        HTTP2ServerReply(HTTP2Response(status: 403, headers: [], body: Data(#"{"reason":"ExpiredProviderToken"}"#.utf8)))
    }
}
