import Delivery
import FCM
import Foundation
import HTTPClient
import IsletCore
import IsletCrypto
import IsletLog
import IsletSync
import IsletTesting
import Simulators
import Storage
import Testing

/// Android data messages through the delivery worker: queued as pushes of token kind
/// `fcm`, sent by `FCMTransport` (routed beside APNs by `PushTransports`) to the FCM
/// simulator over HTTP/2, and settled by the one delivery policy.
@Suite("FCM transport: Android pushes through the delivery worker", .timeLimit(.minutes(1)))
struct FCMTransportTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    static let pixel = "fcm-pixel-token-0000000001:APA91b"
    static let gone = "fcm-gone-token-00000000002:APA91b"

    @Test func anActivitysDataMessagesReachTheAndroidDeviceAndADeadTokenMarksItUnreachable() async throws {
        let clock = ManualWallClock(start: now)
        try await FCMRig.with(clock: clock, seed: 3) { rig in
            rig.trustAccount()
            rig.simulator.engine.unregister(Self.gone)
            try await run(rig: rig, clock: clock)
        }
    }

    private func run(rig: FCMRig, clock: ManualWallClock) async throws {
        let (simulator, http, client) = (rig.simulator, rig.http, rig.client)
        try await withDeliveryStore { store in
            let now = self.now
            try store.writeNow { session in
                try rig.insertApp(session, now: now)
                for (device, token) in [("pixel", Self.pixel), ("gone", Self.gone)] {
                    var registration = DeviceRegistration(
                        platform: "android", environment: .production, apnsToken: nil, userID: nil, tags: nil)
                    registration.fcmToken = token
                    _ = try session.insertDevice(appID: "app_1", deviceID: device, registration, secretHash: nil, now: now)
                }
                _ = try session.insertActivity(
                    appID: "app_1", activityID: "order-1", activityType: "Delivery", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: now)
                let built = try AndroidDataPush(
                    event: .start, activityID: "order-1", activityType: "Delivery", contentState: ["eta": 5],
                    attributes: ["order": "A1"]
                ).build(now: now, lastTimestamp: nil)
                let content = SendContent(
                    event: .start, topic: "fcm", pushType: .liveactivity, priority: .immediate,
                    expiration: Int64(now.timeIntervalSince1970) + 600, collapseID: built.collapseKey,
                    payload: Data(JSONValue.object(built.data.mapValues(JSONValue.string)).jsonText.utf8))
                let sendID = try session.insertSend(appID: "app_1", activityID: "order-1", content: content, now: now)
                try session.enqueuePushes(
                    sendID: sendID, appID: "app_1", activityID: "order-1", activityType: "Delivery", event: .start,
                    tokenKind: .fcm,
                    targets: [
                        PushTarget(deviceID: "pixel", token: Self.pixel, environment: .production),
                        PushTarget(deviceID: "gone", token: Self.gone, environment: .production),
                    ],
                    now: now, mintID: { UUID().uuidString.lowercased() })
            }
            // An APNs push would go elsewhere: the APNs side here answers nothing it is not given.
            let apns = FakeTransport { _ in TransportResult(disposition: .delivered, status: 200, attempts: 1) }
            let transport = PushTransports(
                apns: apns,
                fcm: FCMTransport(
                    client: client, store: store, exchange: CurlTokenExchange(client: http), clock: clock,
                    allowPrivateTokenURIs: true))
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: DeliveryConfiguration(shutdownGrace: 10), clock: clock,
                sleeper: clock, logger: Logger(sink: MemoryLogSink()))
            try worker.prepare()
            let running = Task { await worker.run() }
            worker.wake()
            let settled = try await eventually {
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "order-1", since: now.addingTimeInterval(-1)) }
                    .allSatisfy { $0.status != .queued }
            }
            running.cancel()
            await running.value
            #expect(settled)
            #expect(apns.sent.withLock { $0.isEmpty })

            let pushes = try store.readNow { try $0.pushes(appID: "app_1", activityID: "order-1", since: now.addingTimeInterval(-1)) }
            let byDevice = Dictionary(uniqueKeysWithValues: pushes.map { ($0.deviceID, $0) })
            #expect(byDevice["pixel"]?.status == .sent)
            #expect(byDevice["pixel"]?.serviceMessageID?.hasPrefix("projects/islet-sim/messages/") == true)
            #expect(byDevice["gone"]?.status == .failed)
            #expect(byDevice["gone"]?.reason == "UNREGISTERED")
            #expect(byDevice["gone"]?.apnsStatus == 404)

            // The Android app shows the activity, built from the data message.
            let shown = try #require(simulator.engine.devices()[Self.pixel]?.activities["order-1"])
            #expect(shown.contentState == ["eta": 5])
            #expect(shown.attributes == ["order": "A1"])
            let record = try #require(simulator.engine.records().first { $0.token == Self.pixel })
            #expect(record.android?["priority"] == "high")
            #expect(record.android?["ttl"] == "600s")
            #expect(record.android?["collapse_key"] == "islet-order-1")

            // The dead token: the device is unreachable until it registers anew.
            let devices = try store.readNow { session in
                (try session.device(appID: "app_1", deviceID: "gone"), try session.device(appID: "app_1", deviceID: "pixel"))
            }
            #expect(devices.0?.unreachableAt != nil)
            #expect(devices.1?.unreachableAt == nil)
            let events = try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 100) }
            let rejected = try #require(events.first { $0.type == "token.rejected" })
            #expect(rejected.data["action"] == "device_marked_unreachable")
            #expect(rejected.data["token_kind"] == "fcm")
            #expect(events.contains { $0.type == "device.unreachable" })

            // The account's access tokens revoked (its key rotated, say): the next
            // message is refused once, and the delivery policy, not the client,
            // sends it again at once with a new token.
            simulator.engine.revokeAccessTokens()
            let sentBefore = simulator.engine.records().count
            try store.writeNow { session in
                let built = try AndroidDataPush(
                    event: .update, activityID: "order-1", activityType: "Delivery", contentState: ["eta": 3], attributes: nil
                ).build(now: now.addingTimeInterval(1), lastTimestamp: nil)
                let content = SendContent(
                    event: .update, topic: "fcm", pushType: .liveactivity, priority: .immediate,
                    expiration: Int64(now.timeIntervalSince1970) + 600, collapseID: built.collapseKey,
                    payload: Data(JSONValue.object(built.data.mapValues(JSONValue.string)).jsonText.utf8))
                let sendID = try session.insertSend(appID: "app_1", activityID: "order-1", content: content, now: now)
                try session.enqueuePushes(
                    sendID: sendID, appID: "app_1", activityID: "order-1", activityType: "Delivery", event: .update,
                    tokenKind: .fcm, targets: [PushTarget(deviceID: "pixel", token: Self.pixel, environment: .production)],
                    now: now, mintID: { UUID().uuidString.lowercased() })
            }
            let again = DeliveryWorker(
                store: store, transport: transport, configuration: DeliveryConfiguration(shutdownGrace: 10), clock: clock,
                sleeper: clock, logger: Logger(sink: MemoryLogSink()))
            try again.prepare()
            let rerunning = Task { await again.run() }
            again.wake()
            let resent = try await eventually {
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "order-1", since: now.addingTimeInterval(-1)) }
                    .allSatisfy { $0.status != .queued }
            }
            rerunning.cancel()
            await rerunning.value
            #expect(resent)
            let update = try #require(
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "order-1", since: now.addingTimeInterval(-1)) }
                    .first { $0.event == .update })
            #expect(update.status == .sent)
            #expect(update.attempts == 2)
            // The refused attempt left no message (FCM records what it takes).
            #expect(simulator.engine.records().dropFirst(sentBefore).map(\.status) == [200])
            #expect(simulator.engine.devices()[Self.pixel]?.activities["order-1"]?.contentState == ["eta": 3])
        }
    }

    @Test func aMessageIsBuiltFromItsStoredContentAndLivesFourWeeksAtMost() throws {
        var push = claimedPush(kind: .fcm, event: .update, activityID: "o", createdAt: now)
        push.content.payload = Data(#"{"islet_event":"update","content_state":"{\"eta\":3}"}"#.utf8)
        push.content.priority = .powerConsidered
        push.content.collapseID = "islet-o"
        push.content.expiration = Int64(now.timeIntervalSince1970) + 90
        let message = try #require(FCMTransport.message(push, now: now))
        #expect(message.data == ["islet_event": "update", "content_state": #"{"eta":3}"#])
        #expect(message.priority == "normal")
        #expect(message.ttl == 90)
        #expect(message.collapseKey == "islet-o")
        push.content.expiration = Int64(now.timeIntervalSince1970) + 90 * 86_400
        #expect(FCMTransport.maxTTL == 2_419_200)
        #expect(FCMTransport.message(push, now: now)?.ttl == FCMTransport.maxTTL)
        push.content.expiration = nil
        #expect(FCMTransport.message(push, now: now)?.ttl == FCMTransport.defaultTTL)
        push.content.priority = .immediate
        #expect(FCMTransport.message(push, now: now)?.priority == "high")
        // Data that is not an object of strings is no message.
        push.content.payload = Data(#"{"eta":3}"#.utf8)
        #expect(FCMTransport.message(push, now: now) == nil)
    }
}
