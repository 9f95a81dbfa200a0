import Foundation
import IsletCore
import IsletLog
import IsletService
import IsletTesting
import Storage
import Testing

/// The history's purge loop on a manual clock: what is older than each app's
/// retention goes, a small batch per transaction, and what is newer stays until
/// the clock moves past it. Never a wait for real time but for the loop's own turn.
@Suite("History retention", .timeLimit(.minutes(1)))
struct HistoryServiceTests {
    static let day: TimeInterval = 86_400

    struct Rig {
        let services: Services
        let clock: ManualWallClock
        let store: any Store

        /// `seconds` before the clock's start.
        func ago(_ seconds: TimeInterval, from start: Date) -> Date { start.addingTimeInterval(-seconds) }

        /// An activity of `appID` started at `startedAt`, with a copy on `d1` and one
        /// update to it sent at once, ended at `endedAt` unless that is nil.
        func activity(_ activityID: String, appID: String, startedAt: Date, endedAt: Date?) throws {
            try store.writeNow { session in
                try session.insertActivity(
                    appID: appID, activityID: activityID, activityType: "Match", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: startedAt)
                try session.insertPendingCopies(
                    appID: appID, activityID: activityID,
                    targets: [PushTarget(deviceID: "d1", token: "s1", environment: .sandbox)], now: startedAt)
                let content = SendContent(
                    event: .update, topic: "com.example.shop.push-type.liveactivity", pushType: .liveactivity,
                    priority: .immediate, expiration: nil, collapseID: nil, payload: Data(#"{"aps":{}}"#.utf8))
                let send = try session.insertSend(appID: appID, activityID: activityID, content: content, now: startedAt)
                try session.enqueuePushes(
                    sendID: send, appID: appID, activityID: activityID, activityType: "Match", event: .update,
                    tokenKind: .liveActivityUpdate, targets: [PushTarget(deviceID: "d1", token: "u1", environment: .sandbox)],
                    now: startedAt, mintID: { UUID().uuidString })
                var sends: [Int64: SendContent] = [:]
                let claimed = try session.claimDuePushes(
                    now: startedAt, limit: 10, lease: PushLease(nodeID: "n1", until: startedAt.addingTimeInterval(60)),
                    sends: &sends)
                try session.recordSent(
                    claimed.map { SentPush(pushID: $0.id, attempts: 1, apnsStatus: 200, serviceMessageID: nil) }, by: "n1",
                    now: startedAt)
                if let endedAt {
                    try session.endActivity(
                        appID: appID, activityID: activityID, cause: .server, contentState: nil, timestamp: nil, at: endedAt)
                }
            }
        }

        /// The activities of `appID` still stored, by id.
        func activities(of appID: String) throws -> [String] {
            try store.readNow { try $0.activities(appID: appID, filter: ActivityFilter(limit: 100)) }.map(\.activityID).sorted()
        }

        func summary(of appID: String) throws -> HistorySummary {
            try store.readNow { try $0.historySummary(appID: appID) }
        }
    }

    func withRig(_ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600,
                historyRetentionDays: 1)
            var settings = HistorySettings()
            settings.batchSize = 2
            // No pause between batches: the clock moves only when the test moves it.
            settings.pause = 0
            let services = Services(environment: environment, adminToken: ServiceTests.adminToken, history: settings)
            try await body(Rig(services: services, clock: clock, store: store))
        }
    }

    @Test func theLoopDeletesWhatIsOlderThanEachAppsRetentionAndKeepsTheRest() async throws {
        try await withRig { rig in
            let start = rig.clock.now()
            let kept = try await rig.services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false)).app
            var shorter = CreateApp(name: "Quick", bundleID: "com.example.quick", credentials: nil, strictActivityTypes: false)
            shorter.historyRetentionDays = 0.5
            let quick = try await rig.services.apps.create(shorter).app
            // The server keeps a day; the second app half of one.
            #expect(rig.services.history.retentionDays(of: kept) == 1)
            #expect(rig.services.history.retentionDays(of: quick) == 0.5)
            try rig.activity("old", appID: kept.id, startedAt: rig.ago(3 * Self.day, from: start), endedAt: rig.ago(2 * Self.day, from: start))
            try rig.activity("older", appID: kept.id, startedAt: rig.ago(4 * Self.day, from: start), endedAt: rig.ago(2 * Self.day, from: start))
            try rig.activity("recent", appID: kept.id, startedAt: rig.ago(20 * 3600, from: start), endedAt: rig.ago(13 * 3600, from: start))
            try rig.activity("running", appID: kept.id, startedAt: rig.ago(3 * Self.day, from: start), endedAt: nil)
            try rig.activity("recent", appID: quick.id, startedAt: rig.ago(20 * 3600, from: start), endedAt: rig.ago(13 * 3600, from: start))
            try rig.activity("new", appID: quick.id, startedAt: rig.ago(3600, from: start), endedAt: rig.ago(1800, from: start))
            #expect(try rig.summary(of: kept.id).sends == 4)

            let keeper = HistoryKeeper(history: rig.services.history, sleeper: rig.clock)
            let mark = rig.clock.lastWatch
            let running = Task { await keeper.run() }
            // The first purge runs at once and ends in the loop's sleep.
            #expect(await rig.clock.waitForSleepers(after: mark))
            #expect(try rig.activities(of: kept.id) == ["recent", "running"])
            #expect(try rig.activities(of: quick.id) == ["new"])
            // A running activity keeps its copy; its update, older than a day, went.
            let runningCopies = try rig.store.readNow { try $0.copies(appID: kept.id, activityID: "running") }
            #expect(runningCopies.count == 1)
            #expect(try rig.summary(of: kept.id) == HistorySummary(
                activities: 2, sends: 1, pushes: 1, oldestAt: rig.ago(3 * Self.day, from: start)))

            // A day later, the next purge takes what has aged past the retention.
            let next = rig.clock.lastWatch
            rig.clock.advance(by: Self.day)
            #expect(await rig.clock.waitForSleepers(after: next))
            #expect(try rig.activities(of: kept.id) == ["running"])
            #expect(try rig.activities(of: quick.id) == [])
            #expect(try rig.summary(of: quick.id) == HistorySummary(activities: 0, sends: 0, pushes: 0, oldestAt: nil))
            running.cancel()
            await running.value
        }
    }

    @Test func anAppsRetentionIsCheckedAgainstItsBoundsAndTheServers() async throws {
        try await withRig { rig in
            func refusal(_ days: Double) async -> ServiceError? {
                var command = CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false)
                command.historyRetentionDays = days
                do {
                    _ = try await rig.services.apps.create(command)
                    return nil
                } catch {
                    return error
                }
            }
            // The server keeps a day: a longer retention is refused, not cut short.
            for days in [0, -0.0, 1.0 / 48, .leastNonzeroMagnitude, -1, .nan, .infinity, 1.5, 3_650] {
                let error = await refusal(days)
                #expect(error?.code == .invalid && error?.fields?.map(\.field) == ["history_retention_days"], "\(days)")
            }
            #expect(await refusal(1.5)?.fields?.first?.message == "must be at most the server's retention, 1 day")
            #expect(await refusal(1.0 / 24) == nil)
            #expect(await refusal(1) == nil)
            let app = try await rig.services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false)).app
            var change = UpdateApp(appID: app.id, name: nil, bundleID: nil, credentials: nil, strictActivityTypes: nil)
            change.historyRetentionDays = .some(2)
            await #expect(throws: ServiceError.self) { _ = try await rig.services.apps.update(change) }
            change.historyRetentionDays = .some(0.25)
            #expect(try await rig.services.apps.update(change).historyRetentionDays == 0.25)
            change.historyRetentionDays = .some(nil)
            #expect(try await rig.services.apps.update(change).historyRetentionDays == nil)
        }
    }
}
