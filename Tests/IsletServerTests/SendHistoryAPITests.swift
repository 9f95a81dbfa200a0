import Foundation
import IsletCore
import IsletService
import Testing

/// `GET /v1/apps/{app_id}/activities/{activity_id}/sends`: an activity's timeline,
/// each send with the content state it carried, what changed, and what it came to.
@Suite("An activity's sends through the API")
struct SendHistoryAPITests {
    @Test func eachSendCarriesItsStateWhatChangedOnItsPlatformAndItsCounts() async throws {
        try await ServerHarness.with(fcm: true) { h in
            let app = try await AndroidActivityTests.createApp(h)
            try await h.registerStartable(app, "iphone-1", userID: "u1")
            try await AndroidActivityTests.registerAndroid(h, app, "pixel-1", userID: "u1")
            let type = try await h.call(
                "PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey,
                json: ["attributes": ["order": ["type": "string"]],
                       "content_state": ["status": ["type": "string"], "eta": ["type": "int"]], "receipts": true])
            try #require(type.status == 201, "\(type.json)")
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["u1"]]).status == 202)
            let token = try await h.simulatedUpdateToken(activityID: "order-1")
            #expect(try await h.registerUpdateToken(app, "iphone-1", "order-1", token: token).status == 201)
            #expect(try await h.update(app, "order-1", state: ["status": "on the way", "eta": 25]).status == 202)
            // Settled before the next, which would otherwise supersede it.
            _ = try await h.settledPushes(app, "order-1", count: 4)
            #expect(try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10]).status == 202)
            _ = try await h.settledPushes(app, "order-1", count: 6)
            // The phone shows the second update and says so; the user taps it.
            let shown = try #require(try await h.eventually {
                h.sandbox.engine.activities().first { $0.updateToken == token }?.contentState?["eta"] == 10
            } ? h.sandbox.engine.activities().first { $0.updateToken == token }?.contentState?["islet"]?["send_id"]?.stringValue : nil)
            let device = h.secretHeader(app, "iphone-1")
            #expect(try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/iphone-1/activities/order-1/receipts", key: app.deviceKey,
                json: ["send_id": .string(shown)], headers: device).status == 201)
            #expect(try await h.call(
                "POST", "/v1/apps/\(app.id)/devices/iphone-1/activities/order-1/taps", key: app.deviceKey,
                json: [:], headers: device).status == 201)

            let path = "/v1/apps/\(app.id)/activities/order-1/sends"
            let all = try await h.call("GET", path, key: app.serverKey)
            #expect(all.status == 200, "\(all.json)")
            let items = all["items"]?.arrayValue ?? []
            // Newest first: each update and the start, once per platform.
            #expect(items.map { "\($0["event"]?.stringValue ?? "")/\($0["platform"]?.stringValue ?? "")" } == [
                "update/android", "update/ios", "update/android", "update/ios", "start/android", "start/ios",
            ] || items.map { "\($0["event"]?.stringValue ?? "")/\($0["platform"]?.stringValue ?? "")" } == [
                "update/ios", "update/android", "update/ios", "update/android", "start/ios", "start/android",
            ], "\(items)")
            #expect(all["next_cursor"] == .null)
            for platform in ["ios", "android"] {
                let mine = items.filter { $0["platform"]?.stringValue == platform }
                // Islet's receipt stamp is not part of what the app sent.
                #expect(mine.map { $0["content_state"] } == [
                    ["status": "on the way", "eta": 10], ["status": "on the way", "eta": 25], ["status": "preparing", "eta": 25],
                ], "\(platform): \(mine)")
                #expect(mine.map { $0["changed"] } == [["eta"], ["status"], .null], "\(platform)")
                #expect(mine.allSatisfy { $0["targets"] == 1 && $0["sent"] == 1 && $0["failed"] == 0 }, "\(mine)")
            }
            let ios = items.filter { $0["platform"] == "ios" }
            #expect(ios.map { $0["received"] } == [1, 0, 0] && ios.first?["send_id"]?.stringValue == shown)
            #expect(ios.map { $0["taps"] } == [1, 0, 0], "\(ios)")
            #expect(ios.last?["alert"]?["title"] == "Your order" && ios.first?["alert"] == .null)
            #expect(ios.last?["token_kind"] == "push_to_start" && ios.first?["token_kind"] == "live_activity_update")

            // Paged: a page of one still knows what changed from the send before it.
            var seen: [JSONValue] = []
            var cursor: String?
            repeat {
                let page = try await h.call(
                    "GET", path + "?limit=1" + (cursor.map { "&cursor=\($0)" } ?? ""), key: app.serverKey)
                #expect(page.status == 200, "\(page.json)")
                seen += page["items"]?.arrayValue ?? []
                cursor = page["next_cursor"]?.stringValue
            } while cursor != nil && seen.count < 10
            #expect(seen == items)

            // The app's backend only, its own activities, bounded pages.
            #expect(try await h.call("GET", path, key: app.deviceKey).status == 403)
            #expect(try await h.call("GET", "/v1/apps/\(app.id)/activities/order-9/sends", key: app.serverKey).status == 404)
            for query in ["limit=0", "limit=201", "limit=-1", "limit=1.5", "cursor=0", "cursor=-0", "cursor=x"] {
                let refused = try await h.call("GET", path + "?" + query, key: app.serverKey)
                #expect(refused.status == 422, "\(query): \(refused.json)")
                #expect(refused.errorFields == [String(query.prefix { $0 != "=" })], "\(query)")
            }
            let other = try await h.createApp(name: "Other", bundleID: "com.example.other")
            #expect(try await h.call("GET", path, key: other.serverKey).status == 404)
        }
    }
}

/// What a send's payload carried, and what changed between two content states.
@Suite("Reading a send's content")
struct SendContentReadingTests {
    @Test func changesNameEachDifferingPathAddedOrRemovedAndCountArraysWhole() {
        let old: JSONValue = ["status": "a", "driver": ["name": "Kim", "car": "red"], "stops": [1, 2], "gone": true]
        let new: JSONValue = ["status": "a", "driver": ["name": "Lee", "car": "red"], "stops": [1, 3], "new": 0]
        #expect(SendContentReading.changes(from: old, to: new) == ["driver.name", "gone", "new", "stops"])
        #expect(SendContentReading.changes(from: new, to: new).isEmpty)
        // Extremes: a number's kind, zero's sign and the tiniest values count as they are written.
        let numbers: [JSONValue] = [.integer(0), .double(0), .double(-0.0), .double(.leastNonzeroMagnitude),
                                    .integer(.max), .integer(.min), .double(.greatestFiniteMagnitude)]
        for (i, a) in numbers.enumerated() {
            for (j, b) in numbers.enumerated() {
                let changed = SendContentReading.changes(from: ["n": a], to: ["n": b])
                #expect(changed == (a == b ? [] : ["n"]), "\(i) \(j)")
            }
        }
        // A value that turns from an object into a scalar counts whole.
        #expect(SendContentReading.changes(from: ["d": ["x": 1]], to: ["d": 1]) == ["d"])
    }

    @Test func theReceiptStampOfItsOwnSendIsTakenOffAndNothingElse() {
        let apns = Data(#"{"aps":{"content-state":{"eta":1,"islet":{"send_id":"7"}},"alert":{"title":"t"}}}"#.utf8)
        let read = SendContentReading.read(apns, tokenKind: .liveActivityUpdate, sendID: 7)
        #expect(read.contentState == ["eta": 1] && read.alert == ["title": "t"])
        // Another send's stamp, or an app's own "islet" (a type without receipts), stays.
        #expect(SendContentReading.read(apns, tokenKind: .liveActivityUpdate, sendID: 8).contentState?["islet"] != nil)
        let fcm = Data(#"{"content_state":"{\"eta\":2}","islet_send_id":"9"}"#.utf8)
        #expect(SendContentReading.read(fcm, tokenKind: .fcm, sendID: 9).contentState == ["eta": 2])
        // What cannot be read is no state, not a failure.
        #expect(SendContentReading.read(Data("[".utf8), tokenKind: .fcm, sendID: 1).contentState == nil)
        #expect(SendContentReading.read(Data(#"{"content_state":"{"}"#.utf8), tokenKind: .fcm, sendID: 1).contentState == nil)
    }
}
