import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import Testing

/// An app's FCM service account through the API: checked as one group, named but
/// never returned, replaced and removed.
@Suite("FCM credentials: an app's service account")
struct FCMCredentialsTests {
    static func account(_ changes: [String: JSONValue?] = [:]) throws -> JSONValue {
        var members: [String: JSONValue] = [
            "type": "service_account", "project_id": "islet-demo", "private_key_id": "abc123",
            "private_key": .string(try RSA.SigningKey.generate().pemRepresentation),
            "client_email": "firebase-adminsdk@islet-demo.iam.gserviceaccount.com",
            "token_uri": "https://oauth2.googleapis.com/token",
        ]
        for (name, value) in changes { members[name] = value }
        return .object(members)
    }

    @Test func anAccountIsNamedNeverReturnedAndReplacedOrRemovedAsAWhole() async throws {
        try await ServerHarness.with { h in
            let created = try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                "name": "Both", "bundle_id": "com.example.both", "fcm": ["service_account": try Self.account()],
            ])
            #expect(created.status == 201, "\(created.json)")
            #expect(created["fcm"] == ["project_id": "islet-demo", "client_email": "firebase-adminsdk@islet-demo.iam.gserviceaccount.com"])
            #expect(!created.json.jsonText.contains("PRIVATE KEY"))
            let id = try #require(created["id"]?.stringValue)
            let shown = try await h.call("GET", "/v1/apps/\(id)", key: ServerHarness.adminToken)
            #expect(shown["fcm"] == created["fcm"])
            #expect(!shown.json.jsonText.contains("PRIVATE KEY"))

            // Replaced as a whole; the stored key is the new one.
            let other = try Self.account(["project_id": "islet-other", "client_email": "svc@islet-other.iam.gserviceaccount.com"])
            let replaced = try await h.call(
                "PATCH", "/v1/apps/\(id)", key: ServerHarness.adminToken, json: ["fcm": ["service_account": other]])
            #expect(replaced["fcm"]?["project_id"] == "islet-other", "\(replaced.json)")
            let stored = try #require(try h.application.services.store.readNow { try $0.app(id: id) }?.fcm)
            #expect(stored.privateKeyPEM == other["private_key"]?.stringValue)
            #expect(stored.privateKeyID == "abc123")
            #expect(stored.tokenURI == "https://oauth2.googleapis.com/token")
            // Other changes keep it.
            let renamed = try await h.call("PATCH", "/v1/apps/\(id)", key: ServerHarness.adminToken, json: ["name": "Renamed"])
            #expect(renamed["fcm"]?["project_id"] == "islet-other")
            // null removes it.
            let removed = try await h.call("PATCH", "/v1/apps/\(id)", key: ServerHarness.adminToken, json: ["fcm": .null])
            #expect(removed["fcm"] == .null)
            #expect(try h.application.services.store.readNow { try $0.app(id: id) }?.fcm == nil)
        }
    }

    @Test func everyFaultOfTheAccountIsNamedAtOnce() async throws {
        try await ServerHarness.with { h in
            func refused(_ account: JSONValue) async throws -> Reply {
                try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                    "name": "Bad", "bundle_id": "com.example.bad", "fcm": ["service_account": account],
                ])
            }
            let all = try await refused(try Self.account([
                "project_id": nil, "client_email": "not an email", "token_uri": "http://oauth2.example/token",
                "private_key": "-----BEGIN PRIVATE KEY-----\nAA==\n-----END PRIVATE KEY-----\n",
            ]))
            #expect(all.status == 422)
            #expect(Set(all.errorFields) == [
                "fcm.service_account.project_id", "fcm.service_account.client_email", "fcm.service_account.private_key",
                "fcm.service_account.token_uri",
            ], "\(all.json)")
            // An APNs .p8 (an EC key) is not the account's key.
            let ec = try await refused(try Self.account(["private_key": .string(try P256.SigningKey.generate().pemRepresentation)]))
            #expect(ec.errorFields == ["fcm.service_account.private_key"])
            #expect(ec.json.jsonText.contains("not an RSA key"))
            let type = try await refused(try Self.account(["type": "authorized_user", "project_id": "Not A Project"]))
            #expect(Set(type.errorFields) == ["fcm.service_account.type", "fcm.service_account.project_id"])
            // The group needs its member.
            let empty = try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                "name": "Bad", "bundle_id": "com.example.bad", "fcm": [:],
            ])
            #expect(empty.status == 422 && empty.errorFields == ["fcm.service_account"], "\(empty.json)")
            // Nothing was created.
            let apps = try await h.call("GET", "/v1/apps", key: ServerHarness.adminToken)
            #expect(apps["items"]?.arrayValue?.isEmpty == true)
        }
    }
}
