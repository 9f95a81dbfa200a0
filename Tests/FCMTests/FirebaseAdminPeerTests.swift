import Foundation
import IsletCore
import IsletTesting
import Testing

/// The FCM simulator against a client it was not written with: Google's Python SDK,
/// firebase-admin (scripts/peers/firebase_admin_client.py), initialized with the
/// service account `islet sim --fcm` wrote, gets its access token from the
/// simulator through google-auth and sends over HTTP/1.1: a data message reaches the
/// simulated Android device, and each refusal comes back as the exception
/// firebase-admin raises for FCM's.
@Suite("FCM simulator against firebase-admin", .requires(.python, .processes))
struct FirebaseAdminPeerTests {
    static let device = "android-device-token-0001:APA91bHx-islet"

    @Test func firebaseAdminSendsToIsletSimFCM() async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/firebase_admin_client.py")
        try await withTemporaryDirectory { directory in
            let sim = try await FCMSimulatorProcess.start(in: directory)
            defer { sim.stop() }
            let client = try ChildProcess(python, [script, sim.accountFile.path, sim.http1URL])
            defer { client.stop() }
            let status = await client.exitStatus(within: .seconds(180))
            let lines = client.lines.compactMap { try? JSONValue(parsing: Data($0.utf8)) }
            #expect(status == 0, "\(client.lines) \(client.standardError)")
            var cases: [String: JSONValue] = [:]
            for line in lines { if let name = line["case"]?.stringValue { cases[name] = line } }
            #expect(Set(cases.keys) == [
                "valid", "unregistered", "quota_exceeded", "sender_id_mismatch", "unavailable", "invalid_argument", "faults_used_up",
            ])
            for (name, line) in cases { #expect(line["ok"] == true, "\(name): \(line)") }
            #expect(cases["valid"]?["name"]?.stringValue?.hasPrefix("projects/islet-demo/messages/") == true)
            #expect(cases["unregistered"]?["got"] == "UnregisteredError")
            #expect(cases["quota_exceeded"]?["got"] == "QuotaExceededError")
            #expect(cases["sender_id_mismatch"]?["got"] == "SenderIdMismatchError")
            #expect(cases["unavailable"]?["got"] == "UnavailableError")
            #expect(cases["invalid_argument"]?["got"] == "InvalidArgumentError")

            // What the simulator itself recorded.
            let messages = try JSONValue(parsing: try await httpRequest(port: sim.http1Port, path: "/messages").body)["messages"]?.arrayValue ?? []
            let valid = try #require(messages.first)
            #expect(valid["status"] == 200)
            #expect(valid["token"]?.stringValue == Self.device)
            #expect(valid["data"] == [
                "islet_event": "start", "islet_activity_id": "order-42", "islet_activity_type": "DeliveryAttributes",
                "content_state": #"{"status": "preparing", "eta": 25}"#, "attributes": #"{"order": "A42"}"#, "timestamp": "1800000000",
            ])
            #expect(valid["android"] == ["priority": "high", "ttl": "600s", "collapse_key": "islet-order-42"])
            #expect(valid["device_note"] == "started order-42")
            func count(_ code: String) -> Int { messages.filter { $0["error_code"]?.stringValue == code }.count }
            #expect(count("UNREGISTERED") == 1)
            #expect(count("SENDER_ID_MISMATCH") == 1)
            // firebase-admin retried the throttled and the unavailable sends after Retry-After.
            #expect(count("QUOTA_EXCEEDED") == cases["quota_exceeded"]?["attempts"]?.int64Value.map(Int.init))
            #expect(count("QUOTA_EXCEEDED") > 1)
            #expect(count("UNAVAILABLE") == cases["unavailable"]?["attempts"]?.int64Value.map(Int.init))

            let devices = try JSONValue(parsing: try await httpRequest(port: sim.http1Port, path: "/devices").body)["devices"]?.arrayValue ?? []
            #expect(devices.count == 1)
            #expect(devices.first?["token"]?.stringValue == Self.device)
            #expect(devices.first?["project_id"] == "islet-demo")
            #expect(devices.first?["activities"] == [[
                "activity_id": "order-42", "activity_type": "DeliveryAttributes", "ended": false,
                "content_state": ["status": "preparing", "eta": 25], "attributes": ["order": "A42"], "last_timestamp": 1_800_000_000,
                "updates": 0,
            ]])
            #expect(await sim.terminate() == 0)
        }
    }
}
