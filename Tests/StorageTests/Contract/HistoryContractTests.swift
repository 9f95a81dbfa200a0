import Foundation
import IsletCore
import Storage
import Testing

/// The history's retention: old settled sends and ended activities go a bounded
/// batch at a time, with everything that hangs on them, and nothing still needed
/// goes (a push queued or being sent, its send, a running activity's copies).
@Suite("Store contract: history retention")
struct HistoryContractTests {
    /// The cutoff every test purges before: everything at or after it stays.
    static let cutoff = Fixture.at(1_000)

    /// Runs `purge` (one transaction each) until a run deletes fewer than `limit`
    /// rows, checking that none deletes more; answers the sum and how many runs.
    static func purgeAll(
        _ store: any Store, limit: Int, _ purge: @escaping (any StoreSession, Int) throws -> PurgedHistory
    ) throws -> (purged: PurgedHistory, runs: Int) {
        var total = PurgedHistory()
        var runs = 0
        while runs < 100 {
            let batch = try store.writeNow { try purge($0, limit) }
            runs += 1
            #expect(batch.total <= limit, "a batch of \(limit) deleted \(batch.total) rows: \(batch)")
            total = total + batch
            if batch.total < limit { break }
        }
        return (total, runs)
    }

    /// Both purges as the service runs them: the sends first, the activities with
    /// what the batch leaves.
    static func purgeHistory(_ session: any StoreSession, limit: Int) throws -> PurgedHistory {
        let sends = try session.purgeSettledSends(appID: "app_1", before: cutoff, limit: limit)
        guard limit > sends.total else { return sends }
        return sends + (try session.purgeEndedActivities(appID: "app_1", endedBefore: cutoff, limit: limit - sends.total))
    }

    /// Claims every push due at `at` and records them sent, but those whose place
    /// among the claimed (by id) is in `holding`: they stay in flight. Answers the
    /// claimed pushes' ids, in order.
    @discardableResult
    static func send(_ store: any Store, at seconds: Double, holding: Set<Int> = []) throws -> [Int64] {
        try store.writeNow { session in
            var sends: [Int64: SendContent] = [:]
            let claimed = try session.claimDuePushes(now: Fixture.at(seconds), limit: 100, lease: Fixture.lease, sends: &sends)
            let sent = claimed.enumerated().filter { !holding.contains($0.offset) }.map {
                SentPush(pushID: $0.element.id, attempts: 1, apnsStatus: 200, serviceMessageID: nil)
            }
            try session.recordSent(sent, by: Fixture.lease.nodeID, now: Fixture.at(seconds))
            return claimed.map(\.id)
        }
    }

    @Test(arguments: StoreBackend.all)
    func settledSendsGoABatchAtATimeWhileQueuedPushesAndRunningStartsStay(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            let targets = (1...3).map { Fixture.target("d\($0)", "tok\($0)") }
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                try session.startActivity("a1", at: Fixture.at(0))
                // Pushes 1–3: the start of a1, still running.
                try session.queue(.start, activityID: "a1", targets: targets, kind: .pushToStart, minter: minter, at: Fixture.at(5))
                // 4–6: an update; 7–8: another, one of whose pushes stays in flight.
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter, at: Fixture.at(10))
                try session.queue(.update, activityID: "a1", targets: Array(targets.prefix(2)), minter: minter, at: Fixture.at(20))
                // 9–11: an alert, of no activity.
                try session.queue(.alert, activityID: nil, targets: targets, kind: .device, minter: minter, at: Fixture.at(30))
                // 12: another app's, as old.
                let other = try session.insertSend(appID: "app_2", activityID: nil, content: Fixture.content(.alert), now: Fixture.at(30))
                try session.enqueuePushes(
                    sendID: other, appID: "app_2", activityID: nil, activityType: nil, event: .alert, tokenKind: .device,
                    targets: [Fixture.target("x1", "tokx")], now: Fixture.at(30), mintID: minter.mint)
            }
            let claimed = try Self.send(store, at: 40, holding: [7])
            #expect(claimed.count == 12)
            // An update after the cutoff, sent after it.
            _ = try store.writeNow { session in
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter, at: Fixture.at(5_000))
            }
            try Self.send(store, at: 5_001)
            let before = try store.readNow { try $0.historySummary(appID: "app_1") }
            #expect(before == HistorySummary(activities: 1, sends: 5, pushes: 14, oldestAt: Fixture.at(0)))

            let (purged, runs) = try Self.purgeAll(store, limit: 2) { session, limit in
                try session.purgeSettledSends(appID: "app_1", before: Self.cutoff, limit: limit)
            }
            // The first update and the alert went whole; of the second update, the
            // push sent; the start of a running activity, the push in flight (and so
            // its send) and everything after the cutoff stayed.
            #expect(purged.pushes == 7 && purged.sends == 2, "\(purged)")
            #expect(purged.activities == 0 && purged.copies == 0)
            #expect(runs >= 5)
            let after = try store.readNow { try $0.historySummary(appID: "app_1") }
            #expect(after == HistorySummary(activities: 1, sends: 3, pushes: 7, oldestAt: Fixture.at(0)))
            let left = try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
            #expect(left.map(\.id) == Array(claimed[0..<3]) + [claimed[7]] + left.suffix(3).map(\.id))
            #expect(try store.readNow { try $0.historySummary(appID: "app_2") }.pushes == 1)

            // Once the push in flight settles, it goes with its send.
            try store.writeNow { session in
                let recorded = try session.recordOutcome(
                    pushID: claimed[7], PushOutcome(status: .failed, attempts: 1, apnsStatus: 410, reason: "Unregistered"),
                    by: Fixture.lease.nodeID, now: Fixture.at(60))
                #expect(recorded)
            }
            let settled = try Self.purgeAll(store, limit: 2) { session, limit in
                try session.purgeSettledSends(appID: "app_1", before: Self.cutoff, limit: limit)
            }.purged
            #expect(settled.pushes == 1 && settled.sends == 1, "\(settled)")
            // Once the activity ends, its start goes too.
            try store.writeNow { session in
                try session.endActivity(appID: "app_1", activityID: "a1", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(100))
            }
            let ended = try Self.purgeAll(store, limit: 10) { session, limit in
                try session.purgeSettledSends(appID: "app_1", before: Self.cutoff, limit: limit)
            }.purged
            #expect(ended.pushes == 3 && ended.sends == 1, "\(ended)")
            let last = try store.readNow { try $0.historySummary(appID: "app_1") }
            #expect(last == HistorySummary(activities: 1, sends: 1, pushes: 3, oldestAt: Fixture.at(0)))
            // Nothing is left to delete before the cutoff.
            #expect(try store.writeNow { try $0.purgeSettledSends(appID: "app_1", before: Self.cutoff, limit: 10) } == PurgedHistory())
        }
    }

    @Test(arguments: StoreBackend.all)
    func endedActivitiesGoWithTheirCopiesAudienceTapsSchedulesAndSends(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                // a1: ended before the cutoff, with two copies, an audience of two
                // values, two taps, a cancelled schedule item, a timeline and an
                // update of two pushes.
                try session.startActivity("a1", at: Fixture.at(0))
                try session.insertPendingCopies(
                    appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2")],
                    now: Fixture.at(1))
                try session.setJoin(appID: "app_1", activityID: "a1", rule: .audience, adding: JoinAudience(userIDs: ["u1"], tags: ["t1"]))
                try session.queue(
                    .update, activityID: "a1", targets: [Fixture.target("d1", "u1"), Fixture.target("d2", "u2")], minter: minter,
                    at: Fixture.at(10))
                try session.insertSchedules(appID: "app_1", [
                    NewSchedule(scheduleID: "sch_1", kind: .update, activityID: "a1", sendAt: Fixture.at(60), command: .object([:])),
                ], now: Fixture.at(2))
                #expect(try session.cancelSchedule(appID: "app_1", scheduleID: "sch_1", now: Fixture.at(3)))
                try session.putTimeline(TimelineRecord(
                    appID: "app_1", activityID: "a1", generation: 1, endAt: nil, renew: false, renewAt: nil, startAlert: nil,
                    updatedAt: Fixture.at(2)))
                // a2: running, with a copy and an update before the cutoff.
                try session.startActivity("a2", at: Fixture.at(20))
                try session.insertPendingCopies(
                    appID: "app_1", activityID: "a2", targets: [Fixture.target("d1", "s1")], now: Fixture.at(21))
                try session.queue(.update, activityID: "a2", targets: [Fixture.target("d1", "u3")], minter: minter, at: Fixture.at(22))
                // a3 ends after the cutoff; a4 has an item still scheduled; a5 has
                // a channel of the app's own; a6 a channel Islet made, not yet
                // retired.
                for (index, id) in ["a3", "a4", "a5", "a6"].enumerated() {
                    try session.startActivity(id, at: Fixture.at(30 + Double(index)))
                }
                try session.insertSchedules(appID: "app_1", [
                    NewSchedule(scheduleID: "sch_4", kind: .end, activityID: "a4", sendAt: Fixture.at(99_999), command: .object([:])),
                ], now: Fixture.at(2))
                for (channelID, activityID, managed) in [("Y2gx", "a5", false), ("Y2gy", "a6", true)] {
                    var channel = ChannelRecord(
                        channelID: channelID, apnsChannelID: channelID + "==", environment: .sandbox, storesMostRecent: false,
                        activityID: activityID, createdAt: Fixture.at(1))
                    channel.managed = managed
                    try session.insertChannel(appID: "app_1", channel)
                }
            }
            try Self.send(store, at: 40)
            try store.writeNow { session in
                for (deviceID, second) in [("d1", 50.0), ("d2", 51.0)] {
                    #expect(try session.recordTap(
                        appID: "app_1", activityID: "a1", deviceID: deviceID, apnsID: nil, at: Fixture.at(second),
                        sentBy: Fixture.at(second))?.counted == true)
                }
                for id in ["a1", "a4", "a5", "a6"] {
                    try session.endActivity(appID: "app_1", activityID: id, cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(100))
                }
                try session.endActivity(appID: "app_1", activityID: "a3", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(5_000))
            }
            let before = try store.readNow { try $0.historySummary(appID: "app_1") }
            #expect(before == HistorySummary(activities: 6, sends: 2, pushes: 3, oldestAt: Fixture.at(0)))

            let (purged, runs) = try Self.purgeAll(store, limit: 3, Self.purgeHistory)
            var expected = PurgedHistory()
            expected.activities = 2  // a1, a5
            expected.copies = 2
            expected.audience = 2
            expected.taps = 2
            expected.schedules = 2  // a1's cancelled item and its timeline
            expected.sends = 2
            expected.pushes = 3
            #expect(purged == expected)
            #expect(runs >= 6)

            try store.readNow { session in
                #expect(try session.activity(appID: "app_1", activityID: "a1") == nil)
                #expect(try session.copies(appID: "app_1", activityID: "a1").isEmpty)
                #expect(try session.joinAudience(appID: "app_1", activityID: "a1").isEmpty)
                #expect(try session.timeline(appID: "app_1", activityID: "a1") == nil)
                #expect(try session.schedule(appID: "app_1", scheduleID: "sch_1") == nil)
                #expect(try session.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0).isEmpty)
                // A running activity keeps its copies, whatever its age.
                #expect(try session.copies(appID: "app_1", activityID: "a2").map(\.deviceID) == ["d1"])
                for id in ["a2", "a3", "a4", "a6"] {
                    #expect(try session.activity(appID: "app_1", activityID: id) != nil, "\(id) was deleted")
                }
                #expect(try session.schedule(appID: "app_1", scheduleID: "sch_4")?.status == .scheduled)
                // The app's own channel no longer names the activity that went;
                // Islet's is still to be retired, and still names its activity.
                #expect(try session.channel(appID: "app_1", channelID: "Y2gx")?.activityID == nil)
                #expect(try session.channel(appID: "app_1", channelID: "Y2gy")?.activityID == "a6")
                // The oldest record is now a2's start.
                let after = try session.historySummary(appID: "app_1")
                #expect(after == HistorySummary(activities: 4, sends: 0, pushes: 0, oldestAt: Fixture.at(20)))
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aSummaryCountsOneAppsHistory(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                #expect(try session.historySummary(appID: "app_1") == HistorySummary(activities: 0, sends: 0, pushes: 0, oldestAt: nil))
                // An alert send is older than any activity: the oldest record.
                try session.queue(.alert, activityID: nil, targets: [Fixture.target("d1", "t1")], kind: .device, minter: minter, at: Fixture.at(3))
                try session.startActivity("a1", at: Fixture.at(7))
                try session.queue(
                    .update, activityID: "a1", targets: [Fixture.target("d1", "u1"), Fixture.target("d2", "u2")], minter: minter,
                    at: Fixture.at(8))
                try session.startActivity("b1", appID: "app_2", at: Fixture.at(1))
            }
            #expect(try store.readNow { try $0.historySummary(appID: "app_1") }
                == HistorySummary(activities: 1, sends: 2, pushes: 3, oldestAt: Fixture.at(3)))
            #expect(try store.readNow { try $0.historySummary(appID: "app_2") }
                == HistorySummary(activities: 1, sends: 0, pushes: 0, oldestAt: Fixture.at(1)))
        }
    }

    @Test(arguments: StoreBackend.all)
    func anAppsOwnRetentionIsStored(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var app = Fixture.app()
            app.historyRetentionDays = 0.5
            try store.writeNow { try $0.insertApp(app) }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.historyRetentionDays == 0.5)
            app.historyRetentionDays = 1.0 / 24
            try store.writeNow { try $0.updateAppSettings(app) }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.historyRetentionDays == 1.0 / 24)
            app.historyRetentionDays = nil
            try store.writeNow { try $0.updateApp(app) }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.historyRetentionDays == nil)
        }
    }
}
