import Foundation
import IsletBackground
import IsletCore
import IsletCrypto
import IsletLog
import IsletService
import IsletSync
import IsletTesting
import Storage
import Testing

/// The outbox through the services: each change writes its event in its own
/// transaction (and a refused change none), pages read back by pattern, push-to-
/// starts never confirmed are reported once, and old events are purged.
@Suite("Events from the services")
struct EventServiceTests {
    static let adminToken = "islet_admin_event_tests_0123456789ab"

    struct Rig {
        let services: Services
        let clock: ManualWallClock
        let store: any Store
        let secrets = DeviceSecretBook()

        func app() async throws -> AppRecord {
            let key = try P256.SigningKey.generate()
            let created = try await services.apps.create(CreateApp(
                name: "Shop", bundleID: "com.example.shop",
                credentials: APNsCredentials(teamID: "TEAM000001", keyID: "KEY0000001", privateKeyPEM: key.pemRepresentation),
                strictActivityTypes: false))
            for device in ["phone-1", "phone-2"] {
                try await secrets.register(
                    services.devices, appID: created.app.id, deviceID: device,
                    DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: .some("user-1"), tags: nil))
                _ = try await services.devices.putStartToken(
                    appID: created.app.id, deviceID: device, secret: secrets[created.app.id, device], activityType: "DeliveryAttributes",
                    token: String(repeating: device == "phone-1" ? "a1" : "b2", count: 32))
            }
            return created.app
        }

        func start(_ app: AppRecord, id: String = "order-1") async throws {
            _ = try await services.activities.start(StartActivity(
                app: app, activityID: id, activityType: "DeliveryAttributes", attributes: ["order": "42"],
                contentState: ["eta": 10], alert: PushAlert(title: .literal("Order"), body: .literal("Started"), sound: nil),
                audience: .userIDs(["user-1"]), endAt: nil, staleDate: nil, relevanceScore: nil, priority: nil,
                idempotency: nil))
        }

        func update(_ app: AppRecord, id: String = "order-1", eta: Int64) async throws {
            _ = try await services.activities.update(UpdateActivity(
                app: app, activityID: id, contentState: ["eta": .integer(eta)], alert: nil, endAt: nil, staleDate: nil,
                relevanceScore: nil, priority: nil, idempotency: nil))
        }

        func events(_ app: AppRecord, _ types: [String] = []) async throws -> [EventRecord] {
            let patterns = try EventService.patterns(types, field: "types")
            return try await services.events.page(appID: app.id, after: nil, patterns: patterns, limit: 1_000).items
        }

        /// Claims every queued push and records APNs's 200 for it, as a delivery
        /// worker would; answers how many.
        @discardableResult
        func acceptQueued() throws -> Int {
            let now = clock.now()
            return try store.writeNow(durable: true) { session -> Int in
                var sends: [Int64: SendContent] = [:]
                let claimed = try session.claimDuePushes(
                    now: now, limit: 100, lease: PushLease(nodeID: "local", until: now.addingTimeInterval(30)), sends: &sends)
                // A push with a row of its own is recorded sent; a window's, counted
                // when the window settles.
                try session.recordSent(
                    claimed.filter { $0.window == nil }.map {
                        SentPush(pushID: $0.id, attempts: 1, apnsStatus: 200, serviceMessageID: nil)
                    }, by: "local", now: now)
                let windows = Dictionary(grouping: claimed.compactMap(\.window), by: { $0 })
                for (window, pushes) in windows {
                    var tally = WindowTally(size: pushes.count)
                    tally.answered = pushes.count
                    tally.sent = pushes.count
                    try session.settleWindow(window, tally, by: "local", now: now)
                }
                return claimed.count
            }
        }
    }

    func withRig(settings: EventSettings = EventSettings(), _ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600)
            try await body(Rig(
                services: Services(environment: environment, adminToken: Self.adminToken, events: settings), clock: clock,
                store: store))
        }
    }

    @Test func eachChangeWritesItsEventsInOrder() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.start(app)
            try rig.acceptQueued()
            for (device, token) in [("phone-1", "c1"), ("phone-2", "c2")] {
                _ = try await rig.services.devices.putUpdateToken(
                    appID: app.id, deviceID: device, secret: rig.secrets[app.id, device], activityID: "order-1",
                    activityType: "DeliveryAttributes",
                    token: String(repeating: token, count: 32))
            }
            rig.clock.advance(by: 1)
            try await rig.update(app, eta: 9)
            // A second update replaces the first while it is still queued.
            rig.clock.advance(by: 1)
            try await rig.update(app, eta: 8)
            rig.clock.advance(by: 1)
            _ = try await rig.services.activities.end(EndActivity(
                app: app, activityID: "order-1", contentState: nil, dismissalDate: nil, cause: .server, idempotency: nil))

            let events = try await rig.events(app)
            // (APNs's answers are the delivery worker's events: see the delivery tests.)
            // The start's send, once its window was answered, and a send the next one
            // supersedes before it went out, each end with its counts: no event per
            // push sent or dropped.
            #expect(events.map(\.type) == [
                "activity.started", "send.completed", "activity.token_registered", "activity.token_registered",
                "activity.updated", "send.completed", "activity.updated", "send.completed", "activity.ended",
            ])
            #expect(events.map(\.sequence) == events.map(\.sequence).sorted())
            #expect(Set(events.map(\.sequence)).count == events.count)
            let started = try #require(events.first)
            #expect(started.id.hasPrefix("evt_") && started.appID == app.id && started.activityID == "order-1")
            #expect(started.data["targets"] == .integer(2) && started.data["origin"] == "remote")
            let registered = events.filter { $0.type == "activity.token_registered" }
            #expect(registered.allSatisfy { $0.data["answered_start"] == .bool(true) })
            // Ids and reasons, never a token.
            for event in events {
                #expect(!event.data.jsonText.contains(String(repeating: "a1", count: 32)))
                #expect(!event.data.jsonText.contains(String(repeating: "c1", count: 32)))
            }
            let completed = events.filter { $0.type == "send.completed" }
            #expect(completed.first?.data["event"] == "start" && completed.first?.data["status"] == "completed")
            #expect(completed.first?.data["token_kind"] == "push_to_start")
            #expect(completed.first?.data["targets"] == 2 && completed.first?.data["sent"] == 2)
            let dropped = completed.dropFirst()
            #expect(dropped.count == 2)
            #expect(dropped.allSatisfy {
                $0.data["reason"] == "Superseded" && $0.data["status"] == "superseded" && $0.data["dropped"] == 2
                    && $0.data["targets"] == 2 && $0.data["sent"] == 0
            })
            #expect(events.last?.data["cause"] == .string(EndCause.server.rawValue))

            // Patterns: a family, an exact type, both.
            #expect(try await rig.events(app, ["activity.*"]).map(\.type).allSatisfy { $0.hasPrefix("activity.") })
            #expect(try await rig.events(app, ["send.completed"]).count == 3)
            #expect(try await rig.events(app, ["send.completed", "activity.ended"]).count == 4)
            // Pages follow each other without a gap or an overlap.
            let first = try await rig.services.events.page(appID: app.id, after: nil, patterns: [], limit: 5)
            let cursor = try #require(first.nextCursor)
            let second = try await rig.services.events.page(
                appID: app.id, after: try EventService.sequence(after: cursor, field: "after"), patterns: [], limit: 100)
            #expect((first.items + second.items).map(\.sequence) == events.map(\.sequence))
            #expect(second.nextCursor == nil)
        }
    }

    @Test func aRefusedChangeWritesNoEvent() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try await rig.start(app)
            let before = try await rig.events(app).count
            // Running already: refused, and its transaction rolled back.
            await #expect(throws: ServiceError.self) { try await rig.start(app) }
            await #expect(throws: ServiceError.self) { try await rig.update(app, id: "nothing", eta: 1) }
            #expect(try await rig.events(app).count == before)
            // Another app sees none of these.
            let other = try await rig.services.apps.create(CreateApp(name: "Other", bundleID: "com.example.other", credentials: nil, strictActivityTypes: false))
            #expect(try await rig.services.events.page(appID: other.app.id, after: nil, patterns: [], limit: 10).items.isEmpty)
        }
    }

    /// A cursor further behind than the feed remembers reads the database, then goes
    /// on from the feed: every event once, in order, and only the app's and types'.
    @Test func aCursorCatchesUpFromTheDatabaseThenFollowsTheFeed() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let other = try await rig.app()
            try await rig.start(app)
            try await rig.start(other, id: "elsewhere")
            try await rig.update(app, eta: 5)
            try await rig.update(app, eta: 4)
            let written = try await rig.events(app)
            try #require(written.count >= 3)
            // The feed remembers only the newest two events of the database.
            let feed = EventFeed(environment: rig.services.environment, capacity: 2)
            await feed.poll()
            var cursor = EventCursor(feed: feed, events: rig.services.events, appID: app.id, after: 0, patterns: [])
            #expect(try await cursor.next().map(\.sequence) == written.map(\.sequence))
            #expect(cursor.position == feed.cursor)
            #expect(try await cursor.next().isEmpty)
            #expect(feed.cursor == cursor.position)

            // New events come through the feed, after the position and nothing else.
            try await rig.update(app, eta: 3)
            try await rig.update(other, id: "elsewhere", eta: 3)
            #expect(feed.cursor == cursor.position)
            await feed.poll()
            #expect(feed.cursor > cursor.position)
            let fresh = try await cursor.next()
            let expected = try await rig.events(app).filter { $0.sequence > written.last!.sequence }
            #expect(!fresh.isEmpty && fresh.map(\.sequence) == expected.map(\.sequence))
            #expect(fresh.allSatisfy { $0.appID == app.id })
            #expect(try await cursor.next().isEmpty)

            // A cursor with patterns sees only those types; one without a start
            // begins at the feed's newest.
            var updates = EventCursor(
                feed: feed, events: rig.services.events, appID: app.id, after: 0,
                patterns: try EventService.patterns(["activity.updated"], field: "types"))
            let onlyUpdates = try await updates.next()
            #expect(onlyUpdates.count == 3 && onlyUpdates.allSatisfy { $0.type == "activity.updated" })
            var now = EventCursor(feed: feed, events: rig.services.events, appID: app.id, after: nil, patterns: [])
            #expect(now.position == feed.cursor)
            #expect(try await now.next().isEmpty)
        }
    }

    /// The feed's memory, indexed by app and family and trimmed as it fills, answers
    /// exactly what the database holds, for every app, pattern and point it still
    /// remembers.
    @Test func theFeedAnswersWhatTheDatabaseHoldsForEveryAppFamilyAndPoint() async throws {
        try await withRig { rig in
            let first = try await rig.app()
            let second = try await rig.app()
            let feed = EventFeed(environment: rig.services.environment, capacity: 4)
            try await rig.start(first)
            try await rig.start(second, id: "elsewhere")
            await feed.poll()
            try rig.acceptQueued()
            try await rig.update(first, eta: 5)
            await feed.poll()
            try await rig.update(second, id: "elsewhere", eta: 4)
            try rig.acceptQueued()
            for eta in Int64(1)...3 {
                try await rig.update(first, eta: eta)
                try rig.acceptQueued()
                await feed.poll()
            }
            let latest = feed.cursor
            try #require(latest > 6)
            var remembered = 0
            var forgotten = 0
            for app in [first, second] {
                for types in [[], ["*"], ["activity.*"], ["activity.updated"], ["push.*", "activity.started"], ["device.*"]] {
                    let patterns = try EventService.patterns(types, field: "types")
                    for after in Int64(0)...latest {
                        guard let answer = feed.events(appID: app.id, after: after, patterns: patterns) else {
                            forgotten += 1
                            continue
                        }
                        remembered += 1
                        let expected = try await rig.services.events.page(appID: app.id, after: after, patterns: patterns, limit: 1_000)
                        #expect(answer.events.map(\.sequence) == expected.items.map(\.sequence), "\(types) after \(after)")
                        #expect(answer.through == latest)
                    }
                }
            }
            #expect(remembered > 0 && forgotten > 0)
        }
    }

    /// A stream sleeps through events it would not send (another app's, another
    /// family's) and wakes for one it would. The feed's loop polls when the test
    /// moves its clock. A wait that no longer ends fails at the time limit.
    @Test(.timeLimit(.minutes(1))) func aWaitingCursorWakesOnlyForEventsItCouldTake() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let other = try await rig.app()
            let feed = EventFeed(environment: rig.services.environment, sleeper: rig.clock)
            try feed.prepare()
            let polled = rig.clock.lastWatch
            let polling = Task { await feed.run() }
            /// Moves the clock past the poll interval; answers once the poll it started is over.
            func poll() async -> Bool {
                let mark = rig.clock.lastWatch
                rig.clock.advance(by: 0.25)
                return await rig.clock.waitForSleepers(after: mark)
            }
            do {
                #expect(await rig.clock.waitForSleepers(after: polled))
                func append(_ appID: String, _ type: EventType) throws {
                    try rig.store.writeNow { session in
                        try session.appendEvents([NewEvent(appID: appID, type: type, activityID: "a1", occurredAt: rig.clock.now(), data: [:])])
                    }
                }
                let cursor = EventCursor(
                    feed: feed, events: rig.services.events, appID: app.id, after: nil,
                    patterns: try EventService.patterns(["activity.*"], field: "types"))
                try append(app.id, .pushSent)
                try append(other.id, .activityUpdated)
                #expect(feed.cursor == cursor.position)
                #expect(await poll())
                #expect(feed.cursor > cursor.position)
                // Only news it would not send: the wait sleeps on the clock until a
                // move passes its time out, then says so.
                let asleep = rig.clock.lastWatch
                let quiet = Task { await cursor.waitForNews(timeout: .seconds(15)) }
                #expect(await rig.clock.waitForSleepers(after: asleep))
                let moved = rig.clock.lastWatch
                rig.clock.advance(by: 14.9)
                // Short of the time out: the feed polled again (and sleeps), the wait sleeps on.
                #expect(await rig.clock.waitForSleepers(after: moved))
                #expect(rig.clock.watches(after: asleep) == 2)
                let passed = rig.clock.lastWatch
                rig.clock.advance(by: 1)
                #expect(await quiet.value == false)
                #expect(await rig.clock.waitForSleepers(after: passed))  // The feed sleeps again.
                let waiting = Task { await cursor.waitForNews(timeout: .seconds(60)) }
                try append(app.id, .activityUpdated)
                #expect(await poll())
                #expect(await waiting.value == true)
            } catch {
                polling.cancel()
                await polling.value
                throw error
            }
            polling.cancel()
            await polling.value
        }
    }

    @Test func badTypesAndCursorsNameTheirField() throws {
        #expect(throws: ServiceError.self) { try EventService.patterns(["push.sent", "push.nope"], field: "types") }
        do {
            _ = try EventService.patterns(["activity.*", "bogus.*"], field: "types")
        } catch {
            #expect(error.fields?.first?.field == "types[1]")
        }
        #expect(throws: ServiceError.self) { try EventService.sequence(after: "42", field: "after") }
        #expect(try EventService.sequence(after: "evt_42", field: "after") == 42)
        #expect(EventPattern("*")?.matches("push.sent") == true)
        #expect(EventPattern("push.*")?.matches("pushy.sent") == false)
    }

    @Test func aStartNeverConfirmedIsReportedOnceAfterTheWindow() async throws {
        var settings = EventSettings()
        settings.startConfirmWindow = 600
        try await withRig(settings: settings) { rig in
            let app = try await rig.app()
            try await rig.start(app)
            // Not yet sent: nothing to confirm.
            rig.clock.advance(by: 900)
            #expect(await rig.services.events.reportUnconfirmedStarts() == 0)
            #expect(try rig.acceptQueued() == 2)
            // phone-2 answers with its update token; phone-1 never does.
            _ = try await rig.services.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-2", secret: rig.secrets[app.id, "phone-2"], activityID: "order-1",
                activityType: "DeliveryAttributes",
                token: String(repeating: "c2", count: 32))
            rig.clock.advance(by: 599)
            #expect(await rig.services.events.reportUnconfirmedStarts() == 0)
            rig.clock.advance(by: 2)
            #expect(await rig.services.events.reportUnconfirmedStarts() == 1)
            #expect(await rig.services.events.reportUnconfirmedStarts() == 0)
            let reported = try await rig.events(app, ["activity.start_unconfirmed"])
            #expect(reported.count == 1)
            #expect(reported.first?.data["device_id"] == "phone-1")
            #expect(reported.first?.data["waited_seconds"] == .integer(601))
        }
    }

    @Test func eventsOlderThanTheRetentionArePurged() async throws {
        var settings = EventSettings()
        settings.retention = 7 * 86_400
        try await withRig(settings: settings) { rig in
            let app = try await rig.app()
            try await rig.start(app, id: "old")
            rig.clock.advance(by: 6 * 86_400)
            try await rig.start(app, id: "newer")
            rig.clock.advance(by: 86_400 + 1)
            #expect(await rig.services.events.purgeExpired() == 1)
            #expect(try await rig.events(app).compactMap(\.activityID) == ["newer"])
        }
    }
}
