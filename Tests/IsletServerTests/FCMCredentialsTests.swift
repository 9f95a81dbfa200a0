import Foundation
import IsletCore
import IsletCrypto
import IsletLog
import IsletTesting
import Storage
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

    /// A token URI other than Google's must be an https URL without credentials on
    /// a public host (Islet posts a signed assertion there, and libcurl would reach
    /// any address): each address the probe tried is refused, naming the field.
    /// `--fcm-allow-private` lets loopback and private ones through, never a
    /// metadata service.
    @Test func aTokenURIMustBeAPublicHTTPSHostWithoutCredentials() async throws {
        let refused = [
            "https://169.254.169.254/token", "https://10.1.2.3/token", "https://127.0.0.1/token", "https://[::1]/token",
            "https://0.0.0.0/token", "https://2130706433/token", "https://u:p@oauth2.googleapis.com/token",
            "https://[::ffff:127.0.0.1]:8443/token", "https://localhost/token",
        ]
        func create(_ h: ServerHarness, _ uri: String) async throws -> Reply {
            try await h.call("POST", "/v1/apps", key: ServerHarness.adminToken, json: [
                "name": "Probe", "bundle_id": "com.example.probe", "fcm": ["service_account": try Self.account(["token_uri": .string(uri)])],
            ])
        }
        try await ServerHarness.with { h in
            for uri in refused {
                let reply = try await create(h, uri)
                #expect(reply.status == 422 && reply.errorFields == ["fcm.service_account.token_uri"], "\(uri): \(reply.json)")
            }
            // Nor replaced by one.
            let app = try await h.createApp()
            let patched = try await h.call("PATCH", "/v1/apps/\(app.id)", key: ServerHarness.adminToken, json: [
                "fcm": ["service_account": try Self.account(["token_uri": "https://127.0.0.1:9/token"])],
            ])
            #expect(patched.status == 422 && patched.errorFields == ["fcm.service_account.token_uri"], "\(patched.json)")
            #expect(try await h.call("GET", "/v1/apps/\(app.id)", key: ServerHarness.adminToken)["fcm"] == .null)
            // A public address is taken.
            #expect(try await create(h, "https://8.8.8.8/token").status == 201)
        }
        try await ServerHarness.with(configure: { $0.fcmAllowPrivate = true }) { h in
            #expect(try await create(h, "https://127.0.0.1:9/token").status == 201)
            #expect(try await create(h, "https://10.1.2.3/token").status == 201)
            let metadata = try await create(h, "https://169.254.169.254/token")
            #expect(metadata.status == 422 && metadata.errorFields == ["fcm.service_account.token_uri"], "\(metadata.json)")
            let credentials = try await create(h, "https://u:p@127.0.0.1/token")
            #expect(credentials.status == 422 && credentials.errorFields == ["fcm.service_account.token_uri"])
        }
    }

    /// A token URI stored before it was checked (or by a node that allowed private
    /// addresses) is checked again when it is used: no assertion goes to a loopback
    /// address, by number or by a name that leads there, and the failing token
    /// endpoint is logged once, naming the app and the cause.
    @Test func aStoredPrivateTokenURIIsRefusedAtConnectTimeAndLoggedOnce() async throws {
        for host in ["127.0.0.1", "localhost"] {
            let logs = MemoryLogSink()
            try await ServerHarness.with(logs: logs, configure: { $0.fcmAllowPrivate = false }, fcm: true) { h in
                let fcm = try #require(h.fcm)
                let app = try await h.createApp()
                // Stored as an older Islet, or a node with --fcm-allow-private, saved it.
                try await h.application.services.store.write { session in
                    guard var record = try session.app(id: app.id) else { return }
                    record.fcm = FCMCredentials(
                        projectID: "islet-test", clientEmail: "svc@islet-test.iam.gserviceaccount.com",
                        privateKeyPEM: try RSA.SigningKey.generate().pemRepresentation, privateKeyID: nil,
                        tokenURI: "https://\(host):\(fcm.port)/token")
                    record.updatedAt = record.updatedAt.addingTimeInterval(1)
                    try session.updateAppSettings(record)
                }
                let reply = try await h.call(
                    "PUT", "/v1/apps/\(app.id)/devices/pixel", key: app.deviceKey,
                    json: ["platform": "android", "fcm_token": .string(AndroidActivityTests.pixelToken)])
                try #require(reply.status == 201, "\(reply.json)")
                let started = try await h.start(app, "order-1", audience: ["device_ids": ["pixel"]])
                #expect(started.status == 202, "\(started.json)")
                func warnings() -> [String] {
                    logs.lines.filter { $0.contains("token endpoint failed") && $0.contains(app.id) }
                }
                let logged = try await h.eventually { !warnings().isEmpty }
                #expect(logged, "\(host): \(logs.lines)")
                #expect(warnings().allSatisfy { $0.contains("loopback") }, "\(warnings())")
                // Retries meanwhile add no line within the minute.
                for _ in 0..<3 {
                    h.clock.advance(by: 5)
                    try await Task.sleep(for: .milliseconds(50))
                }
                #expect(warnings().count == 1, "\(warnings())")
                // FCM never got a message: no token was ever had.
                #expect(fcm.engine.records().isEmpty)
            }
        }
    }
}
