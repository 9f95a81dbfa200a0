// `ClaimedPush` has no public initializer (only a store makes one); the tests that
// build one by hand reach its memberwise one.
import Delivery
import Foundation
import IsletCore
@testable import Storage

/// A claimed push, with the fields a test varies.
func claimedPush(
    id: Int64 = 1, kind: PushTokenKind = .liveActivityUpdate, event: PushEvent = .update, activityID: String? = "act-1",
    environment: APNsEnvironment = .sandbox, switched: Bool = false, rounds: Int = 0, createdAt: Date
) -> ClaimedPush {
    ClaimedPush(
        id: id, appID: "app_1", activityID: activityID, activityType: kind == .pushToStart ? "Delivery" : nil,
        deviceID: "device-1", tokenKind: kind, token: String(repeating: "ab", count: 32), environment: environment,
        environmentSwitched: switched, apnsID: "5e5bd6c8-2d4e-4d3c-9f0a-2b6f1e0f7a11", attempts: 0, rounds: rounds,
        createdAt: createdAt,
        content: SendContent(
            event: event, topic: "com.example.app.push-type.liveactivity", pushType: .liveactivity, priority: .immediate,
            expiration: nil, collapseID: nil, payload: Data("{}".utf8)))
}
