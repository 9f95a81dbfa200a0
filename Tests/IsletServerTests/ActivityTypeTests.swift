import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

@Suite("Activity types: schemas enforced through the API, checked by the simulated device")
struct ActivityTypeTests {
    static let delivery: JSONValue = [
        "attributes": ["order": ["type": "string"]],
        "content_state": [
            "status": ["type": "string", "enum": ["preparing", "on_the_way", "delivered"]],
            "eta": ["type": "date"],
            "stops": ["type": "int"],
            "courier": ["type": "object", "required": false, "nullable": true, "fields": ["name": ["type": "string"]]],
        ],
    ]

    func register(_ h: ServerHarness, _ app: TestApp, _ name: String = "DeliveryAttributes", _ schema: JSONValue = delivery) async throws -> Reply {
        try await h.call("PUT", "/v1/apps/\(app.id)/activity-types/\(name)", key: app.serverKey, json: schema)
    }

    func start(_ h: ServerHarness, _ app: TestApp, _ id: String, state: JSONValue, type: String = "DeliveryAttributes") async throws -> Reply {
        try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
            "activity_id": .string(id), "activity_type": .string(type), "attributes": ["order": "42"],
            "content_state": state, "alert": ["title": "Order 42", "body": "Preparing"], "audience": ["user_ids": ["user-1"]],
        ])
    }

    @Test func typesAreStoredReadListedAndDeleted() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let created = try await register(h, app)
            #expect(created.status == 201)
            #expect(created["content_state"]?["eta"]?["required"] == true)
            #expect(created["format"] == "activitykit")
            #expect(try await register(h, app).status == 200)
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey)
            #expect(shown["content_state"]?["status"]?["enum"] == ["preparing", "on_the_way", "delivered"])
            let listed = try await h.call("GET", "/v1/apps/\(app.id)/activity-types", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.count == 1)
            let bad = try await register(h, app, "Broken", [
                "attributes": [:], "content_state": ["eta": ["type": "datetime"], "n": ["type": "int", "enum": ["a"]]],
                "extra": true,
            ])
            #expect(bad.status == 422)
            #expect(Set(bad.errorFields) == ["content_state.eta.type", "content_state.n.enum", "extra"])
            #expect(try await h.call("DELETE", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey).status == 204)
            #expect(try await h.call("DELETE", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey).status == 404)
        }
    }

    @Test func contentTheDeviceCouldNotDecodeIsRefusedWithItsPath() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            _ = try await register(h, app)
            let good: [String: JSONValue] = ["status": "preparing", "eta": "2030-03-17T17:46:40Z", "stops": 3]
            func state(_ changes: [String: JSONValue?]) -> JSONValue {
                var members = good
                for (key, value) in changes { members[key] = value }
                return .object(members)
            }
            let cases: [(JSONValue, String)] = [
                (state(["stops": 2.5]), "content_state.stops"),
                (state(["eta": .null]), "content_state.eta"),
                (state(["eta": nil]), "content_state.eta"),
                (state(["status": "lost"]), "content_state.status"),
                (state(["eta": 1_900_000_000_000]), "content_state.eta"),
                (state(["courier": ["name": 1]]), "content_state.courier.name"),
            ]
            for (body, path) in cases {
                let reply = try await start(h, app, "order-x", state: body)
                #expect(reply.status == 422, "\(body.jsonText)")
                #expect(reply.errorFields == [path], "\(body.jsonText): \(reply.json.jsonText)")
            }
            let wrongAttributes = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "order-y", "activity_type": "DeliveryAttributes", "attributes": ["order": 42],
                "content_state": .object(good), "alert": ["title": "T", "body": "B"], "audience": ["user_ids": ["user-1"]],
            ])
            #expect(wrongAttributes.errorFields == ["attributes.order"])

            // Unknown keys pass (the device ignores them) and are listed as warnings.
            let started = try await start(h, app, "order-1", state: state(["colour": "red"]))
            #expect(started.status == 202)
            #expect(started["warnings"]?.arrayValue?.compactMap(\.stringValue) == [
                "content_state.colour: is not a property of the app's type; the device ignores it",
            ])
            // The device got the date in Swift's default encoding, and decoded it.
            let pushes = try await h.settledPushes(app, "order-1", count: 1)
            #expect(pushes.first?["status"] == "sent")
            let received = try #require(h.sandbox.engine.pushes().last?.payload?["aps"]?["content-state"])
            #expect(received["eta"] == .integer(1_900_000_000 - 978_307_200))
            #expect(h.sandbox.engine.activities().count == 1)

            // Updates are checked too.
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
            let badUpdate = try await h.update(app, "order-1", state: state(["stops": "three"]))
            #expect(badUpdate.errorFields == ["content_state.stops"])
        }
    }

    @Test func theSimulatedDeviceDropsWhatItCannotDecode() async throws {
        try await ServerHarness.with(simulators: { $0.inspectPort = 0 }) { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            // The device knows the type; Islet does not (yet): the mistake gets through
            // APNs, and the simulated device says why it dropped it.
            var schema = Self.delivery.objectValue!
            schema["attributes_type"] = "DeliveryAttributes"
            let posted = try await httpRequest(
                port: try #require(try inspectionPort(h)), method: "POST", path: "/schemas",
                headers: ["Content-Type": "application/json"], body: Data(JSONValue.object(schema).jsonText.utf8))
            #expect(posted.status == 201)
            let reply = try await start(h, app, "order-1", state: ["status": "preparing", "eta": "soon", "stops": 1])
            #expect(reply.status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 1)
            let record = try #require(h.sandbox.engine.pushes().last)
            #expect(record.answer.status == 200)
            #expect(record.deviceOutcome == .dropped)
            #expect(record.deviceNote?.contains("content_state.eta") == true)
            #expect(h.sandbox.engine.activities().isEmpty)
            // Registered with Islet too, the same mistake never leaves.
            _ = try await register(h, app)
            let refused = try await start(h, app, "order-2", state: ["status": "preparing", "eta": "soon", "stops": 1])
            #expect(refused.errorFields == ["content_state.eta"])
            // And what Islet prepares, the device decodes.
            #expect(try await start(h, app, "order-3", state: ["status": "preparing", "eta": 1_900_000_000, "stops": 1]).status == 202)
            _ = try await h.settledPushes(app, "order-3", count: 1)
            #expect(h.sandbox.engine.pushes().last?.deviceOutcome == .started)
        }
    }

    func inspectionPort(_ h: ServerHarness) throws -> Int? { h.sandbox.inspectPort }

    @Test func expoWidgetsStatesAreWrappedAndSizedWrapped() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", activityType: "ReceiptTracking", userID: "user-1")
            let registered = try await register(h, app, "ReceiptTracking", [
                "format": "expo-widgets", "widget_name": "ReceiptTracking",
                "attributes": [:], "content_state": ["stage": ["type": "string"], "summary": ["type": "string", "required": false, "nullable": true]],
            ])
            #expect(registered.status == 201)
            let noWidget = try await register(h, app, "Other", ["format": "expo-widgets", "attributes": [:], "content_state": [:]])
            #expect(noWidget.errorFields == ["widget_name"])
            let started = try await start(h, app, "receipt-1", state: ["stage": "received"], type: "ReceiptTracking")
            #expect(started.status == 202, "\(started.json.jsonText)")
            _ = try await h.settledPushes(app, "receipt-1", count: 1)
            let aps = try #require(h.sandbox.engine.pushes().last?.payload?["aps"])
            #expect(aps["attributes-type"] == "LiveActivityAttributes")
            #expect(aps["content-state"]?["name"] == "ReceiptTracking")
            let props = try #require(aps["content-state"]?["props"]?.stringValue)
            #expect(try JSONValue(parsing: Data(props.utf8)) == ["stage": "received"])
            // The activity keeps the app's own shape.
            let shown = try await h.call("GET", "/v1/apps/\(app.id)/activities/receipt-1", key: app.serverKey)
            #expect(shown["content_state"] == ["stage": "received"])

            // 4 KB is checked on the wrapped payload: quotes double when wrapped.
            let token = try await h.simulatedUpdateToken(activityID: "receipt-1")
            try await h.registerUpdateToken(app, "phone-1", "receipt-1", token: token, activityType: "ReceiptTracking")
            let quotes = String(repeating: "\"", count: 1_100)
            let unwrappedSize = JSONValue.object(["aps": ["content-state": ["stage": .string(quotes)]]]).jsonText.utf8.count
            #expect(unwrappedSize < 4_096)
            let tooBig = try await h.update(app, "receipt-1", state: ["stage": .string(quotes)])
            #expect(tooBig.status == 422)
            #expect(tooBig.errorFields == ["content_state"])
            #expect(tooBig["detail"]?.stringValue?.contains("4,096 for a device's own update token") == true, "\(tooBig.json)")
        }
    }

    @Test func strictTypesRefuseUnregisteredStarts() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", activityType: "DelivryAttributes", userID: "user-1")
            let patched = try await h.call(
                "PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: ["strict_activity_types": true])
            #expect(patched["strict_activity_types"] == true)
            let typo = try await start(h, app, "order-1", state: ["status": "preparing"], type: "DelivryAttributes")
            #expect(typo.status == 422)
            #expect(typo.errorFields == ["activity_type"])
            _ = try await register(h, app, "DelivryAttributes", ["attributes": [:], "content_state": ["status": ["type": "string"]]])
            #expect(try await start(h, app, "order-1", state: ["status": "preparing"], type: "DelivryAttributes").status == 202)
        }
    }

    @Test func changesThatBreakRunningActivitiesNeedForce() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            _ = try await register(h, app)
            #expect(try await start(h, app, "order-1", state: ["status": "preparing", "eta": 1_900_000_000, "stops": 1]).status == 202)
            var schema = Self.delivery.objectValue!
            var state = schema["content_state"]!.objectValue!
            state["driver"] = ["type": "string"]
            schema["content_state"] = .object(state)
            let refused = try await register(h, app, "DeliveryAttributes", .object(schema))
            #expect(refused.status == 409)
            #expect(refused.errorFields == ["content_state.driver"])
            #expect(refused["detail"]?.stringValue?.contains("1 running activity") == true)
            // An optional field breaks nothing.
            state["driver"] = ["type": "string", "required": false, "nullable": true]
            schema["content_state"] = .object(state)
            #expect(try await register(h, app, "DeliveryAttributes", .object(schema)).status == 200)
            // Forced, the change is stored and named.
            state["driver"] = ["type": "string"]
            schema["content_state"] = .object(state)
            schema["force"] = true
            let forced = try await register(h, app, "DeliveryAttributes", .object(schema))
            #expect(forced.status == 200)
            #expect(forced["breaking_changes"]?.arrayValue?.compactMap(\.stringValue) == [
                "content_state.driver: becomes required", "content_state.driver: no longer takes null",
            ])
        }
    }

    @Test(.requires(.processes)) func theAppsSwiftSourceBecomesTheTypeIsletEnforces() async throws {
        let executable = builtProductPath("islet")
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await ServerHarness.with { h in
            let source = """
                import ActivityKit

                /// The widget's attributes.
                struct MatchAttributes: ActivityAttributes {
                    public struct ContentState: Codable, Hashable {
                        var home: Int
                        var away: Int
                        var period: Period
                        var lastGoal: Date?
                    }
                    var homeTeam: String
                    var awayTeam: String
                }

                enum Period: String, Codable { case first, second, extraTime = "extra_time" }
                """
            let file = h.directory.appendingPathComponent("MatchAttributes.swift")
            try source.write(to: file, atomically: true, encoding: .utf8)
            let printed = try await runCommand(executable, ["schema", "from-swift", file.path])
            #expect(printed.status == 0, "\(printed.error)")
            let schema = try JSONValue(parsing: Data(printed.output.utf8))
            #expect(schema["content_state"]?["lastGoal"]?["required"] == false)
            let app = try await h.createApp()
            let stored = try await h.call("PUT", "/v1/apps/\(app.id)/activity-types/MatchAttributes", key: app.serverKey, json: schema)
            #expect(stored.status == 201, "\(stored.json.jsonText)")
            try await h.registerStartable(app, "phone-1", activityType: "MatchAttributes", userID: "user-1")
            let wrongPeriod = try await start(
                h, app, "final", state: ["home": 0, "away": 0, "period": "third"], type: "MatchAttributes")
            // The start helper's attributes carry only "order": the type needs the teams.
            #expect(wrongPeriod.status == 422)
            #expect(Set(wrongPeriod.errorFields) == ["attributes.awayTeam", "attributes.homeTeam", "content_state.period"])

            let broken = h.directory.appendingPathComponent("Broken.swift")
            try "struct A: ActivityAttributes { struct ContentState: Codable, Hashable { var v: Vehicle }; var x: Int }"
                .write(to: broken, atomically: true, encoding: .utf8)
            let refused = try await runCommand(executable, ["schema", "from-swift", broken.path])
            #expect(refused.status == 1)
            #expect(refused.error.contains("content_state.v: type Vehicle is not defined in this file"))
        }
    }
}
