import FCM
import Foundation
import HTTP2
import HTTPClient
import IsletCore
import IsletCrypto
import IsletTesting
import Simulators
import Testing

/// The FCM simulator through Islet's FCM client, over HTTP/2 and TLS: the token
/// endpoint's checks, `messages:send`'s, the simulated Android devices applying the
/// data messages of an activity in order, and scripted faults.
@Suite("FCM simulator: tokens, messages and Android devices")
struct FCMSimulatorTests {
    struct Rig {
        let simulator: FCMSimulator
        let account: FCMServiceAccount
        let key: RSA.SigningKey
        let http: HTTPClient
        let client: FCMClient
        let tokens: FCMAccessTokens
        let clock: ManualWallClock

        func send(_ push: AndroidDataPush, to device: String, last: Int64? = nil) async throws -> FCMResult {
            let built = try push.build(now: clock.now(), lastTimestamp: last)
            let message = FCMMessage(
                token: device, data: built.data, priority: built.priority, ttl: 3600, collapseKey: built.collapseKey)
            return await client.send(message, account: account, tokens: tokens)
        }
    }

    static let phone = "fcm-token-phone-0000000001"

    static func with(_ body: (Rig) async throws -> Void) async throws {
        try await withTemporaryDirectory { directory in
            let clock = ManualWallClock(start: Date(timeIntervalSince1970: 1_800_000_000))
            let simulator = try FCMSimulator(clock: clock, random: SeededRandomSource(seed: 7))
            try simulator.start()
            let key = try RSA.SigningKey.generate()
            let account = FCMServiceAccount(
                projectID: "islet-sim", clientEmail: "islet@islet-sim.iam.gserviceaccount.com",
                privateKeyPEM: key.pemRepresentation, privateKeyID: nil, tokenURI: simulator.tokenURI)
            simulator.engine.trust(
                FCMTrustedAccount(clientEmail: account.clientEmail, projectID: account.projectID, publicKey: key.publicKey))
            let caFile = directory.appendingPathComponent("ca.pem")
            try (simulator.caCertificatePEM ?? "").write(to: caFile, atomically: true, encoding: .utf8)
            var settings = HTTPClientConfiguration()
            settings.allowPrivateAddresses = true
            settings.caFile = caFile.path
            let http = try HTTPClient(configuration: settings)
            var fcm = FCMClientConfiguration()
            fcm.url = URL(string: simulator.url)!
            fcm.trustRootsPEM = simulator.caCertificatePEM
            let client = FCMClient(configuration: fcm)
            let tokens = try FCMAccessTokens(account: account, exchange: CurlTokenExchange(client: http), clock: clock)
            let rig = Rig(
                simulator: simulator, account: account, key: key, http: http, client: client, tokens: tokens, clock: clock)
            do {
                try await body(rig)
            } catch {
                await client.shutdown()
                await http.shutdown()
                await simulator.shutdown()
                throw error
            }
            await client.shutdown()
            await http.shutdown()
            await simulator.shutdown()
        }
    }

    @Test func anActivitysMessagesReachTheAndroidDeviceInOrder() async throws {
        try await Self.with { rig in
            let start = AndroidDataPush(
                event: .start, activityID: "order-1", activityType: "DeliveryAttributes",
                contentState: ["status": "preparing", "eta": 25], attributes: ["order": "A1"])
            let started = try await rig.send(start, to: Self.phone)
            #expect(started.disposition == .delivered, "\(started.error ?? "") \(String(describing: started.response))")
            #expect(started.response?.messageName?.hasPrefix("projects/islet-sim/messages/") == true)
            let update = AndroidDataPush(
                event: .update, activityID: "order-1", activityType: "DeliveryAttributes", contentState: ["status": "on the way", "eta": 10])
            #expect(try await rig.send(update, to: Self.phone, last: 1_800_000_000).disposition == .delivered)
            var activity = try #require(rig.simulator.engine.devices()[Self.phone]?.activities["order-1"])
            #expect(activity.contentState == ["status": "on the way", "eta": 10])
            #expect(activity.attributes == ["order": "A1"])
            #expect(activity.updates == 1)
            // An older message (one that waited) is dropped by the device, though FCM took it.
            let stale = AndroidDataPush(
                event: .update, activityID: "order-1", activityType: "DeliveryAttributes", contentState: ["status": "old", "eta": 99])
            #expect(try await rig.send(stale, to: Self.phone).disposition == .delivered)
            #expect(rig.simulator.engine.records().last?.deviceNote?.hasPrefix("dropped: timestamp") == true)
            let end = AndroidDataPush(event: .end, activityID: "order-1", activityType: "DeliveryAttributes")
            #expect(try await rig.send(end, to: Self.phone, last: 1_800_000_001).disposition == .delivered)
            activity = try #require(rig.simulator.engine.devices()[Self.phone]?.activities["order-1"])
            #expect(activity.ended)
            #expect(activity.contentState == ["status": "on the way", "eta": 10])
            let android = rig.simulator.engine.records().first?.android
            #expect(android == ["priority": "high", "ttl": "3600s", "collapse_key": "islet-order-1"])
        }
    }

    @Test func faultsAndDeadTokensComeBackAsFCMSaysThem() async throws {
        try await Self.with { rig in
            let update = AndroidDataPush(event: .start, activityID: "o", activityType: "T", contentState: ["a": 1], attributes: ["b": 1])
            rig.simulator.engine.inject(.quotaExceeded, retryAfter: 90)
            rig.simulator.engine.inject(.unavailable)
            rig.simulator.engine.inject(.internalError)
            rig.simulator.engine.inject(.thirdPartyAuthError)
            var dispositions: [TransportDisposition] = []
            for _ in 0..<4 { dispositions.append(try await rig.send(update, to: Self.phone).disposition) }
            #expect(dispositions == [.retryLater(after: 90), .retry, .retry, .credentialsRejected])
            rig.simulator.engine.unregister(Self.phone)
            let dead = try await rig.send(update, to: Self.phone)
            #expect(dead.disposition == .tokenDead(since: nil))
            #expect(dead.response?.errorCode == "UNREGISTERED")
            let malformed = try await rig.send(update, to: "short")
            #expect(malformed.disposition == .tokenDead(since: nil))
            #expect(malformed.response?.tokenInvalid == true)
        }
    }

    @Test func theTokenEndpointChecksTheAssertionAndTokensExpire() async throws {
        try await Self.with { rig in
            let update = AndroidDataPush(event: .start, activityID: "o", activityType: "T", contentState: ["a": 1], attributes: ["b": 1])
            #expect(try await rig.send(update, to: Self.phone).disposition == .delivered)
            // An hour later the access token is refused; the client gets a new one
            // (its own clock says the old one is too old anyway).
            rig.clock.advance(by: 3601)
            let later = AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: ["a": 2])
            #expect(try await rig.send(later, to: Self.phone, last: 1_800_000_000).disposition == .delivered)
            #expect(await rig.tokens.exchanges == 2)

            // Another key for the same account is refused at the token endpoint.
            var forged = rig.account
            forged.privateKeyPEM = try RSA.SigningKey.generate().pemRepresentation
            let tokens = try FCMAccessTokens(account: forged, exchange: CurlTokenExchange(client: rig.http), clock: rig.clock)
            let refused = await rig.client.send(
                FCMMessage(token: Self.phone, data: ["x": "1"], priority: "normal", ttl: 60, collapseKey: nil), account: forged,
                tokens: tokens)
            #expect(refused.disposition == .credentialsRejected)
            #expect(refused.error?.contains("Invalid JWT Signature") == true, "\(refused.error ?? "")")
            // An account the simulator does not know, likewise.
            var stranger = rig.account
            stranger.clientEmail = "someone@else.iam.gserviceaccount.com"
            let unknown = try FCMAccessTokens(account: stranger, exchange: CurlTokenExchange(client: rig.http), clock: rig.clock)
            #expect(await rig.client.send(
                FCMMessage(token: Self.phone, data: [:], priority: "normal", ttl: 60, collapseKey: nil), account: stranger,
                tokens: unknown).disposition == .credentialsRejected)
            // A token for one project does not send for another.
            var other = rig.account
            other.projectID = "another-project"
            let denied = await rig.client.send(
                FCMMessage(token: Self.phone, data: [:], priority: "normal", ttl: 60, collapseKey: nil), account: other,
                tokens: rig.tokens)
            #expect(denied.disposition == .credentialsRejected)
            #expect(denied.response?.errorCode == "PERMISSION_DENIED")
        }
    }

    @Test func aMessageOfTheWrongShapeIsRefusedNamingTheField() async throws {
        try await Self.with { rig in
            let token = try await rig.tokens.token()
            let h2 = try HTTP2Client(configuration: HTTP2ClientConfiguration(
                host: "127.0.0.1", port: rig.simulator.port, tls: TLSClientConfiguration(trustRootsPEM: rig.simulator.caCertificatePEM)))
            func send(_ body: String) async throws -> (Int, JSONValue) {
                let answer = try await h2.send(HTTP2Request(
                    method: "POST", path: "/v1/projects/islet-sim/messages:send",
                    headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")], body: Data(body.utf8)))
                return (answer.status, (try? JSONValue(parsing: answer.body)) ?? .null)
            }
            func violation(_ json: JSONValue) -> String? {
                json["error"]?["details"]?.arrayValue?.compactMap { $0["fieldViolations"]?.arrayValue?.first?["field"]?.stringValue }.first
            }
            var (status, json) = try await send(#"{"message":{"token":"\#(Self.phone)","data":{"eta":5}}}"#)
            #expect(status == 400 && violation(json) == "message.data[eta].value", "\(json)")
            (status, json) = try await send(#"{"message":{"data":{"a":"b"}}}"#)
            #expect(status == 400 && violation(json) == "message.token")
            (status, json) = try await send(#"{"message":{"token":"\#(Self.phone)","android":{"ttl":"an hour"}}}"#)
            #expect(status == 400 && violation(json) == "message.android.ttl")
            (status, json) = try await send(#"{"message":{"token":"\#(Self.phone)","data":{"big":"\#(String(repeating: "x", count: 4100))"}}}"#)
            #expect(status == 400 && violation(json) == "message.data")
            (status, json) = try await send(#"{"message":{"token":"\#(Self.phone)","apns_stuff":{}}}"#)
            #expect(status == 400 && json["error"]?["status"] == "INVALID_ARGUMENT")
            (status, _) = try await send(#"{"message":{"token":"\#(Self.phone)","data":{"a":"b"}}}"#)
            #expect(status == 200)
            await h2.shutdown()
        }
    }
}
