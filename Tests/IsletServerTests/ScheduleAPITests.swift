import Foundation
import IsletCore
import IsletTesting
import Simulators
import Testing

/// Schedules and timelines through the HTTP API, fired by the server's own clock
/// loop (the test moves the shared manual clock) and delivered to the simulator.
@Suite("Schedules and timelines through the API")
struct ScheduleAPITests {
    /// An app with phone-1 holding the running activity `order-1`.
    func running(_ h: ServerHarness) async throws -> TestApp {
        let app = try await h.createApp()
        try await h.registerStartable(app, "phone-1", userID: "user-1")
        let started = try await h.start(app, "order-1", audience: ["user_ids": ["user-1"]])
        try #require(started.status == 202)
        let token = try await h.simulatedUpdateToken(activityID: "order-1")
        try await h.registerUpdateToken(app, "phone-1", "order-1", token: token)
        return app
    }

    func fields(_ reply: Reply) -> [String] {
        (reply["errors"]?.arrayValue ?? []).compactMap { $0["field"]?.stringValue }
    }

    @Test func aScheduledUpdateIsListedCancelledOrSentAtItsTime() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            let path = "/v1/apps/\(app.id)/activities/order-1/update"
            let at = h.clock.now().addingTimeInterval(600)
            let body: JSONValue = ["content_state": ["status": "on the way", "eta": 10], "send_at": .string(RFC3339.string(at))]
            let scheduled = try await h.call("POST", path, key: app.serverKey, json: body, headers: ["Idempotency-Key": "u-1"])
            #expect(scheduled.status == 202)
            #expect(scheduled["status"]?.stringValue == "scheduled")
            #expect(scheduled["send_at"]?.stringValue == RFC3339.string(at))
            let scheduleID = try #require(scheduled["schedule_id"]?.stringValue)
            let replay = try await h.call("POST", path, key: app.serverKey, json: body, headers: ["Idempotency-Key": "u-1"])
            #expect(replay["schedule_id"]?.stringValue == scheduleID && replay.headers["idempotent-replayed"] == "true")

            // Unix seconds work; milliseconds and a time long past are refused by name.
            let later = try await h.call("POST", path, key: app.serverKey, json: [
                "content_state": ["status": "later", "eta": 5], "send_at": .double(at.timeIntervalSince1970 + 60),
            ])
            #expect(later.status == 202)
            let millis = try await h.call("POST", path, key: app.serverKey, json: [
                "content_state": ["status": "x", "eta": 1], "send_at": .integer(Int64(at.timeIntervalSince1970 * 1000)),
            ])
            #expect(millis.status == 422 && fields(millis) == ["send_at"])
            let past = try await h.call("POST", path, key: app.serverKey, json: [
                "content_state": ["status": "x", "eta": 1], "send_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(-120))),
            ])
            #expect(past.status == 422 && fields(past) == ["send_at"])

            let list = try await h.call("GET", "/v1/apps/\(app.id)/schedules?activity_id=order-1&status=scheduled", key: app.serverKey)
            let items = list["items"]?.arrayValue ?? []
            #expect(items.map { $0["schedule_id"]?.stringValue } == [scheduleID, later["schedule_id"]?.stringValue])
            #expect(items.first?["kind"]?.stringValue == "update" && list["next_cursor"] == .null)
            let badQuery = try await h.call("GET", "/v1/apps/\(app.id)/schedules?status=soon&limit=0", key: app.serverKey)
            #expect(badQuery.status == 422 && Set(fields(badQuery)) == ["status", "limit"])

            let laterID = try #require(later["schedule_id"]?.stringValue)
            let cancelled = try await h.call("DELETE", "/v1/apps/\(app.id)/schedules/\(laterID)", key: app.serverKey)
            #expect(cancelled.status == 200 && cancelled["status"]?.stringValue == "cancelled")
            let again = try await h.call("DELETE", "/v1/apps/\(app.id)/schedules/\(laterID)", key: app.serverKey)
            #expect(again.status == 200 && again["status"]?.stringValue == "cancelled")

            h.clock.advance(by: 600)
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/schedules/\(scheduleID)", key: app.serverKey)["status"]?.stringValue == "sent"
            })
            let sent = try await h.call("GET", "/v1/apps/\(app.id)/schedules/\(scheduleID)", key: app.serverKey)
            #expect(sent["targets"]?.int64Value == 1 && sent["fired_at"] != .null)
            let pushes = try await h.settledPushes(app, "order-1", count: 2)
            #expect(pushes.last?["event"]?.stringValue == "update" && pushes.last?["status"]?.stringValue == "sent")
            let tooLate = try await h.call("DELETE", "/v1/apps/\(app.id)/schedules/\(scheduleID)", key: app.serverKey)
            #expect(tooLate.status == 409)
            let missing = try await h.call("GET", "/v1/apps/\(app.id)/schedules/sch_missing", key: app.serverKey)
            #expect(missing.status == 404)
        }
    }

    @Test func aTimelineIsPutReadAndPushedEntryByEntry() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            let path = "/v1/apps/\(app.id)/activities/order-1/timeline"
            let now = h.clock.now()
            func entry(_ offset: TimeInterval, _ eta: Int) -> JSONValue {
                ["at": .string(RFC3339.string(now.addingTimeInterval(offset))), "content_state": ["status": "cooking", "eta": .integer(Int64(eta))]]
            }
            let broken = try await h.call("PUT", path, key: app.serverKey, json: ["entries": [entry(60, 3), entry(30, 2)]])
            #expect(broken.status == 422 && fields(broken) == ["entries[1].at"])
            let typo = try await h.call("PUT", path, key: app.serverKey, json: ["entries": [["at": 1, "content_stat": [:]]]])
            #expect(typo.status == 422 && Set(fields(typo)).isSuperset(of: ["entries[0].content_state", "entries[0].content_stat"]))
            let put = try await h.call("PUT", path, key: app.serverKey, json: [
                "entries": [entry(60, 3), entry(120, 2)], "end_at": .string(RFC3339.string(now.addingTimeInterval(180))),
            ])
            #expect(put.status == 200)
            #expect(put["activity_id"]?.stringValue == "order-1" && put["renew"] == false)
            #expect(put["entries"]?.arrayValue?.map { $0["status"]?.stringValue } == ["pending", "pending"])
            #expect(put["entries"]?.arrayValue?.map { $0["index"]?.int64Value } == [0, 1])
            let listed = try await h.call("GET", "/v1/apps/\(app.id)/schedules?kind=timeline_entry", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.count == 2)
            // Two entries and the end wait.
            let metrics = try await h.call("GET", "/metrics", key: nil)
            #expect(metrics.json.stringValue?.contains(#"islet_schedules_pending{node="\#(h.nodeID)"} 3"#) == true)

            h.clock.advance(by: 60)
            #expect(try await h.eventually {
                try await h.call("GET", path, key: app.serverKey)["entries"]?.arrayValue?.first?["status"]?.stringValue == "sent"
            })
            let shown = try await h.call("GET", path, key: app.serverKey)
            #expect(shown["entries"]?.arrayValue?.first?["sent_at"] != .null)
            let cleared = try await h.call("DELETE", path, key: app.serverKey)
            #expect(cleared.status == 204)
            let after = try await h.call("GET", path, key: app.serverKey)
            #expect(after["entries"]?.arrayValue?.map { $0["status"]?.stringValue } == ["sent", "cancelled"])
            let activity = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(activity["status"]?.stringValue == "updated" && activity["renewed_to"] == .null)
            let nothing = try await h.call("GET", "/v1/apps/\(app.id)/activities/nothing/timeline", key: app.serverKey)
            #expect(nothing.status == 404)
        }
    }

    @Test func aScheduledStartWithATimelineAndAScheduledAlert() async throws {
        try await ServerHarness.with { h in
            let app = try await h.createApp()
            try await h.registerStartable(app, "phone-1", userID: "user-1")
            let at = h.clock.now().addingTimeInterval(300)
            let started = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "day-1", "activity_type": "DeliveryAttributes", "attributes": ["order": "day-1"],
                "content_state": ["status": "soon", "eta": 30], "alert": ["title": "Today", "body": "Your day"],
                "audience": ["user_ids": ["user-1"]], "send_at": .string(RFC3339.string(at)),
                "timeline": ["entries": [["at": .string(RFC3339.string(at.addingTimeInterval(60))), "content_state": ["status": "now", "eta": 1]]]],
            ])
            #expect(started.status == 202 && started["status"]?.stringValue == "scheduled")
            let early = try await h.call("GET", "/v1/apps/\(app.id)/activities/day-1", key: app.serverKey)
            #expect(early.status == 404)
            let badTimeline = try await h.call("POST", "/v1/apps/\(app.id)/activities", key: app.serverKey, json: [
                "activity_id": "day-2", "activity_type": "DeliveryAttributes", "attributes": ["order": "day-2"],
                "content_state": ["status": "soon", "eta": 30], "alert": ["title": "Today", "body": "Your day"],
                "audience": ["user_ids": ["user-1"]], "send_at": .string(RFC3339.string(at)),
                "timeline": ["entries": [["at": .string(RFC3339.string(at.addingTimeInterval(-60))), "content_state": ["eta": 1]]]],
            ])
            #expect(badTimeline.status == 422 && fields(badTimeline) == ["timeline.entries[0].at"])
            let alert = try await h.call("POST", "/v1/apps/\(app.id)/notifications", key: app.serverKey, json: [
                "audience": ["user_ids": ["user-1"]], "alert": ["title": "Hi", "body": "There"],
                "send_at": .double(at.timeIntervalSince1970),
            ])
            #expect(alert.status == 202 && alert["status"]?.stringValue == "scheduled")
            h.clock.advance(by: 300)
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/activities/day-1", key: app.serverKey).status == 200
            })
            // phone-1 has no device token: the alert reaches nobody.
            #expect(try await h.eventually {
                let item = try await h.call("GET", "/v1/apps/\(app.id)/schedules/\(alert["schedule_id"]?.stringValue ?? "")", key: app.serverKey)
                return item["status"]?.stringValue == "dropped" && item["reason"]?.stringValue == "no_targets"
            })
            _ = try await h.simulatedUpdateToken(activityID: "day-1")
        }
    }

    @Test func aRenewalShowsOnBothActivities() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            // phone-2 holds the activity too (the backend let it in), but has no
            // push-to-start token.
            try await h.registerDevice(app, "phone-2")
            let widened = try await h.call(
                "POST", "/v1/apps/\(app.id)/activities/order-1/audience", key: app.serverKey, json: ["device_ids": ["phone-2"]])
            #expect(widened.status == 200, "\(widened.json)")
            #expect(try await h.registerUpdateToken(app, "phone-2", "order-1", token: ServerHarness.token()).status == 201)
            let started = h.clock.now()
            let put = try await h.call("PUT", "/v1/apps/\(app.id)/activities/order-1/timeline", key: app.serverKey, json: [
                "renew": true,
                "entries": [["at": .string(RFC3339.string(started.addingTimeInterval(9 * 3600))), "content_state": ["status": "late", "eta": 1]]],
            ])
            #expect(put.status == 200 && put["renew"] == true)
            h.clock.set(started.addingTimeInterval(8 * 3600 - 15 * 60))
            #expect(try await h.eventually {
                try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)["renewed_to"]?.stringValue == "order-1~2"
            })
            let original = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)
            #expect(original["status"]?.stringValue == "ended" && original["end_cause"]?.stringValue == "renewed")
            #expect(original["not_renewed"]?.arrayValue == ["phone-2"])
            let successor = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1~2", key: app.serverKey)
            #expect(successor["renewed_from"]?.stringValue == "order-1" && successor["renewed_to"] == .null)
            let moved = try await h.call("GET", "/v1/apps/\(app.id)/schedules?activity_id=order-1~2", key: app.serverKey)
            #expect(moved["items"]?.arrayValue?.map { $0["kind"]?.stringValue } == ["timeline_entry"])
        }
    }

    /// A scheduled end, and the edges of both windows, as the API answers them; an
    /// item whose activity ended before its time is dropped and can no longer be
    /// cancelled.
    @Test func scheduledEndsAndDroppedItemsThroughTheAPI() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            let now = h.clock.now()
            let base = "/v1/apps/\(app.id)/activities/order-1"
            func at(_ offset: TimeInterval) -> JSONValue { .string(RFC3339.string(now.addingTimeInterval(offset))) }
            let lateUpdate = try await h.call("POST", base + "/update", key: app.serverKey, json: [
                "content_state": ["status": "late", "eta": 1], "send_at": at(8 * 3600 + 1),
            ])
            #expect(lateUpdate.status == 422 && fields(lateUpdate) == ["send_at"])
            let lateEnd = try await h.call("POST", base + "/end", key: app.serverKey, json: ["send_at": at(12 * 3600 + 1)])
            #expect(lateEnd.status == 422 && fields(lateEnd) == ["send_at"])
            let end = try await h.call("POST", base + "/end", key: app.serverKey, json: [
                "content_state": ["status": "done", "eta": 0], "send_at": at(9 * 3600),
            ])
            #expect(end.status == 202 && end["status"]?.stringValue == "scheduled")
            let endID = try #require(end["schedule_id"]?.stringValue)
            let update = try await h.call("POST", base + "/update", key: app.serverKey, json: [
                "content_state": ["status": "soon", "eta": 2], "send_at": at(600),
            ])
            let updateID = try #require(update["schedule_id"]?.stringValue)
            let listed = try await h.call("GET", "/v1/apps/\(app.id)/schedules?activity_id=order-1", key: app.serverKey)
            #expect(listed["items"]?.arrayValue?.map { $0["kind"]?.stringValue } == ["update", "end"])

            // The activity ends now: both items find it ended when their time comes.
            #expect(try await h.call("POST", base + "/end", key: app.serverKey, body: "{}").status == 202)
            func item(_ id: String) async throws -> Reply {
                try await h.call("GET", "/v1/apps/\(app.id)/schedules/\(id)", key: app.serverKey)
            }
            h.clock.advance(by: 600)
            #expect(try await h.eventually { try await item(updateID)["status"]?.stringValue == "dropped" })
            #expect(try await item(updateID)["reason"]?.stringValue == "activity_ended")
            let cancelDropped = try await h.call("DELETE", "/v1/apps/\(app.id)/schedules/\(updateID)", key: app.serverKey)
            #expect(cancelDropped.status == 409)
            h.clock.set(now.addingTimeInterval(9 * 3600))
            #expect(try await h.eventually { try await item(endID)["status"]?.stringValue == "dropped" })
            #expect(try await item(endID)["reason"]?.stringValue == "activity_ended")
            // An ended activity takes no new schedule.
            let afterEnd = try await h.call("POST", base + "/update", key: app.serverKey, json: [
                "content_state": ["status": "x", "eta": 1], "send_at": .string(RFC3339.string(h.clock.now().addingTimeInterval(60))),
            ])
            #expect(afterEnd.status == 409)
        }
    }

    /// Entries overdue at once: only the newest is sent, the older ones skipped.
    @Test func overdueEntriesSkipToTheNewestThroughTheAPI() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            let path = "/v1/apps/\(app.id)/activities/order-1/timeline"
            let now = h.clock.now()
            let entries: [JSONValue] = [60, 120, 180].map { (offset: Int) -> JSONValue in
                [
                    "at": .string(RFC3339.string(now.addingTimeInterval(TimeInterval(offset)))),
                    "content_state": ["status": .string("at \(offset)"), "eta": 1],
                ]
            }
            #expect(try await h.call("PUT", path, key: app.serverKey, json: ["entries": .array(entries)]).status == 200)
            let before = h.sandbox.engine.pushes().count
            h.clock.advance(by: 150)
            #expect(try await h.eventually {
                try await h.call("GET", path, key: app.serverKey)["entries"]?.arrayValue?.map { $0["status"]?.stringValue }
                    == ["skipped", "sent", "pending"]
            })
            #expect(try await h.eventually { h.sandbox.engine.pushes().count == before + 1 })
            #expect(h.sandbox.engine.pushes().last?.payload?["aps"]?["content-state"]?["status"] == "at 120")
        }
    }

    /// Each entry is checked against the activity type's schema and the limit on
    /// entries, and a fault names its place.
    @Test func entriesAreCheckedAgainstTheSchemaAndTheLimit() async throws {
        try await ServerHarness.with { h in
            let app = try await running(h)
            let schema: JSONValue = [
                "attributes": ["order": ["type": "string"]],
                "content_state": ["status": ["type": "string"], "eta": ["type": "int"]],
            ]
            #expect(try await h.call("PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey, json: schema).status == 201)
            let path = "/v1/apps/\(app.id)/activities/order-1/timeline"
            let now = h.clock.now()
            func entry(_ offset: Int, eta: JSONValue) -> JSONValue {
                ["at": .string(RFC3339.string(now.addingTimeInterval(TimeInterval(offset)))), "content_state": ["status": "cooking", "eta": eta]]
            }
            let wrongType = try await h.call("PUT", path, key: app.serverKey, json: ["entries": [entry(60, eta: 3), entry(120, eta: "soon")]])
            #expect(wrongType.status == 422 && fields(wrongType) == ["entries[1].content_state.eta"], "\(wrongType.json)")
            let tooMany = try await h.call("PUT", path, key: app.serverKey, json: [
                "entries": .array((1...1_441).map { entry($0 * 10, eta: 1) }),
            ])
            #expect(tooMany.status == 422 && fields(tooMany) == ["entries"], "\(tooMany.json)")
            let most = try await h.call("PUT", path, key: app.serverKey, json: [
                "entries": .array((1...1_440).map { entry($0 * 10, eta: 1) }),
            ])
            #expect(most.status == 200 && most["entries"]?.arrayValue?.count == 1_440)
        }
    }
}
