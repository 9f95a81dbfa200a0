import Foundation
import IsletCore
import IsletServer
import IsletTesting
import Simulators
import Testing

/// The dashboard in a real browser: headless Chromium (Debian's chromium and
/// chromium-driver) driven by selenium from scripts/browser/dashboard_flow.py against
/// Islet on port 0 with its simulators. The script signs in, waits on the app's page
/// while this test starts an activity through the API and registers the update token
/// the simulated phone minted, sees the activity appear without a reload, opens it,
/// sees the tap and the phone's receipt of the start (its type has receipts on),
/// ends it from the page, visits the other pages, signs out, and fails on any SEVERE
/// entry of the browser's console. This test then checks the end reached the
/// simulated phone. With ISLET_SCREENSHOTS=DIR (`make screenshots`) the script also
/// writes a PNG of each page there.
@Suite("Dashboard in a browser", .requires(.browser, .python))
struct DashboardBrowserTests {
    static let activityID = "order-browser-1"
    static let deviceID = "phone-1"

    @Test func signInWatchAnActivityAppearEndItAndSignOut() async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/browser/dashboard_flow.py")
        for tool in ["/usr/bin/chromedriver"] where !FileManager.default.isExecutableFile(atPath: tool) {
            Issue.record("\(tool) is missing: run ./scripts/test-tools.sh (it installs chromium and chromium-driver)")
            return
        }
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, Self.deviceID, userID: "user-1")
            let type = try await h.call(
                "PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey,
                json: ["attributes": ["order": ["type": "string"]],
                       "content_state": ["status": ["type": "string"], "eta": ["type": "int"]], "receipts": true])
            try #require(type.status == 201, "\(type.json)")
            var arguments = [
                script, "http://127.0.0.1:\(h.application.port)", ServerHarness.adminToken, app.id, Self.activityID, Self.deviceID,
            ]
            if let folder = ProcessInfo.processInfo.environment["ISLET_SCREENSHOTS"], !folder.isEmpty {
                arguments += ["--screenshots", folder]
            }
            let child = try ChildProcess(python, arguments)
            defer { child.stop() }
            func failure(_ what: String) -> String {
                "\(what)\n\(child.lines.joined(separator: "\n"))\n\(child.standardError)"
            }
            // The page is open on the app's activities: start one through the API.
            let ready = await child.line(within: .seconds(120)) { $0 == "ready" }
            try #require(ready != nil, Comment(rawValue: failure("the browser never reached the app's page")))
            let started = try await h.start(app, Self.activityID, audience: ["user_ids": ["user-1"]])
            try #require(started.status == 202, "\(started.json)")
            let updateToken = try await h.simulatedUpdateToken(activityID: Self.activityID)
            let registered = try await h.registerUpdateToken(app, Self.deviceID, Self.activityID, token: updateToken)
            try #require([200, 201].contains(registered.status), "\(registered.json)")
            // A tap on the phone, counted on the start push the page shows.
            _ = try await h.settledPushes(app, Self.activityID, count: 1)
            let tapped = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/\(Self.deviceID)/activities/\(Self.activityID)/taps", key: app.deviceKey,
                json: [:], headers: h.secretHeader(app, Self.deviceID))
            try #require(tapped.status == 201, "\(tapped.json)")
            // The phone says it showed the start: the send id its content state carries.
            let shown = try #require(h.sandbox.engine.activities().first {
                $0.attributes?["islet_activity_id"]?.stringValue == Self.activityID
            }?.contentState?["islet"]?["send_id"]?.stringValue)
            let receipt = try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/\(Self.deviceID)/activities/\(Self.activityID)/receipts", key: app.deviceKey,
                json: ["send_id": .string(shown)], headers: h.secretHeader(app, Self.deviceID))
            try #require(receipt.status == 201, "\(receipt.json)")

            let status = await child.exitStatus(within: .seconds(240))
            try #require(status == 0, Comment(rawValue: failure("the browser flow failed (status \(status.map(String.init) ?? "still running"))")))
            let summary = try JSONValue(parsing: Data(try #require(child.lines.last).utf8))
            #expect(summary["ok"] == .bool(true))
            #expect(summary["steps"]?.arrayValue?.compactMap(\.stringValue) == [
                "signed-in", "activity-appeared", "activity-page", "tapped", "received", "ended", "device", "overview", "lookup",
                "send-test", "pushes", "metrics", "devices", "webhooks", "signed-out",
            ])
            // Every view was audited (axe-core, and laid out at a phone's width).
            #expect(summary["audited"]?.arrayValue?.compactMap(\.stringValue) == [
                "sign-in", "app", "activity", "device", "overview", "lookup", "send", "pushes", "metrics", "devices", "webhooks",
            ])

            // The end the page sent reached the simulated phone, on the update token.
            let end = h.sandbox.engine.pushes().first { $0.event == "end" && $0.token == updateToken }
            #expect(end?.answer.status == 200)
            #expect(end?.deviceOutcome == .ended)
            let activity = try await h.call("GET", "/v1/apps/\(app.id)/activities/\(Self.activityID)", key: app.serverKey)
            #expect(activity["status"]?.stringValue == "ended")
            #expect(activity["end_cause"]?.stringValue == "server")
            // The form's test start: the state it was given, on the one device named.
            let tested = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-form-1", key: app.serverKey)
            #expect(tested.status == 200 && tested["content_state"] == ["status": "preparing", "eta": 5], "\(tested.json)")
            #expect(tested["attributes"]?["order"] == "A-1")
            #expect(tested["devices"]?.arrayValue?.compactMap { $0["device_id"]?.stringValue } == [Self.deviceID])
        }
    }
}
