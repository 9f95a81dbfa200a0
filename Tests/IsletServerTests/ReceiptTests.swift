import Foundation
import IsletCore
import Testing

/// Receipts over HTTP: a type with receipts on has each send name itself in the
/// content state the simulated phone shows; the device posts it back, and the
/// receipt shows on the copy, the activity's sends, its pushes, the events and
/// `/metrics`.
@Suite("Receipts through the API")
struct ReceiptTests {
    static let schema: JSONValue = [
        "attributes": ["order": ["type": "string"]],
        "content_state": ["status": ["type": "string"], "eta": ["type": "int"]],
    ]

    func register(_ h: ServerHarness, _ app: TestApp, receipts: Bool, schema: JSONValue = schema) async throws -> Reply {
        var body = schema.objectValue ?? [:]
        body["receipts"] = .bool(receipts)
        return try await h.call(
            "PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey, json: .object(body))
    }

    /// The send id the simulated phone's copy of `activityID` carries now, once it
    /// carries one other than `after`.
    func shownSendID(_ h: ServerHarness, _ activityID: String, after: String? = nil) async throws -> String? {
        var shown: String?
        _ = try await h.eventually {
            shown = h.sandbox.engine.activities().first {
                $0.attributes?["islet_activity_id"]?.stringValue == activityID
            }?.contentState?["islet"]?["send_id"]?.stringValue
            return shown != nil && shown != after
        }
        return shown
    }

    @Test func aTypeWithReceiptsNamesEachSendAndTheDeviceSaysWhatItShowed() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let registered = try await register(h, app, receipts: true)
            #expect(registered.status == 201 && registered["receipts"] == true, "\(registered.json)")

            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            let started = try #require(try await shownSendID(h, "order-1"))
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            let updated = try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10])
            #expect(updated.status == 202, "\(updated.json)")
            let shown = try #require(try await shownSendID(h, "order-1", after: started))
            #expect(Int64(shown) ?? 0 > Int64(started) ?? 0)

            func receipt(_ body: JSONValue, device: String = "phone-1", activity: String = "order-1") async throws -> Reply {
                try await h.call(
                    "POST", "/v1/apps/\(app.id)/devices/\(device)/activities/\(activity)/receipts", key: app.deviceKey,
                    json: body, headers: h.secretHeader(app, device))
            }
            let at = h.clock.now().addingTimeInterval(-2)
            let first = try await receipt(["send_id": .string(shown), "received_at": .string(RFC3339.string(at))])
            #expect(first.status == 201, "\(first.json)")
            #expect(first["send_id"]?.stringValue == shown && first["received_at"]?.stringValue == RFC3339.string(at))
            // Again, later: answered alike, counted once.
            let again = try await receipt(["send_id": .string(shown)])
            #expect(again.status == 201 && again["received_at"]?.stringValue == RFC3339.string(at), "\(again.json)")
            // The start's receipt, late: counted, and the copy keeps the newest.
            #expect(try await receipt(["send_id": .string(started)]).status == 201)

            let activity = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            let copy = try #require(activity["devices"]?.arrayValue?.first)
            #expect(copy["last_received_send_id"]?.stringValue == shown, "\(copy)")
            #expect(copy["last_received_at"]?.stringValue == RFC3339.string(at))
            let sends = activity["sends"]?.arrayValue ?? []
            let update = try #require(sends.first { $0["send_id"]?.stringValue == shown }, "\(activity.json)")
            #expect(update["event"] == "update" && update["targets"] == 1 && update["received"] == 1, "\(update)")
            #expect(sends.first { $0["send_id"]?.stringValue == started }?["received"] == 1)
            let pushes = try await h.settledPushes(app, "order-1", count: 2)
            let pushed = try #require(pushes.first { $0["send_id"]?.stringValue == shown }, "\(pushes)")
            #expect(pushed["received_at"]?.stringValue == RFC3339.string(at))
            let events = try await h.call("GET", "/v1/apps/\(app.id)/events?types=activity.received", key: app.serverKey)
            let received = events["items"]?.arrayValue ?? []
            #expect(received.count == 2, "\(events.json)")
            #expect(received.first?["data"]?["send_id"]?.stringValue == shown)
            #expect(received.first?["data"]?["device_id"] == "phone-1")
            let metrics = try await h.call("GET", "/metrics", key: nil)
            let line = "islet_receipts_total{node=\"\(h.nodeID)\",app=\"\(app.id)\"} 2"
            #expect(metrics.json.stringValue?.contains(line) == true, "\(metrics.json.stringValue ?? "")")

            // A send of no activity of the device's, a day ahead, a device without
            // the activity: refused, each naming what is wrong.
            for bad in ["0", "-1", "007", "abc", "99999999999"] {
                let refused = try await receipt(["send_id": .string(bad)])
                #expect(refused.status == 422 && refused.errorFields == ["send_id"], "\(bad): \(refused.json)")
            }
            let ahead = h.clock.now().addingTimeInterval(86_400)
            let early = try await receipt(["send_id": .string(shown), "received_at": .string(RFC3339.string(ahead))])
            #expect(early.status == 422 && early.errorFields == ["received_at"], "\(early.json)")
            try await h.registerDevice(app, "phone-2")
            #expect(try await receipt(["send_id": .string(shown)], device: "phone-2").status == 404)
            #expect(try await receipt([:]).errorFields == ["send_id"])
        }
    }

    @Test func theKeyIsIsletsOnceReceiptsAreOn() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            var claiming = Self.schema.objectValue ?? [:]
            claiming["content_state"] = ["status": ["type": "string"], "islet": ["type": "string"]]
            let refused = try await register(h, app, receipts: true, schema: .object(claiming))
            #expect(refused.status == 422 && refused.errorFields == ["content_state.islet"], "\(refused.json)")
            // Without receipts the key is the app's.
            #expect(try await register(h, app, receipts: false, schema: .object(claiming)).status == 201)
            #expect(try await register(h, app, receipts: true).status == 200)
            func start(_ id: String, type: String = "DeliveryAttributes", state: JSONValue) async throws -> Reply {
                try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                    "activity_id": .string(id), "activity_type": .string(type), "attributes": ["order": "2"],
                    "content_state": state, "alert": ["title": "Order", "body": "Preparing"],
                    "audience": ["user_ids": ["user-1"]],
                ])
            }
            let claimed = try await start("order-2", state: ["status": "preparing", "eta": 25, "islet": "mine"])
            #expect(claimed.status == 422 && claimed.errorFields == ["content_state.islet"], "\(claimed.json)")
            try await h.registerStartable(app, "phone-2", activityType: "DeliverxAttributes", userID: "user-1")
            // The largest content state a type of the same name's length takes
            // without receipts (found by halving) is over the limit with them:
            // refused before anything is written, naming the content state.
            var fits = 0
            var over = 4_096
            while over - fits > 1 {
                let middle = (fits + over) / 2
                let plain = try await start(
                    "plain-\(middle)", type: "DeliverxAttributes",
                    state: ["status": .string(String(repeating: "x", count: middle)), "eta": 25])
                if plain.status == 202 { fits = middle } else { over = middle }
            }
            #expect(fits > 3_000)
            let large = try await start(
                "order-3", state: ["status": .string(String(repeating: "x", count: fits)), "eta": 25])
            #expect(large.status == 422 && large.errorFields.first?.hasPrefix("content_state") == true, "\(large.json)")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/activities/order-3", key: app.serverKey).status == 404)
        }
    }
}
