import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Testing

@Suite("API rules: keys, tenants, idempotency, validation, OpenAPI, metrics")
struct APIRulesTests {
    @Test func keysAreCheckedByKindAndApp() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let devices = "/v1/apps/\(app.id)/devices/phone-1"
            let body = #"{"platform":"ios","environment":"sandbox"}"#
            #expect(try await h.call("PUT", devices, key: nil, body: body).status == 401)
            let missing = try await h.call("PUT", devices, key: nil, body: body)
            #expect(missing.headers["www-authenticate"]?.hasPrefix("Bearer") == true)
            #expect(try await h.call("PUT", devices, key: "islet_dk_nope", body: body).status == 401)
            #expect(try await h.call("PUT", devices, key: app.serverKey, body: body).status == 403)
            #expect(try await h.call("PUT", devices, key: ServerHarness.adminToken, body: body).status == 403)
            #expect(try await h.call("PUT", devices, key: app.deviceKey, body: body).status == 201)
            let activities = "/v1/apps/\(app.id)/activities"
            #expect(try await h.call("GET", activities, key: app.deviceKey).status == 403)
            #expect(try await h.call("GET", activities, key: app.serverKey).status == 200)
            #expect(try await h.call("GET", "/v1/apps", key: app.serverKey).status == 403)
            #expect(try await h.call("GET", "/v1/apps", key: "not-the-admin-token").status == 401)

            // Rotation: the old keys stop at once, the new ones work.
            let rotated = try await h.call("POST", "/v1/apps/\(app.id)/keys/rotate", key: ServerHarness.adminToken)
            #expect(rotated.status == 200)
            let newServerKey = try #require(rotated["server_key"]?.stringValue)
            #expect(try await h.call("GET", activities, key: app.serverKey).status == 401)
            #expect(try await h.call("GET", activities, key: newServerKey).status == 200)
        }
    }

    @Test func aTenantNeverSeesOrTouchesAnothersData() async throws {
        try await ServerHarness.with { h in
            let alpha = try await h.createApp(name: "Alpha", bundleID: "com.example.alpha")
            let beta = try await h.createApp(name: "Beta", bundleID: "com.example.beta")
            try await h.registerStartable(alpha, "phone-1", userID: "user-1")
            #expect(try await h.start(alpha, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            // Beta's keys on Alpha's paths: 404, as if nothing were there.
            let paths = [
                ("GET", "/v1/apps/\(alpha.id)/activities", beta.serverKey),
                ("GET", "/v1/apps/\(alpha.id)/activities/order-1", beta.serverKey),
                ("GET", "/v1/apps/\(alpha.id)/activities/order-1/pushes", beta.serverKey),
                ("POST", "/v1/apps/\(alpha.id)/activities/order-1/end", beta.serverKey),
                ("PUT", "/v1/apps/\(alpha.id)/devices/phone-1", beta.deviceKey),
                ("DELETE", "/v1/apps/\(alpha.id)/devices/phone-1/push-to-start/DeliveryAttributes", beta.deviceKey),
            ]
            for (method, path, key) in paths {
                let reply = try await h.call(method, path, key: key, body: method == "GET" || method == "DELETE" ? nil : "{}")
                #expect(reply.status == 404, "\(method) \(path)")
            }
            // Beta's own namespace holds none of Alpha's data, even under the same ids.
            #expect(try await h.call("GET", "/v1/apps/\(beta.id)/activities/order-1", key: beta.serverKey).status == 404)
            let betaList = try await h.call("GET", "/v1/apps/\(beta.id)/activities", key: beta.serverKey)
            #expect(betaList["items"]?.arrayValue?.isEmpty == true)
            let betaStart = try await h.start(beta, "order-1", audience: ["user_ids": ["user-1"]])
            #expect(betaStart.status == 422)
            // Alpha's activity is untouched.
            let shown = try await h.call("GET", "/v1/apps/\(alpha.id)/activities/order-1", key: alpha.serverKey)
            #expect(shown["status"]?.stringValue == "started")
        }
    }

    @Test func idempotencyKeyReplaysTheFirstAnswerAndSendsNothingTwice() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let headers = ["Idempotency-Key": "start-order-1"]
            let first = try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]], headers: headers)
            #expect(first.status == 202)
            #expect(first.headers["idempotent-replayed"] == nil)
            let second = try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]], headers: headers)
            #expect(second.status == 202)
            #expect(second.headers["idempotent-replayed"] == "true")
            #expect(second.json == first.json)
            #expect(try await h.settledPushes(app, "order-1").count == 1)
            // Another body with the same key is refused.
            let other = try await h.start(app, "order-9", audience: ["user_ids": ["user-1"]], headers: headers)
            #expect(other.status == 422)
            #expect(other.errorFields == ["Idempotency-Key"])
            // Updates too; after 24 hours the key may be used afresh.
            try await h.registerUpdateToken(app, "phone-1", "order-1", token: ServerHarness.token())
            let update = ["Idempotency-Key": "update-1"]
            #expect(try await h.update(app, "order-1", state: ["eta": 5], headers: update).status == 202)
            let replay = try await h.update(app, "order-1", state: ["eta": 5], headers: update)
            #expect(replay.headers["idempotent-replayed"] == "true")
            #expect(try await h.settledPushes(app, "order-1").count == 2)
            h.clock.advance(by: 24 * 3600 + 1)
            let fresh = try await h.update(app, "order-1", state: ["eta": 5], headers: update)
            #expect(fresh.headers["idempotent-replayed"] == nil)
            // (Past the update window by now, so the fresh request is judged anew.)
            #expect(fresh.status == 409)
        }
    }

    @Test func everyValidationErrorNamesItsField() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let start = "/v1/apps/\(app.id)/activities"
            let valid: [String: JSONValue] = [
                "activity_id": "order-1", "activity_type": "DeliveryAttributes", "attributes": ["order": "1"],
                "content_state": ["eta": 5], "alert": ["title": "T", "body": "B"], "audience": ["user_ids": ["user-1"]],
            ]
            func with(_ changes: [String: JSONValue?]) -> JSONValue {
                var body = valid
                for (key, value) in changes { body[key] = value }
                return .object(body)
            }
            let cases: [(JSONValue, [String])] = [
                (with(["stale_data": 1_900_000_000]), ["stale_data"]),
                (with(["alert": nil]), ["alert"]),
                (with(["alert": ["title": "T"]]), ["alert.body"]),
                (with(["alert": ["title": "T", "body": "B", "subtitle": "S"]]), ["alert.subtitle"]),
                (with(["audience": ["user_ids": ["u"], "tags": ["t"]]]), ["audience"]),
                (with(["audience": ["user_ids": []]]), ["audience.user_ids"]),
                (with(["audience": ["user_ids": .null]]), ["audience"]),
                (with(["audience": ["user_ids": .null, "tags": ["t"]]]), ["audience.user_ids"]),
                (with(["priority": 7]), ["priority"]),
                (with(["relevance_score": "high"]), ["relevance_score"]),
                (with(["stale_date": 1_900_000_000_000]), ["stale_date"]),
                (with(["stale_date": 1_000]), ["stale_date"]),
                (with(["content_state": [:]]), ["content_state"]),
                (with(["content_state": ["blob": .string(String(repeating: "x", count: 5_000))]]), ["content_state"]),
                (with(["attributes": ["blob": .string(String(repeating: "x", count: 5_000))]]), ["attributes"]),
                (with(["activity_id": "a/b"]), ["activity_id"]),
                (with(["activity_type": "9Lives"]), ["activity_type"]),
                (with(["attributes": "nope"]), ["attributes"]),
                (with(["attributes": ["islet_activity_id": "other"]]), ["attributes.islet_activity_id"]),
                (with(["activity_id": nil, "content_state": nil]), ["activity_id", "content_state"]),
            ]
            for (body, fields) in cases {
                let reply = try await h.call("POST", start, key: app.serverKey, json: body)
                #expect(reply.status == 422, "\(body.jsonText)")
                #expect(Set(reply.errorFields) == Set(fields), "\(body.jsonText): \(reply.json.jsonText)")
                #expect(reply.headers["content-type"] == "application/problem+json")
            }
            let typo = try await h.call("POST", start, key: app.serverKey, json: with(["stale_data": 1_900_000_000]))
            #expect(typo["errors"]?.arrayValue?.first?["message"]?.stringValue?.contains("did you mean stale_date") == true)

            // Malformed JSON is 400; an oversized body 413.
            #expect(try await h.call("POST", start, key: app.serverKey, body: "{nope").status == 400)
            let huge = "{\"x\":\"" + String(repeating: "y", count: 70_000) + "\"}"
            let update = "/v1/apps/\(app.id)/activities/order-1/update"
            #expect(try await h.call("POST", update, key: app.serverKey, body: huge).status == 413)
            // A start may carry a timeline of 1,440 entries: its limit is 8 MiB, and
            // the same body is read (and refused for its unknown field).
            #expect(try await h.call("POST", start, key: app.serverKey, body: huge).status == 422)

            // Device routes and update.
            let device = "/v1/apps/\(app.id)/devices/phone-2"
            let badDevice = try await h.call("PUT", device, key: app.deviceKey, json: [
                "platform": "blackberry", "environment": "staging", "apns_token": "xyz", "tags": [1],
            ])
            #expect(Set(badDevice.errorFields) == ["platform", "environment", "apns_token", "tags[0]"])
            let shortToken = try await h.call(
                "PUT", "/v1/apps/\(app.id)/devices/phone-1/push-to-start/DeliveryAttributes", key: app.deviceKey,
                json: ["token": .string(String(repeating: "ab", count: 16))])
            #expect(shortToken.errorFields == ["token"])
            try await h.registerUpdateToken(app, "phone-1", "ride-1", token: ServerHarness.token())
            let badUpdate = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/ride-1/update", key: app.serverKey,
                json: ["content_state": ["eta": 1], "dismissal_date": 1_900_000_000])
            #expect(badUpdate.errorFields == ["dismissal_date"])
            let staleInPast = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/ride-1/update", key: app.serverKey,
                json: ["content_state": ["eta": 1], "stale_date": 1_000_000])
            #expect(staleInPast.errorFields == ["stale_date"])
            #expect(try await h.settledPushes(app, "ride-1").isEmpty)
        }
    }

    @Test func appsAreCreatedWithCheckedCredentials() async throws {
        try await ServerHarness.with { h in
            let admin = ServerHarness.adminToken
            let partial = try await h.call("POST", "/v1/apps", key: admin, json: [
                "name": "A", "bundle_id": "com.example.a", "apns": ["team_id": "TEAMID0001"],
            ])
            #expect(partial.status == 422)
            #expect(Set(partial.errorFields) == ["apns.key_id", "apns.private_key"])
            let badKey = try await h.call("POST", "/v1/apps", key: admin, json: [
                "name": "A", "bundle_id": "com.example.a",
                "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----"],
            ])
            #expect(badKey.errorFields == ["apns.private_key"])
            let badBundle = try await h.call("POST", "/v1/apps", key: admin, json: ["name": "A", "bundle_id": "com.example.a.push-type.liveactivity"])
            #expect(badBundle.errorFields == ["bundle_id"])

            // Without credentials an app can register devices but not send.
            let bare = try await h.call("POST", "/v1/apps", key: admin, json: ["name": "Bare", "bundle_id": "com.example.bare"])
            #expect(bare.status == 201)
            #expect(bare["apns"] == .null)
            let appID = try #require(bare["id"]?.stringValue)
            let app = TestApp(
                id: appID, serverKey: try #require(bare["server_key"]?.stringValue),
                deviceKey: try #require(bare["device_key"]?.stringValue))
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let refused = try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]])
            #expect(refused.status == 409)
            #expect(refused["detail"]?.stringValue?.contains("no APNs credentials") == true)

            // PATCH replaces the group whole; the keys are never shown again.
            let patched = try await h.call("PATCH", "/v1/apps/\(appID)", key: admin, json: [
                "name": "Bare no more",
                "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(h.signingKey.pemRepresentation)],
            ])
            #expect(patched.status == 200)
            #expect(patched["apns"]?["key_id"]?.stringValue == "KEYID00001")
            #expect(patched["server_key"] == nil)
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            let listed = try await h.call("GET", "/v1/apps", key: admin)
            #expect(listed["items"]?.arrayValue?.compactMap { $0["name"]?.stringValue } == ["Bare no more"])
            #expect(!listed.json.jsonText.contains("PRIVATE KEY"))
            #expect(try await h.call("GET", "/v1/apps/app_nope", key: admin).status == 404)
        }
    }

    @Test func openAPIDocumentListsEveryRouteServed() async throws {
        try await ServerHarness.with { h in
            let document = try await h.call("GET", "/openapi.json", key: nil)
            #expect(document.status == 200)
            #expect(document["openapi"]?.stringValue == "3.1.0")
            let paths = try #require(document["paths"]?.objectValue)
            var documented: Set<String> = []
            for (path, item) in paths {
                for method in item.objectValue?.keys ?? [:].keys { documented.insert("\(method.uppercased()) \(path)") }
            }
            let contract: Set<String> = [
                "GET /healthz", "GET /metrics", "GET /openapi.json", "GET /v1/version", "GET /v1/nodes", "DELETE /v1/sessions",
                "POST /v1/apps", "GET /v1/apps", "GET /v1/apps/{app_id}", "PATCH /v1/apps/{app_id}",
                "POST /v1/apps/{app_id}/keys/rotate", "GET /v1/apps/{app_id}/overview", "GET /v1/apps/{app_id}/lookup",
                "GET /v1/apps/{app_id}/devices", "GET /v1/apps/{app_id}/devices/{device_id}", "PUT /v1/apps/{app_id}/devices/{device_id}",
                "PUT /v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                "DELETE /v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                "PUT /v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}",
                "POST /v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/end",
                "POST /v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/taps",
                "POST /v1/apps/{app_id}/devices/{device_id}/secret/rotate",
                "POST /v1/apps/{app_id}/devices/{device_id}/secret/reset",
                "POST /v1/apps/{app_id}/activities", "POST /v1/apps/{app_id}/activities/{activity_id}/update",
                "POST /v1/apps/{app_id}/activities/{activity_id}/end", "GET /v1/apps/{app_id}/activities",
                "GET /v1/apps/{app_id}/activities/{activity_id}", "GET /v1/apps/{app_id}/activities/{activity_id}/pushes", "GET /v1/apps/{app_id}/activities/{activity_id}/sends", "GET /v1/apps/{app_id}/activities/{activity_id}/sends.csv", "GET /v1/apps/{app_id}/pushes", "GET /v1/apps/{app_id}/exports/pushes.csv", "GET /v1/apps/{app_id}/exports/activities.csv", "GET /v1/apps/{app_id}/exports/devices.csv", "GET /v1/apps/{app_id}/activities/{activity_id}/audience",
                "POST /v1/apps/{app_id}/activities/{activity_id}/audience",
                "POST /v1/apps/{app_id}/notifications",
                "PUT /v1/apps/{app_id}/activity-types/{activity_type}", "GET /v1/apps/{app_id}/activity-types",
                "GET /v1/apps/{app_id}/activity-types/{activity_type}", "DELETE /v1/apps/{app_id}/activity-types/{activity_type}",
                "PUT /v1/apps/{app_id}/activities/{activity_id}/timeline",
                "GET /v1/apps/{app_id}/activities/{activity_id}/timeline",
                "DELETE /v1/apps/{app_id}/activities/{activity_id}/timeline",
                "GET /v1/apps/{app_id}/schedules", "GET /v1/apps/{app_id}/schedules/{schedule_id}",
                "DELETE /v1/apps/{app_id}/schedules/{schedule_id}",
                "POST /v1/apps/{app_id}/webhooks", "GET /v1/apps/{app_id}/webhooks",
                "GET /v1/apps/{app_id}/webhooks/{webhook_id}", "PATCH /v1/apps/{app_id}/webhooks/{webhook_id}",
                "DELETE /v1/apps/{app_id}/webhooks/{webhook_id}", "POST /v1/apps/{app_id}/webhooks/{webhook_id}/rotate-secret",
                "GET /v1/apps/{app_id}/webhooks/{webhook_id}/deliveries",
                "POST /v1/apps/{app_id}/webhooks/{webhook_id}/deliveries/{delivery_id}/retry",
                "GET /v1/apps/{app_id}/events",
                "POST /v1/apps/{app_id}/channels", "GET /v1/apps/{app_id}/channels",
                "GET /v1/apps/{app_id}/channels/{channel_id}", "DELETE /v1/apps/{app_id}/channels/{channel_id}",
                "POST /v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/receipts",
            ]
            #expect(documented == contract)
            // Every documented route is served: none answers "no such route".
            for entry in documented {
                let parts = entry.split(separator: " ", maxSplits: 1)
                let path = String(parts[1]).replacingOccurrences(of: "{", with: "x").replacingOccurrences(of: "}", with: "")
                let reply = try await h.call(String(parts[0]), path, key: nil)
                #expect(reply.status != 404 || reply["detail"]?.stringValue?.hasPrefix("There is no route") == false, "\(entry)")
                #expect(reply.status != 405, "\(entry)")
            }
            // Send routes document Idempotency-Key; bodies forbid unknown fields.
            let start = try #require(paths["/v1/apps/{app_id}/activities"]?["post"])
            #expect(start["parameters"]?.arrayValue?.contains { $0["name"] == "Idempotency-Key" } == true)
            #expect(start["requestBody"]?["content"]?["application/json"]?["schema"]?["additionalProperties"] == false)

            // Every JSON success answer is typed: a reference to a component, a union of
            // shapes, or an object with its properties; never a bare object.
            let components = try #require(document["components"]?["schemas"]?.objectValue)
            var untyped: [String] = []
            var dangling: [String] = []
            for (path, item) in paths {
                for (method, operation) in item.objectValue ?? [:] {
                    for (status, response) in operation["responses"]?.objectValue ?? [:] where status.hasPrefix("2") && status != "204" {
                        guard let schema = response["content"]?["application/json"]?["schema"] else { continue }
                        let typed = schema["$ref"] != nil || schema["anyOf"] != nil || schema["allOf"] != nil
                            || schema["oneOf"] != nil || schema["properties"]?.objectValue?.isEmpty == false
                        if !typed { untyped.append("\(method.uppercased()) \(path) \(status)") }
                    }
                }
            }
            // Every reference names a component the document has.
            func references(_ value: JSONValue) -> [String] {
                switch value {
                case .object(let object):
                    let own = object["$ref"]?.stringValue.map { [$0] } ?? []
                    return own + object.values.flatMap(references)
                case .array(let items): return items.flatMap(references)
                default: return []
                }
            }
            for reference in references(document.json) {
                let name = reference.replacingOccurrences(of: "#/components/schemas/", with: "")
                if components[name] == nil { dangling.append(reference) }
            }
            #expect(untyped.isEmpty, "untyped answers: \(untyped.sorted())")
            #expect(dangling.isEmpty, "references to no component: \(dangling)")
            #expect(components["App"] != nil && components["Activity"] != nil && components["Push"] != nil)
            // /healthz's 503 says which check failed, in its own JSON, not a problem.
            let unhealthy = paths["/healthz"]?["get"]?["responses"]?["503"]?["content"]
            #expect(unhealthy?["application/json"]?["schema"]?["properties"]?["status"]?["enum"] == ["unavailable"])
            #expect(unhealthy?["application/problem+json"] == nil)
            // A device route declares the device's secret header.
            let register = try #require(paths["/v1/apps/{app_id}/devices/{device_id}"]?["put"])
            #expect(register["parameters"]?.arrayValue?.contains { $0["name"] == "Islet-Device-Secret" && $0["in"] == "header" } == true)
        }
    }

    @Test func metricsCountRequestsAndPushes() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 1)
            let reply = try await h.call("GET", "/metrics", key: nil)
            let text = try #require(reply.json.stringValue)
            #expect(reply.headers["content-type"]?.hasPrefix("text/plain") == true)
            #expect(text.contains(#"islet_http_requests_total{node="\#(h.nodeID)",route="/v1/apps/{app_id}/activities",method="POST",status="202"} 1"#))
            #expect(text.contains(#"islet_pushes_total{node="\#(h.nodeID)",result="sent",reason="",transport="apns"} 1"#))
            #expect(text.contains(#"islet_push_queue_depth{node="\#(h.nodeID)"} 0"#))
            #expect(text.contains(#"islet_push_send_seconds_count{node="\#(h.nodeID)"} 1"#))
        }
    }
}
