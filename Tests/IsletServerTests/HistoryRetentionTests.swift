import Foundation
import IsletCore
import IsletTesting
import Testing

/// An app's own history retention (`history_retention_days`, never longer than the
/// server's) and what `GET /v1/apps/{app_id}` says its history holds.
@Suite("History retention over the API")
struct HistoryRetentionTests {
    static let path = "/v1/apps"

    @Test func anAppSetsAShorterRetentionAndALongerOneIsRefused() async throws {
        try await ServerHarness.with(configure: { $0.historyRetentionDays = 2 }) { h in
            let admin = ServerHarness.adminToken
            let created = try await h.call("POST", Self.path, key: admin, json: [
                "name": "Short", "bundle_id": "com.example.short", "history_retention_days": 0.5,
            ])
            #expect(created.status == 201, "\(created.json)")
            #expect(created["history_retention_days"]?.doubleValue == 0.5)
            let appID = try #require(created["id"]?.stringValue)

            // Out of bounds, or longer than the server's two days: 422 naming the field.
            for value: JSONValue in [0, -0.0, 0.02, .double(.leastNonzeroMagnitude), -1, 3, 3_650, 3_651, "7", true] {
                let refused = try await h.call("POST", Self.path, key: admin, json: [
                    "name": "Bad", "bundle_id": "com.example.bad", "history_retention_days": value,
                ])
                #expect(refused.status == 422, "\(value): \(refused.json)")
                #expect(refused.errorFields == ["history_retention_days"], "\(value): \(refused.json)")
                let patched = try await h.call("PATCH", "\(Self.path)/\(appID)", key: admin, json: ["history_retention_days": value])
                #expect(patched.status == 422 && patched.errorFields == ["history_retention_days"], "\(value): \(patched.json)")
            }
            let longer = try await h.call("PATCH", "\(Self.path)/\(appID)", key: admin, json: ["history_retention_days": 2.5])
            // The document says the server's bound too: what it calls valid is taken.
            #expect(longer["detail"]?.stringValue?.contains("to 2 (one hour to the server's retention)") == true, "\(longer.json)")
            let document = try await h.call("GET", "/openapi.json", key: nil)
            let field = document["paths"]?["/v1/apps/{app_id}"]?["patch"]?["requestBody"]?["content"]?["application/json"]?["schema"]?[
                "properties"]?["history_retention_days"]
            #expect(field?["maximum"]?.doubleValue == 2 && field?["minimum"]?.doubleValue == 1.0 / 24, "\(field ?? .null)")
            #expect(try await h.call("GET", "\(Self.path)/\(appID)", key: admin)["history_retention_days"]?.doubleValue == 0.5)

            // The shortest, an hour, and the server's own are taken; null takes the
            // server's again.
            let hour = try await h.call("PATCH", "\(Self.path)/\(appID)", key: admin, json: ["history_retention_days": .double(1.0 / 24)])
            #expect(hour.status == 200 && hour["history_retention_days"]?.doubleValue == 1.0 / 24, "\(hour.json)")
            let same = try await h.call("PATCH", "\(Self.path)/\(appID)", key: admin, json: ["history_retention_days": 2])
            #expect(same.status == 200 && same["history_retention_days"]?.doubleValue == 2, "\(same.json)")
            let cleared = try await h.call("PATCH", "\(Self.path)/\(appID)", key: admin, json: ["history_retention_days": nil])
            #expect(cleared.status == 200 && cleared["history_retention_days"] == .null, "\(cleared.json)")
            let shown = try await h.call("GET", "\(Self.path)/\(appID)", key: admin)
            #expect(shown["history"]?["retention_days"]?.doubleValue == 2, "\(shown.json)")
        }
    }

    @Test func anAppShowsWhatItsHistoryHoldsUntilTheRetentionDeletesIt() async throws {
        try await ServerHarness.with { h in
            let admin = ServerHarness.adminToken
            let app = try await h.createApp()
            let empty = try await h.call("GET", "\(Self.path)/\(app.id)", key: admin)
            #expect(empty["history_retention_days"] == .null)
            #expect(empty["history"] == [
                "retention_days": 30.0, "activities": 0, "sends": 0, "pushes": 0, "oldest_at": nil,
            ], "\(empty.json)")
            // The list does not count anyone's history.
            let list = try await h.call("GET", Self.path, key: admin)
            #expect(list["items"]?.arrayValue?.first?["history"] == nil)

            try await h.registerStartable(app, "customer-1", userID: "u-1")
            try await h.registerStartable(app, "customer-2", userID: "u-1")
            let started = try await h.start(app, "order-1", audience: ["user_ids": ["u-1"]])
            #expect(started.status == 202, "\(started.json)")
            _ = try await h.settledPushes(app, "order-1", count: 2)
            let shown = try await h.call("GET", "\(Self.path)/\(app.id)", key: admin)
            let history = try #require(shown["history"])
            #expect(history["activities"] == 1 && history["sends"] == 1 && history["pushes"] == 2, "\(shown.json)")
            // The oldest record is the activity's start (its start's send was made then too).
            let activity = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(history["oldest_at"] != nil && history["oldest_at"] == activity["started_at"], "\(activity.json)")

            // Ended, then past the retention: the next purge deletes it all.
            let ended = try await h.call("POST", "/v1/apps/\(app.id)/activities/order-1/end", key: app.serverKey, json: [:])
            #expect(ended.status == 202, "\(ended.json)")
            _ = try await h.settledPushes(app, "order-1")
            h.clock.advance(by: 31 * 86_400)
            let purged = await h.application.services.history.purge()
            // The start's send (its two pushes went by windows: no row), its copies
            // and audience, and the end's send (no copy had an update token for it
            // to go to).
            #expect(purged.activities == 1 && purged.copies == 2 && purged.audience == 1, "\(purged)")
            #expect(purged.sends == 2 && purged.pushes == 0, "\(purged)")
            let after = try await h.call("GET", "\(Self.path)/\(app.id)", key: admin)
            #expect(after["history"] == [
                "retention_days": 30.0, "activities": 0, "sends": 0, "pushes": 0, "oldest_at": nil,
            ], "\(after.json)")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey).status == 404)
        }
    }
}
