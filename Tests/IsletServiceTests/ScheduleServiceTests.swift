import Foundation
import IsletCore
import IsletCrypto
import IsletLog
@testable import IsletService
import IsletSync
import IsletTesting
import PostgreSQLStorage
import Storage
import Testing

/// Schedules and timelines on the services, with no HTTP: the clock moves only when
/// told, and `fireDue` is called by the test, so every window is tested without
/// sleeping.
@Suite("Schedules and timelines")
struct ScheduleServiceTests {
    static let updateToken = String(repeating: "ef", count: 32)
    static let alert = PushAlert(title: .literal("Today"), body: .literal("Your day"), sound: nil)

    struct Rig {
        let services: Services
        let clock: ManualWallClock
        let store: any Store
        let secrets = DeviceSecretBook()

        var schedules: ScheduleService { services.schedules }
        var now: Date { clock.now() }

        /// An app with one device holding a push-to-start token.
        func app() async throws -> AppRecord {
            let key = try P256.SigningKey.generate()
            let created = try await services.apps.create(CreateApp(
                name: "Day", bundleID: "com.example.day",
                credentials: APNsCredentials(teamID: "TEAM000001", keyID: "KEY0000001", privateKeyPEM: key.pemRepresentation),
                strictActivityTypes: false))
            try await device(created.app, "phone-1", tags: ["all"])
            return created.app
        }

        func device(_ app: AppRecord, _ id: String, tags: [String]) async throws {
            try await secrets.register(
                services.devices, appID: app.id, deviceID: id,
                DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: .some("user-1"), tags: tags))
            _ = try await services.devices.putStartToken(
                appID: app.id, deviceID: id, secret: secrets[app.id, id], activityType: "DayAttributes",
                token: String(repeating: id == "phone-1" ? "ab" : "ac", count: 32))
        }

        func startCommand(_ app: AppRecord, id: String = "day-1", audience: Audience = .deviceIDs(["phone-1"])) -> StartActivity {
            StartActivity(
                app: app, activityID: id, activityType: "DayAttributes", attributes: ["day": "monday"],
                contentState: ["event": "breakfast"], alert: ScheduleServiceTests.alert, audience: audience, endAt: nil,
                staleDate: nil, relevanceScore: nil, priority: nil, idempotency: nil)
        }

        /// A running activity that phone-1 holds (its update token registered).
        func running(_ app: AppRecord, id: String = "day-1") async throws {
            _ = try await services.activities.start(startCommand(app, id: id))
            try await holds(app, id)
        }

        func holds(_ app: AppRecord, _ id: String, token: String = ScheduleServiceTests.updateToken) async throws {
            _ = try await services.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: secrets[app.id, "phone-1"], activityID: id,
                activityType: "DayAttributes", token: token)
        }

        func update(_ app: AppRecord, id: String = "day-1", eta: Int = 5, at: Date?, key: IdempotencyKey? = nil) async throws
            -> Replayable<Scheduling<ActivitySendResult>>
        {
            try await schedules.update(
                UpdateActivity(
                    app: app, activityID: id, contentState: ["event": .integer(Int64(eta))], alert: nil, endAt: nil,
                    staleDate: nil, relevanceScore: nil, priority: nil, idempotency: key),
                sendAt: at)
        }

        func item(_ app: AppRecord, _ id: String) async throws -> ScheduleRecord {
            try await schedules.show(appID: app.id, scheduleID: id)
        }

        var queued: Int { get throws { try store.readNow { try $0.queueDepth() } } }

        func pushes(_ app: AppRecord, _ activityID: String) async throws -> [PushHistoryItem] {
            try await services.activities.pushes(appID: app.id, activityID: activityID)
        }
    }

    func withRig(renewLead: TimeInterval = 15 * 60, _ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600,
                renewLead: renewLead)
            try await body(Rig(services: Services(environment: environment, adminToken: "islet_admin_schedule_tests_0123456789"), clock: clock, store: store))
        }
    }

    func refusal(_ body: () async throws -> Void) async -> ServiceError? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError {
            return error
        } catch {
            return nil
        }
    }

    // MARK: - Scheduled sends

    @Test func aScheduledUpdateWaitsForItsTimeAndFiresOnce() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let before = try rig.queued
            let answer = try await rig.update(app, at: rig.now.addingTimeInterval(600))
            let scheduled = try #require(answer.result.scheduled)
            #expect(answer.result.json["status"] == "scheduled")
            #expect(try rig.queued == before)
            #expect(await rig.schedules.fireDue() == 0)
            rig.clock.advance(by: 599)
            #expect(await rig.schedules.fireDue() == 0)
            rig.clock.advance(by: 1)
            #expect(await rig.schedules.fireDue() == 1)
            #expect(try rig.queued == before + 1)
            let item = try await rig.item(app, scheduled.scheduleID)
            #expect(item.status == .sent && item.targets == 1 && item.firedAt == rig.now && item.kind == .update)
            #expect(await rig.schedules.fireDue() == 0)
            #expect(try rig.queued == before + 1)
        }
    }

    @Test func sendAtIsCheckedAgainstTheClockAndTheLifecycle() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            // Just passed: sent at once.
            let recent = try await rig.update(app, at: rig.now.addingTimeInterval(-30))
            #expect(recent.result.immediate?.targets == 1)
            let old = await refusal { _ = try await rig.update(app, at: rig.now.addingTimeInterval(-61)) }
            #expect(old?.code == .invalid && old?.fields?.map(\.field) == ["send_at"])
            let late = await refusal { _ = try await rig.update(app, at: rig.now.addingTimeInterval(8 * 3600 + 1)) }
            #expect(late?.code == .invalid && late?.fields?.map(\.field) == ["send_at"])
            let end = EndActivity(app: app, activityID: "day-1", contentState: nil, dismissalDate: nil, idempotency: nil)
            let lateEnd = await refusal { _ = try await rig.schedules.end(end, sendAt: rig.now.addingTimeInterval(12 * 3600 + 1)) }
            #expect(lateEnd?.fields?.map(\.field) == ["send_at"])
            // An end may come after the update window.
            let inEndWindow = try await rig.schedules.end(end, sendAt: rig.now.addingTimeInterval(9 * 3600))
            #expect(inEndWindow.result.scheduled != nil)
            #expect(await refusal { _ = try await rig.update(app, id: "nothing", at: rig.now.addingTimeInterval(60)) }?.code == .notFound)
            _ = try await rig.services.activities.end(end)
            #expect(await refusal { _ = try await rig.update(app, at: rig.now.addingTimeInterval(60)) }?.code == .conflict)
            // A scheduled end of an ended activity answers as an immediate one.
            let again = try await rig.schedules.end(end, sendAt: rig.now.addingTimeInterval(60))
            #expect(again.result.immediate?.alreadyEnded == true)
        }
    }

    @Test func aScheduledStartReachesTheAudienceAsItIsWhenItFires() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let at = rig.now.addingTimeInterval(3600)
            let vip = try await rig.schedules.start(rig.startCommand(app, id: "vip-1", audience: .tags(["vip"])), sendAt: at)
            let nobody = try await rig.schedules.start(rig.startCommand(app, id: "none-1", audience: .tags(["nobody"])), sendAt: at)
            let twice = await refusal { _ = try await rig.schedules.start(rig.startCommand(app, id: "vip-1"), sendAt: at) }
            #expect(twice?.code == .conflict)
            try await rig.device(app, "phone-2", tags: ["vip"])
            rig.clock.advance(by: 3600)
            #expect(await rig.schedules.fireDue() == 2)
            let sent = try await rig.item(app, try #require(vip.result.scheduled).scheduleID)
            #expect(sent.status == .sent && sent.targets == 1)
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "vip-1")
            #expect(detail.devices.map(\.deviceID) == ["phone-2"])
            let dropped = try await rig.item(app, try #require(nobody.result.scheduled).scheduleID)
            #expect(dropped.status == .dropped && dropped.reason == ScheduleReason.noTargets)
        }
    }

    @Test func anUpdateOfAnActivityThatEndedMeanwhileIsDropped() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let answer = try await rig.update(app, at: rig.now.addingTimeInterval(60))
            _ = try await rig.services.activities.end(
                EndActivity(app: app, activityID: "day-1", contentState: nil, dismissalDate: nil, idempotency: nil))
            let queued = try rig.queued
            rig.clock.advance(by: 60)
            #expect(await rig.schedules.fireDue() == 1)
            let item = try await rig.item(app, try #require(answer.result.scheduled).scheduleID)
            #expect(item.status == .dropped && item.reason == ScheduleReason.activityEnded)
            #expect(try rig.queued == queued)
        }
    }

    @Test func cancellingTwiceChangesNothingAndASentItemCannotBeCancelled() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let first = try #require(try await rig.update(app, at: rig.now.addingTimeInterval(60)).result.scheduled)
            let second = try #require(try await rig.update(app, eta: 6, at: rig.now.addingTimeInterval(120)).result.scheduled)
            let cancelled = try await rig.schedules.cancel(appID: app.id, scheduleID: first.scheduleID)
            #expect(cancelled.changed && cancelled.schedule.status == .cancelled)
            let again = try await rig.schedules.cancel(appID: app.id, scheduleID: first.scheduleID)
            #expect(!again.changed && again.schedule.status == .cancelled)
            rig.clock.advance(by: 120)
            #expect(await rig.schedules.fireDue() == 1)
            let late = await refusal { _ = try await rig.schedules.cancel(appID: app.id, scheduleID: second.scheduleID) }
            #expect(late?.code == .conflict)
            #expect(await refusal { _ = try await rig.schedules.cancel(appID: app.id, scheduleID: "sch_nothing") }?.code == .notFound)
            #expect(try await rig.item(app, first.scheduleID).status == .cancelled)
        }
    }

    @Test func aReplayedKeyAnswersTheSameScheduleAndSchedulesNothingTwice() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let key = IdempotencyKey(key: "sched-1", fingerprint: Data("body".utf8))
            let at = rig.now.addingTimeInterval(300)
            let first = try await rig.update(app, at: at, key: key)
            let again = try await rig.update(app, at: at, key: key)
            #expect(again.replayed && again.result.scheduled?.scheduleID == first.result.scheduled?.scheduleID)
            // Even once its time came: the first answer is replayed.
            rig.clock.advance(by: 290)
            let late = try await rig.update(app, at: at, key: key)
            #expect(late.replayed && late.result.scheduled?.scheduleID == first.result.scheduled?.scheduleID)
            let page = try await rig.schedules.list(appID: app.id, ScheduleQuery())
            #expect(page.items.count == 1)
        }
    }

    @Test func listingIsSoonestFirstAndPages() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            for minutes in [30, 10, 20] {
                _ = try await rig.update(app, eta: minutes, at: rig.now.addingTimeInterval(Double(minutes) * 60))
            }
            let alert = SendNotification(app: app, audience: .tags(["all"]), alert: Self.alert, idempotency: nil)
            _ = try await rig.schedules.notify(alert, sendAt: rig.now.addingTimeInterval(15 * 60))
            var query = ScheduleQuery()
            query.limit = 3
            let first = try await rig.schedules.list(appID: app.id, query)
            #expect(first.items.map { $0.command["content_state"]?["event"]?.int64Value } == [10, nil, 20])
            #expect(first.items.map(\.kind) == [.update, .notification, .update])
            let cursor: ScheduleCursor = try #require(first.nextCursor)
            query.cursor = cursor
            let second = try await rig.schedules.list(appID: app.id, query)
            #expect(second.items.map { $0.command["content_state"]?["event"]?.int64Value } == [30] && second.nextCursor == nil)
            var onlyAlerts = ScheduleQuery()
            onlyAlerts.kind = .notification
            #expect(try await rig.schedules.list(appID: app.id, onlyAlerts).items.count == 1)
            var elsewhere = ScheduleQuery()
            elsewhere.activityID = "day-2"
            #expect(try await rig.schedules.list(appID: app.id, elsewhere).items.isEmpty)
        }
    }

    /// Cancel while firing: each item ends either cancelled or sent, never both, and
    /// the cancellation's answer says which.
    @Test func cancellingWhileFiringLetsExactlyOneWin() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            var ids: [String] = []
            for index in 0..<40 {
                let answer = try await rig.update(app, eta: index, at: rig.now.addingTimeInterval(60 + Double(index) * 0.001))
                ids.append(try #require(answer.result.scheduled).scheduleID)
            }
            rig.clock.advance(by: 61)
            let answers = Lock<[String: Bool]>([:])
            await withTaskGroup(of: Void.self) { group in
                group.addTask { await rig.schedules.fireDue() }
                for id in ids {
                    group.addTask {
                        do {
                            let outcome = try await rig.schedules.cancel(appID: app.id, scheduleID: id)
                            answers.withLock { $0[id] = outcome.schedule.status == .cancelled }
                        } catch {
                            answers.withLock { $0[id] = false }
                        }
                    }
                }
            }
            await rig.schedules.fireDue()
            var sent = 0
            for id in ids {
                let item = try await rig.item(app, id)
                let answer: Bool? = answers.withLock { $0[id] }
                guard let cancelled = answer else {
                    Issue.record("no answer for \(id)")
                    continue
                }
                #expect(item.status == (cancelled ? .cancelled : .sent))
                if item.status == .sent { sent += 1 }
            }
            let updates = try await rig.pushes(app, "day-1").filter { $0.event == .update }
            #expect(updates.count == sent)
        }
    }

    // MARK: - Timelines

    func entries(_ offsets: [TimeInterval], from start: Date) -> [TimelineEntry] {
        offsets.enumerated().map { index, offset in
            TimelineEntry(at: start.addingTimeInterval(offset), contentState: ["event": .integer(Int64(index))])
        }
    }

    @Test func overdueEntriesAreSkippedAndOnlyTheNewestIsSent() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let start = rig.now
            let view = try await rig.services.timelines.put(PutTimeline(
                app: app, activityID: "day-1", plan: TimelinePlan(entries: entries([60, 120, 180, 600], from: start))))
            #expect(view.entries.map(\.status) == ["pending", "pending", "pending", "pending"])
            rig.clock.advance(by: 60)
            #expect(await rig.schedules.fireDue() == 1)
            rig.clock.advance(by: 140)  // Islet was away: entries 1 and 2 are both overdue.
            await rig.schedules.fireDue()
            let shown = try await rig.services.timelines.show(appID: app.id, activityID: "day-1")
            #expect(shown.entries.map(\.status) == ["sent", "skipped", "sent", "pending"])
            #expect(shown.entries[1].schedule.reason == ScheduleReason.superseded)
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(detail.activity.record.contentState == ["event": 2])
        }
    }

    @Test func aTimelineIsCheckedEntryByEntry() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let now = rig.now
            func put(_ plan: TimelinePlan) async -> ServiceError? {
                await refusal { _ = try await rig.services.timelines.put(PutTimeline(app: app, activityID: "day-1", plan: plan)) }
            }
            let unordered = await put(TimelinePlan(entries: entries([60, 60], from: now)))
            #expect(unordered?.fields?.map(\.field) == ["entries[1].at"])
            let pastWindow = await put(TimelinePlan(entries: entries([60, 9 * 3600], from: now)))
            #expect(pastWindow?.fields?.map(\.field) == ["entries[1].at"])
            let endFirst = await put(TimelinePlan(entries: entries([60, 120], from: now), endAt: now.addingTimeInterval(90)))
            #expect(endFirst?.fields?.map(\.field) == ["end_at"])
            let tooMany = await put(TimelinePlan(entries: entries((0...1440).map { Double($0) * 10 + 10 }, from: now)))
            #expect(tooMany?.fields?.map(\.field) == ["entries"])
            var big = entries([60], from: now)
            big[0].contentState = ["event": .string(String(repeating: "x", count: 5000))]
            let oversized = await put(TimelinePlan(entries: big))
            #expect(oversized?.fields?.first?.field.hasPrefix("entries[0].") == true)
            #expect(await refusal {
                _ = try await rig.services.timelines.put(PutTimeline(app: app, activityID: "nothing", plan: TimelinePlan(entries: [])))
            }?.code == .notFound)
        }
    }

    @Test func aTimelineReplacesOnlyWhatWasNotSentAndCanBeCleared() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.running(app)
            let now = rig.now
            _ = try await rig.services.timelines.put(PutTimeline(
                app: app, activityID: "day-1", plan: TimelinePlan(entries: entries([60, 120], from: now))))
            rig.clock.advance(by: 60)
            await rig.schedules.fireDue()
            let replaced = try await rig.services.timelines.put(PutTimeline(
                app: app, activityID: "day-1",
                plan: TimelinePlan(entries: entries([300, 400], from: now), endAt: now.addingTimeInterval(500))))
            #expect(replaced.entries.map(\.status) == ["pending", "pending"] && replaced.endAt != nil)
            var query = ScheduleQuery()
            query.kind = .timelineEntry
            let all = try await rig.schedules.list(appID: app.id, query).items
            #expect(all.map(\.status) == [.sent, .cancelled, .scheduled, .scheduled])
            try await rig.services.timelines.clear(appID: app.id, activityID: "day-1")
            let cleared = try await rig.services.timelines.show(appID: app.id, activityID: "day-1")
            #expect(cleared.entries.map(\.status) == ["cancelled", "cancelled"])
            rig.clock.advance(by: 1000)
            #expect(await rig.schedules.fireDue() == 0)
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(detail.activity.status != .ended)
        }
    }

    @Test func aStartWithATimelineRunsTheDayThenEnds() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let at = rig.now.addingTimeInterval(600)
            let plan = TimelinePlan(entries: entries([0, 60, 120], from: at), endAt: at.addingTimeInterval(180))
            let answer = try await rig.schedules.start(rig.startCommand(app), sendAt: at, timeline: plan)
            #expect(answer.result.scheduled != nil)
            var query = ScheduleQuery()
            query.activityID = "day-1"
            #expect(try await rig.schedules.list(appID: app.id, query).items.map(\.kind) == [.start, .timelineEntry, .timelineEntry, .timelineEntry, .end])
            rig.clock.set(at)
            await rig.schedules.fireDue()  // The start, and entry 0 (no holder yet).
            try await rig.holds(app, "day-1")
            rig.clock.advance(by: 60)
            await rig.schedules.fireDue()
            rig.clock.advance(by: 60)
            await rig.schedules.fireDue()
            rig.clock.advance(by: 60)
            await rig.schedules.fireDue()
            let items = try await rig.schedules.list(appID: app.id, query).items
            #expect(items.map(\.status) == [.sent, .sent, .sent, .sent, .sent])
            #expect(items.map(\.targets) == [1, 0, 1, 1, 1])
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(detail.activity.status == .ended && detail.activity.record.contentState == ["event": 2])
            // A start whose audience is empty takes its timeline with it.
            let lonely = try await rig.schedules.start(
                rig.startCommand(app, id: "day-2", audience: .tags(["nobody"])), sendAt: rig.now.addingTimeInterval(60),
                timeline: TimelinePlan(entries: entries([120], from: rig.now)))
            rig.clock.advance(by: 200)
            await rig.schedules.fireDue()
            #expect(try await rig.item(app, try #require(lonely.result.scheduled).scheduleID).reason == ScheduleReason.noTargets)
            let orphan = try await rig.services.timelines.show(appID: app.id, activityID: "day-2")
            #expect(orphan.entries.map(\.status) == ["skipped"] && orphan.entries[0].schedule.reason == ScheduleReason.startDropped)
        }
    }

    @Test func aTimelineRunsPastTheUpdateWindowByRenewal() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.device(app, "phone-2", tags: [])
            let started = rig.now
            _ = try await rig.services.activities.start(rig.startCommand(app, audience: .deviceIDs(["phone-1", "phone-2"])))
            try await rig.holds(app, "day-1")
            _ = try await rig.services.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-2", secret: rig.secrets[app.id, "phone-2"], activityID: "day-1",
                activityType: "DayAttributes",
                token: String(repeating: "fa", count: 32))
            // phone-2 loses its push-to-start token: it cannot be renewed.
            _ = try await rig.services.devices.deleteStartToken(
                appID: app.id, deviceID: "phone-2", secret: rig.secrets[app.id, "phone-2"], activityType: "DayAttributes")
            let plan = TimelinePlan(entries: entries([3600, 9 * 3600], from: started), endAt: started.addingTimeInterval(10 * 3600), renew: true)
            _ = try await rig.services.timelines.put(PutTimeline(app: app, activityID: "day-1", plan: plan))
            rig.clock.set(started.addingTimeInterval(3600))
            await rig.schedules.fireDue()
            rig.clock.set(started.addingTimeInterval(8 * 3600 - 15 * 60 - 1))
            await rig.schedules.fireDue()
            #expect(try await rig.services.activities.show(appID: app.id, activityID: "day-1").activity.status != .ended)
            rig.clock.advance(by: 1)
            await rig.schedules.fireDue()
            let original = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(original.activity.status == .ended && original.activity.endCause == .renewed)
            #expect(original.activity.record.renewal.renewedTo == "day-1~2")
            #expect(original.activity.record.renewal.notRenewed == ["phone-2"])
            let successor = try await rig.services.activities.show(appID: app.id, activityID: "day-1~2")
            #expect(successor.activity.record.renewal.renewedFrom == "day-1")
            #expect(successor.devices.map(\.deviceID) == ["phone-1"])
            #expect(successor.activity.record.contentState == ["event": 0])
            #expect(successor.activity.record.attributes?["islet_activity_id"] == "day-1~2")
            let starts = try await rig.pushes(app, "day-1~2").filter { $0.event == .start }
            #expect(starts.count == 1)
            var query = ScheduleQuery()
            query.activityID = "day-1~2"
            #expect(try await rig.schedules.list(appID: app.id, query).items.map(\.kind) == [.timelineEntry, .end])
            try await rig.holds(app, "day-1~2", token: String(repeating: "0f", count: 32))
            rig.clock.set(started.addingTimeInterval(9 * 3600))
            await rig.schedules.fireDue()
            rig.clock.set(started.addingTimeInterval(10 * 3600))
            await rig.schedules.fireDue()
            let items = try await rig.schedules.list(appID: app.id, query).items
            #expect(items.map(\.status) == [.sent, .sent] && items.map(\.targets) == [1, 1])
            #expect(try await rig.services.activities.show(appID: app.id, activityID: "day-1~2").activity.status == .ended)
            let timeline = try await rig.services.timelines.show(appID: app.id, activityID: "day-1~2")
            #expect(timeline.entries.map(\.index) == [1] && timeline.renew)
        }
    }

    /// The renewal comes the configured lead before the update window closes, and
    /// an end past the activity's last window is reason enough to renew.
    @Test func aTimelineWhoseEndOutlivesTheActivityIsRenewedAtTheChosenLead() async throws {
        try await withRig(renewLead: 30 * 60) { rig in
            let app = try await rig.app()
            let started = rig.now
            try await rig.running(app)
            // No entry past the update window, but an end after the 12-hour window.
            let plan = TimelinePlan(entries: entries([3600], from: started), endAt: started.addingTimeInterval(13 * 3600), renew: true)
            _ = try await rig.services.timelines.put(PutTimeline(app: app, activityID: "day-1", plan: plan))
            rig.clock.set(started.addingTimeInterval(8 * 3600 - 30 * 60 - 1))
            await rig.schedules.fireDue()
            #expect(try await rig.services.activities.show(appID: app.id, activityID: "day-1").activity.record.renewal.renewedTo == nil)
            rig.clock.advance(by: 1)
            await rig.schedules.fireDue()
            let original = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(original.activity.endCause == .renewed && original.activity.record.renewal.renewedTo == "day-1~2")
            var query = ScheduleQuery()
            query.activityID = "day-1~2"
            #expect(try await rig.schedules.list(appID: app.id, query).items.map(\.kind) == [.end])
            try await rig.holds(app, "day-1~2", token: String(repeating: "0f", count: 32))
            rig.clock.set(started.addingTimeInterval(13 * 3600))
            await rig.schedules.fireDue()
            let end = try await rig.schedules.list(appID: app.id, query).items
            #expect(end.map(\.status) == [.sent] && end.map(\.targets) == [1])
        }
    }

    /// Without a device to renew on, an end past the activity's last window is
    /// dropped at the renewal, not left to fire at an activity long gone.
    @Test func anEndThatCannotBeRenewedIsDroppedAtTheRenewal() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let started = rig.now
            try await rig.running(app)
            _ = try await rig.services.devices.deleteStartToken(
                appID: app.id, deviceID: "phone-1", secret: rig.secrets[app.id, "phone-1"], activityType: "DayAttributes")
            let plan = TimelinePlan(entries: entries([3600], from: started), endAt: started.addingTimeInterval(13 * 3600), renew: true)
            _ = try await rig.services.timelines.put(PutTimeline(app: app, activityID: "day-1", plan: plan))
            rig.clock.set(started.addingTimeInterval(8 * 3600 - 15 * 60))
            await rig.schedules.fireDue()
            let original = try await rig.services.activities.show(appID: app.id, activityID: "day-1")
            #expect(original.activity.record.renewal.renewedTo == nil && original.activity.record.renewal.notRenewed == ["phone-1"])
            var query = ScheduleQuery()
            query.activityID = "day-1"
            query.kind = .end
            let end = try await rig.schedules.list(appID: app.id, query).items
            #expect(end.map(\.status) == [.dropped] && end.map(\.reason) == [ScheduleReason.notRenewed])
        }
    }

    @Test func successorIDsCountOn() {
        #expect(Firing.successorID(of: "day-1") == "day-1~2")
        #expect(Firing.successorID(of: "day-1~2") == "day-1~3")
        #expect(Firing.successorID(of: "a~b") == "a~b~2")
        #expect(Firing.successorID(of: "x~1") == "x~1~2")
    }
}

/// With two nodes on one PostgreSQL database firing at once, each due item fires
/// once: one node fires per turn, and the transaction that queues an item's pushes
/// marks it sent.
@Suite("Schedules across two nodes")
struct ScheduleTwoNodeTests {
    @Test func twoNodesFiringAtOnceFireEachItemOnce() async throws {
        guard TestPostgres.suitesUsePostgreSQL else { return }
        let (url, drop) = try TestPostgres.makeSchema()
        defer { drop() }
        let clock = ManualWallClock()
        func services(_ node: String) throws -> (Services, any Store) {
            let store = try PostgreSQLStore(url: url, poolSize: 2, applicationName: "islet-schedule-\(node)")
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600, nodeID: node)
            return (Services(environment: environment, adminToken: "islet_admin_schedule_tests_0123456789"), store)
        }
        let (first, firstStore) = try services("node-a")
        let (second, secondStore) = try services("node-b")
        defer {
            firstStore.close()
            secondStore.close()
        }
        let rig = ScheduleServiceTests.Rig(services: first, clock: clock, store: firstStore)
        let app = try await rig.app()
        try await rig.running(app)
        for index in 0..<60 {
            _ = try await rig.update(app, eta: index, at: clock.now().addingTimeInterval(60 + Double(index) * 0.001))
        }
        clock.advance(by: 61)
        var pending = 60
        let deadline = Date().addingTimeInterval(60)
        while pending > 0 && Date() < deadline {
            async let a = first.schedules.fireDue()
            async let b = second.schedules.fireDue()
            _ = await (a, b)
            pending = try await firstStore.read { try $0.pendingScheduleCount() }
        }
        #expect(pending == 0)
        var query = ScheduleQuery()
        query.limit = 200
        let items = try await first.schedules.list(appID: app.id, query).items
        #expect(items.count == 60 && items.allSatisfy { $0.status == .sent })
        let updates = try await rig.pushes(app, "day-1").filter { $0.event == .update }
        #expect(updates.count == 60)
    }
}
