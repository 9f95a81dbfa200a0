import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: schedules and timelines")
struct ScheduleContractTests {
    static func item(_ id: String, _ kind: ScheduleKind = .update, activity: String? = "a1", at seconds: Double, generation: Int64? = nil, index: Int? = nil) -> NewSchedule {
        NewSchedule(
            scheduleID: id, kind: kind, activityID: activity, sendAt: Fixture.at(seconds),
            command: .object(["n": .string(id)]), timelineGeneration: generation, entryIndex: index)
    }

    @Test(arguments: StoreBackend.all)
    func itemsAreListedSoonestFirstClaimedWhenDueAndSettledOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                try session.insertSchedules(
                    appID: "app_1",
                    [Self.item("s3", at: 30), Self.item("s1", at: 10), Self.item("s2", .notification, activity: nil, at: 10)],
                    now: Fixture.at(1))
                try session.insertSchedules(appID: "app_2", [Self.item("t1", at: 5)], now: Fixture.at(1))
                let s1 = try #require(try session.schedule(appID: "app_1", scheduleID: "s1"))
                #expect(s1.kind == .update && s1.status == .scheduled && s1.command == ["n": "s1"] && s1.createdAt == Fixture.at(1))
                #expect(try session.schedule(appID: "app_2", scheduleID: "s1") == nil)
                func ids(_ filter: ScheduleFilter) throws -> [String] {
                    try session.schedules(appID: "app_1", filter: filter).map(\.scheduleID)
                }
                #expect(try ids(ScheduleFilter()) == ["s1", "s2", "s3"])
                #expect(try ids(ScheduleFilter(kind: .notification)) == ["s2"])
                #expect(try ids(ScheduleFilter(activityID: "a1")) == ["s1", "s3"])
                let first = try session.schedules(appID: "app_1", filter: ScheduleFilter(limit: 2))
                let after = ScheduleCursor(sendAt: first[1].sendAt.unixMilliseconds, sequence: first[1].sequence)
                #expect(try ids(ScheduleFilter(after: after)) == ["s3"])
                #expect(try session.nextScheduleTime() == Fixture.at(5))
                #expect(try session.pendingScheduleCount() == 4)

                let due = try session.claimDueSchedules(now: Fixture.at(10), limit: 10)
                #expect(due.map(\.scheduleID) == ["t1", "s1", "s2"])
                try session.settleSchedule(sequence: due[1].sequence, status: .sent, reason: nil, detail: nil, targets: 3, at: Fixture.at(11))
                // Only a scheduled item settles, once.
                try session.settleSchedule(sequence: due[1].sequence, status: .dropped, reason: "x", detail: nil, targets: nil, at: Fixture.at(12))
                let sent = try #require(try session.schedule(appID: "app_1", scheduleID: "s1"))
                #expect(sent.status == .sent && sent.targets == 3 && sent.firedAt == Fixture.at(11) && sent.reason == nil)
                #expect(try session.cancelSchedule(appID: "app_1", scheduleID: "s1", now: Fixture.at(12)) == false)
                #expect(try session.cancelSchedule(appID: "app_1", scheduleID: "s3", now: Fixture.at(12)))
                #expect(try session.cancelSchedule(appID: "app_1", scheduleID: "s3", now: Fixture.at(13)) == false)
                #expect(try session.schedule(appID: "app_1", scheduleID: "s3")?.status == .cancelled)
                #expect(try ids(ScheduleFilter(status: .scheduled)) == ["s2"])
                #expect(try session.pendingSchedules(appID: "app_1", activityID: "a1", kind: .update).isEmpty)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func timelinesSkipOverdueEntriesMoveToASuccessorAndComeDueForRenewal(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                let timeline = TimelineRecord(
                    appID: "app_1", activityID: "a1", generation: 1, endAt: Fixture.at(100), renew: true,
                    renewAt: Fixture.at(50), startAlert: ["title": "T"], updatedAt: Fixture.at(1))
                try session.putTimeline(timeline)
                #expect(try session.timeline(appID: "app_1", activityID: "a1") == timeline)
                try session.insertSchedules(
                    appID: "app_1",
                    [Self.item("e0", .timelineEntry, at: 10, generation: 1, index: 0),
                     Self.item("e1", .timelineEntry, at: 20, generation: 1, index: 1),
                     Self.item("e2", .timelineEntry, at: 60, generation: 1, index: 2),
                     Self.item("end", .end, at: 100, generation: 1),
                     Self.item("other", .timelineEntry, activity: "a2", at: 15, generation: 1, index: 0)],
                    now: Fixture.at(1))
                // At 25: e0 and e1 are due; only e1, the newest, stays to be sent.
                #expect(try session.skipSupersededEntries(now: Fixture.at(25)) == 1)
                let e0 = try #require(try session.schedule(appID: "app_1", scheduleID: "e0"))
                #expect(e0.status == .dropped && e0.reason == ScheduleReason.superseded)
                #expect(try session.claimDueSchedules(now: Fixture.at(25), limit: 10).map(\.scheduleID) == ["other", "e1"])

                #expect(try session.dueRenewals(now: Fixture.at(49), limit: 10).isEmpty)
                #expect(try session.dueRenewals(now: Fixture.at(50), limit: 10).map(\.activityID) == ["a1"])
                #expect(try session.moveTimeline(appID: "app_1", from: "a1", to: "a1~2") == 3)
                #expect(try session.timelineItems(appID: "app_1", activityID: "a1~2", generation: 1).map(\.scheduleID) == ["e1", "e2", "end"])
                #expect(try session.timelineItems(appID: "app_1", activityID: "a1", generation: 1).map(\.scheduleID) == ["e0"])
                #expect(try session.settlePendingTimeline(appID: "app_1", activityID: "a1~2", status: .cancelled, reason: "replaced", now: Fixture.at(30)) == 3)
                var done = timeline
                done.renewAt = nil
                try session.putTimeline(done)
                #expect(try session.dueRenewals(now: Fixture.at(500), limit: 10).isEmpty)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func renewalsLinkBothActivitiesAndStartAlertsAreKept(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1", at: Fixture.at(1))
                try session.startActivity("a1~2", at: Fixture.at(2))
                try session.setStartAlert(appID: "app_1", activityID: "a1", alert: ["title": "T", "body": "B"])
                try session.recordRenewal(appID: "app_1", from: "a1", to: "a1~2", notRenewed: ["phone-2"])
                let original = try #require(try session.activity(appID: "app_1", activityID: "a1"))
                #expect(original.startAlert == ["title": "T", "body": "B"])
                #expect(original.renewal == RenewalLinks(renewedTo: "a1~2", notRenewed: ["phone-2"]))
                #expect(try session.activity(appID: "app_1", activityID: "a1~2")?.renewal == RenewalLinks(renewedFrom: "a1"))
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func theNextTimedWorkIsTheEarliestItemRenewalOrEndTimeStillPending(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                #expect(try session.nextTimedWork() == nil)
                // An activity's end time.
                try session.startActivity("a1", endAt: Fixture.at(90), at: Fixture.at(1))
                #expect(try session.nextTimedWork() == Fixture.at(90))
                try session.setEndAt(appID: "app_1", activityID: "a1", endAt: Fixture.at(80))
                #expect(try session.nextTimedWork() == Fixture.at(80))
                // A timeline's renewal, sooner.
                try session.putTimeline(TimelineRecord(
                    appID: "app_1", activityID: "a1", generation: 1, endAt: nil, renew: true, renewAt: Fixture.at(70),
                    startAlert: nil, updatedAt: Fixture.at(1)))
                #expect(try session.nextTimedWork() == Fixture.at(70))
                // A scheduled item, sooner still; once settled, it no longer counts.
                try session.insertSchedules(appID: "app_1", [Self.item("s1", at: 60)], now: Fixture.at(1))
                #expect(try session.nextTimedWork() == Fixture.at(60))
                #expect(try session.cancelSchedule(appID: "app_1", scheduleID: "s1", now: Fixture.at(2)))
                #expect(try session.nextTimedWork() == Fixture.at(70))
                try session.putTimeline(TimelineRecord(
                    appID: "app_1", activityID: "a1", generation: 1, endAt: nil, renew: false, renewAt: nil, startAlert: nil,
                    updatedAt: Fixture.at(2)))
                #expect(try session.nextTimedWork() == Fixture.at(80))
                // An ended activity's end time is no work.
                try session.endActivity(appID: "app_1", activityID: "a1", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(3))
                #expect(try session.nextTimedWork() == nil)
                // Times far in the past come first, whatever their table.
                try session.startActivity("a2", endAt: Fixture.at(-86_400 * 365), at: Fixture.at(1))
                try session.insertSchedules(appID: "app_1", [Self.item("s2", at: -10)], now: Fixture.at(1))
                #expect(try session.nextTimedWork() == Fixture.at(-86_400 * 365))
            }
        }
    }
}
