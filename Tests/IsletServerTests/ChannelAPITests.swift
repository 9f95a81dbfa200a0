import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

/// Broadcast channels through the API, created and deleted at the simulators'
/// channel management API over HTTP/2 and TLS.
@Suite("Broadcast channels: created at APNs, listed, read and deleted")
struct ChannelAPITests {
    @Test func aChannelIsCreatedAtAPNsRecordedListedAndDeleted() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            let base = "/v1/apps/\(app.id)/channels"
            let created = try await h.call(
                "POST", base, key: app.serverKey, json: ["environment": "sandbox", "message_storage_policy": "most_recent"])
            #expect(created.status == 201, "\(created.json)")
            let apnsID = try #require(created["apns_channel_id"]?.stringValue)
            let channelID = try #require(created["channel_id"]?.stringValue)
            // Apple's id as Apple gave it; the path's is the same bytes in base64url.
            let simulated = try #require(h.sandbox.engine.channels().first)
            #expect(simulated.id == apnsID)
            #expect(simulated.bundleID == "com.example.deliveries")
            #expect(simulated.messageStoragePolicy == 1)
            #expect(Data(base64Encoded: apnsID) == Data(base64Encoded: Self.standard(channelID)))
            #expect(!channelID.contains("/") && !channelID.contains("+") && !channelID.contains("="))
            #expect(created["environment"] == "sandbox")
            #expect(created["message_storage_policy"] == "most_recent")
            #expect(created["activity_id"] == .null)
            #expect(created["created_at"]?.stringValue != nil)

            // The default policy stores nothing; production goes to production.
            let production = try await h.call("POST", base, key: app.serverKey, json: ["environment": "production"])
            #expect(production.status == 201)
            #expect(production["message_storage_policy"] == "none")
            #expect(h.production.engine.channels().map(\.messageStoragePolicy) == [0])
            #expect(h.sandbox.engine.channels().count == 1)

            let list = try await h.call("GET", base, key: app.serverKey)
            #expect(list["items"]?.arrayValue?.count == 2)
            #expect(list["next_cursor"] == .null)
            let page = try await h.call("GET", base + "?limit=1", key: app.serverKey)
            let cursor = try #require(page["next_cursor"]?.stringValue)
            let rest = try await h.call("GET", base + "?limit=1&cursor=\(cursor)", key: app.serverKey)
            #expect(rest["items"]?.arrayValue?.count == 1)
            #expect(rest["items"]?.arrayValue?.first?["channel_id"] != page["items"]?.arrayValue?.first?["channel_id"])

            let shown = try await h.call("GET", base + "/\(channelID)", key: app.serverKey)
            #expect(shown.status == 200)
            #expect(shown.json == created.json)
            #expect(try await h.call("GET", base + "/nochannel", key: app.serverKey).status == 404)

            let deleted = try await h.call("DELETE", base + "/\(channelID)", key: app.serverKey)
            #expect(deleted.status == 204)
            #expect(h.sandbox.engine.channels().isEmpty)
            #expect(try await h.call("GET", base + "/\(channelID)", key: app.serverKey).status == 404)
            #expect(try await h.call("DELETE", base + "/\(channelID)", key: app.serverKey).status == 404)
        }
    }

    @Test func apnsRefusalsComeBackNamingTheirReason() async throws {
        try await ServerHarness.with(simulators: { $0.engine.channelLimit = 1 }) { h in
            let app = try await h.createApp()
            let base = "/v1/apps/\(app.id)/channels"
            #expect(try await h.call("POST", base, key: app.serverKey, json: ["environment": "sandbox"]).status == 201)
            let refused = try await h.call("POST", base, key: app.serverKey, json: ["environment": "sandbox"])
            #expect(refused.status == 409)
            #expect(refused["detail"]?.stringValue?.contains("CannotCreateChannelConfig") == true, "\(refused.json)")
            #expect(h.sandbox.engine.channels().count == 1)
            let list = try await h.call("GET", base, key: app.serverKey)
            #expect(list["items"]?.arrayValue?.count == 1)

            // Fields are checked before APNs is asked.
            let invalid = try await h.call("POST", base, key: app.serverKey, json: ["message_storage_policy": "always"])
            #expect(invalid.status == 422)
            #expect(Set(invalid.errorFields) == ["environment", "message_storage_policy"])
        }
    }

    @Test func anAppWithoutTheCapabilityOrCredentialsIsRefused() async throws {
        try await ServerHarness.with(simulators: { $0.engine.broadcastEnabled = false }) { h in
            let app = try await h.createApp()
            let refused = try await h.call("POST", "/v1/apps/\(app.id)/channels", key: app.serverKey, json: ["environment": "sandbox"])
            #expect(refused.status == 409)
            #expect(refused["detail"]?.stringValue?.contains("FeatureNotEnabled") == true, "\(refused.json)")
            let bare = try await h.call(
                "POST", "/v1/apps", key: ServerHarness.adminToken, json: ["name": "Bare", "bundle_id": "com.example.bare"])
            let bareID = try #require(bare["id"]?.stringValue)
            let bareKey = try #require(bare["server_key"]?.stringValue)
            let noCredentials = try await h.call("POST", "/v1/apps/\(bareID)/channels", key: bareKey, json: ["environment": "sandbox"])
            #expect(noCredentials.status == 409)
            #expect(noCredentials["detail"]?.stringValue?.contains("no APNs credentials") == true)
        }
    }

    /// A base64url id in standard base64 with its padding.
    static func standard(_ url: String) -> String {
        var text = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return text
    }
}
