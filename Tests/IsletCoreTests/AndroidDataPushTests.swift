import Foundation
import IsletCore
import Testing

@Suite("Android data messages: the same activity as an FCM data message")
struct AndroidDataPushTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    @Test func aStartCarriesEverythingAsStrings() throws {
        let push = AndroidDataPush(
            event: .start, activityID: "order-1", activityType: "DeliveryAttributes",
            contentState: ["eta": 5, "status": "preparing"], attributes: ["order": "A1"],
            staleDate: now.addingTimeInterval(600))
        let built = try push.build(now: now, lastTimestamp: nil)
        #expect(built.data == [
            "islet_event": "start", "islet_activity_id": "order-1", "islet_activity_type": "DeliveryAttributes",
            "content_state": #"{"eta":5,"status":"preparing"}"#, "attributes": #"{"order":"A1"}"#,
            "stale_date": "1800000600", "timestamp": "1800000000",
        ])
        #expect(built.priority == "high")
        #expect(built.collapseKey == "islet-order-1")
        #expect(built.size == built.data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count })
        #expect(built.androidJSON(ttl: 600) == ["priority": "high", "ttl": "600s", "collapse_key": "islet-order-1"])
    }

    @Test func quietUpdatesAreNormalAndTimestampsOnlyGrow() throws {
        let update = AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: ["eta": 4])
        let built = try update.build(now: now, lastTimestamp: 1_800_000_000)
        #expect(built.priority == "normal")
        #expect(built.timestamp == 1_800_000_001)
        var alerted = update
        alerted.alerted = true
        #expect(try alerted.build(now: now, lastTimestamp: nil).priority == "high")
        let end = AndroidDataPush(event: .end, activityID: "o", activityType: "T", dismissalDate: now.addingTimeInterval(60))
        let ended = try end.build(now: now, lastTimestamp: nil)
        #expect(ended.priority == "high")
        #expect(ended.data["dismissal_date"] == "1800000060")
        #expect(ended.data["content_state"] == nil)
    }

    @Test func theRulesNameTheirField() {
        func field(_ push: AndroidDataPush) -> String? {
            do {
                _ = try push.build(now: now, lastTimestamp: nil)
                return nil
            } catch {
                return error.field
            }
        }
        #expect(field(AndroidDataPush(event: .update, activityID: "o", activityType: "T")) == "content_state")
        #expect(field(AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: [:])) == "content_state")
        #expect(field(AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: ["a": 1], attributes: ["b": 1])) == "attributes")
        #expect(field(AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: ["a": 1], dismissalDate: now)) == "dismissal_date")
        #expect(field(AndroidDataPush(event: .update, activityID: "o", activityType: "T", contentState: ["a": 1], staleDate: now.addingTimeInterval(-1))) == "stale_date")
        // Over FCM's 4,096 bytes, the largest value is named.
        let big = AndroidDataPush(
            event: .start, activityID: "o", activityType: "T", contentState: ["a": 1],
            attributes: ["notes": .string(String(repeating: "x", count: 4_000))])
        #expect(field(big) == "attributes")
        let fits = AndroidDataPush(
            event: .update, activityID: "o", activityType: "T", contentState: ["n": .string(String(repeating: "x", count: 3_900))])
        #expect(field(fits) == nil)
    }
}
