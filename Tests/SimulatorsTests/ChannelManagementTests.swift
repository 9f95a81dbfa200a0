import Foundation
import IsletCore
import IsletCrypto
import Simulators
import Testing

@Suite("Simulator: the channel management API of broadcast channels")
struct ChannelManagementTests {
    static let path = "/1/apps/com.example.app/channels"
    static let liveActivity: JSONValue = ["message-storage-policy": 1, "push-type": "LiveActivity"]

    private func body(_ response: SimulatorResponse) -> JSONValue? {
        try? JSONValue(parsing: response.body)
    }

    @Test func aChannelIsCreatedReadListedAndDeleted() throws {
        let sim = try SimulatorHarness()
        let requestID = "8f1c7a2e-4b9d-4e6a-9c3f-2d1e0b7a5c44"
        let created = sim.manage("POST", Self.path, body: Self.liveActivity, headers: [("apns-request-id", requestID)])
        #expect(created.status == 201)
        #expect(created.body.isEmpty)
        #expect(created.header("apns-request-id") == requestID)
        let id = try #require(created.header("apns-channel-id"))
        #expect(Data(base64Encoded: id) != nil)
        // Without an apns-request-id, one is made.
        let other = sim.manage("POST", Self.path, body: ["message-storage-policy": 0, "push-type": "LiveActivity"])
        #expect(other.status == 201)
        #expect(other.header("apns-request-id").map(APNsMessageID.isUUID) == true)
        let otherID = try #require(other.header("apns-channel-id"))
        #expect(otherID != id)

        let read = sim.manage("GET", Self.path, headers: [("apns-channel-id", id)])
        #expect(read.status == 200)
        #expect(body(read) == ["message-storage-policy": 1, "push-type": "LiveActivity"])
        let list = sim.manage("GET", "/1/apps/com.example.app/all-channels")
        #expect(list.status == 200)
        #expect(body(list) == ["channels": [.string(id), .string(otherID)]])
        // Another app's list is its own.
        #expect(body(sim.manage("GET", "/1/apps/com.example.other/all-channels")) == ["channels": []])
        #expect(sim.engine.channels().map(\.id) == [id, otherID])

        let deleted = sim.manage("DELETE", Self.path, headers: [("apns-channel-id", id)])
        #expect(deleted.status == 204)
        #expect(deleted.body.isEmpty)
        let gone = sim.manage("GET", Self.path, headers: [("apns-channel-id", id)])
        #expect(gone.status == 400)
        #expect(gone.reason == .channelNotRegistered)
        #expect(body(gone) == ["reason": "ChannelNotRegistered"])
        #expect(body(sim.manage("GET", "/1/apps/com.example.app/all-channels")) == ["channels": [.string(otherID)]])
    }

    @Test func eachRefusalIsApplesReason() throws {
        let sim = try SimulatorHarness(channelLimit: 1)
        func reason(
            _ method: String, _ path: String = Self.path, body: JSONValue? = nil, headers: [(String, String)] = []
        ) -> APNsReason? {
            sim.manage(method, path, body: body, headers: headers).reason
        }
        #expect(reason("POST", "/1/apps/com.example.app/channel") == .badPath)
        #expect(reason("POST", "/3/device/abcd") == .badPath)
        #expect(reason("PUT") == .methodNotAllowed)
        #expect(reason("POST", "/1/apps/com.example.app/all-channels") == .methodNotAllowed)
        #expect(reason("POST", "/1/apps/com.example.app.push-type.liveactivity/channels", body: Self.liveActivity) == .topicDisallowed)
        #expect(reason("POST", body: nil) == .badRequestPayload)
        #expect(reason("POST", body: ["message-storage-policy": 1]) == .missingPushType)
        #expect(reason("POST", body: ["message-storage-policy": 1, "push-type": "Alert"]) == .invalidPushType)
        #expect(reason("POST", body: ["message-storage-policy": 2, "push-type": "LiveActivity"]) == .badRequestParams)
        #expect(reason("POST", body: ["message-storage-policy": 1, "push-type": "LiveActivity", "ttl": 5]) == .badRequestParams)
        #expect(reason("GET") == .missingChannelId)
        #expect(reason("GET", headers: [("apns-channel-id", "not base64!")]) == .badChannelId)
        #expect(reason("DELETE", headers: [("apns-channel-id", "c29tZUNoYW5uZWw=")]) == .channelNotRegistered)
        // The limit.
        let first = sim.manage("POST", Self.path, body: Self.liveActivity)
        #expect(first.status == 201)
        #expect(reason("POST", body: Self.liveActivity) == .cannotCreateChannelConfig)
        // Another app's channel is not this app's.
        let id = try #require(first.header("apns-channel-id"))
        #expect(reason("GET", "/1/apps/com.example.other/channels", headers: [("apns-channel-id", id)]) == .channelNotRegistered)
        // The provider token is checked as for pushes.
        let forged = try SimulatorHarness.jwt(
            key: try P256.SigningKey.generate(), keyID: SimulatorHarness.keyID, teamID: SimulatorHarness.teamID, issuedAt: sim.clock.now())
        #expect(sim.manage("GET", "/1/apps/com.example.app/all-channels", providerToken: forged, connection: 10).reason == .invalidProviderToken)
        let unauthenticated = sim.engine.handleChannelRequest(
            SimulatorRequest(method: "GET", path: "/1/apps/com.example.app/all-channels", headers: [], body: Data()),
            connection: ConnectionID(11))
        #expect(unauthenticated.status == 403)
        #expect(unauthenticated.reason == .missingProviderToken)
    }

    @Test func anAppWithoutTheBroadcastCapabilityIsRefused() throws {
        let sim = try SimulatorHarness(broadcastEnabled: false)
        let refused = sim.manage("POST", Self.path, body: Self.liveActivity)
        #expect(refused.status == 400)
        #expect(refused.reason == .featureNotEnabled)
    }

    @Test func theCommandLineServesTheAPIOnItsOwnPort() throws {
        #expect(try SimulatorCommandLine.parse([]).options.channelsPort == 2195)
        #expect(try SimulatorCommandLine.parse(["--channels-port", "0"]).options.channelsPort == 0)
        #expect(APNsSimulatorOptions().channelsPort == nil)
        let line = try SimulatorCommandLine.parse([]).banner(apnsPort: 2197, inspectPort: 2198, channelsPort: 2195, wroteCA: false)
        #expect(line.hasPrefix("islet sim: APNs (sandbox) on https://127.0.0.1:2197, channels on https://127.0.0.1:2195, inspection on"))
    }
}
