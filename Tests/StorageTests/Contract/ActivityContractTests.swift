import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: activities, their copies and activity types")
struct ActivityContractTests {
    @Test(arguments: StoreBackend.all)
    func activitiesListNewestFirstWithFiltersAndACursor(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                let s1 = try session.startActivity("a1", type: "Match", at: Fixture.at(1))
                let s2 = try session.startActivity("a2", type: "Race", at: Fixture.at(2))
                let s3 = try session.startActivity("a3", type: "Match", origin: .local, at: Fixture.at(3))
                try session.startActivity("b1", appID: "app_2", at: Fixture.at(4))
                #expect(s1 < s2 && s2 < s3)

                let a1 = try #require(try session.activity(appID: "app_1", activityID: "a1"))
                #expect(a1.sequence == s1)
                #expect(a1.activityType == "Match")
                #expect(a1.origin == .remote)
                #expect(a1.status == .started)
                #expect(a1.attributes == .object(["a": .integer(1)]))
                #expect(a1.contentState == .object(["score": .integer(0)]))
                #expect(a1.lastTimestamp == 1)
                #expect(a1.startedAt == Fixture.at(1))
                #expect(a1.endedAt == nil)
                #expect(try session.activity(appID: "app_2", activityID: "a1") == nil)
                #expect(try session.activity(appID: "app_1", activityID: "a3")?.origin == .local)

                func ids(_ filter: ActivityFilter) throws -> [String] {
                    try session.activities(appID: "app_1", filter: filter).map(\.activityID)
                }
                #expect(try ids(ActivityFilter()) == ["a3", "a2", "a1"])
                #expect(try ids(ActivityFilter(activityType: "Match")) == ["a3", "a1"])
                #expect(try ids(ActivityFilter(limit: 2)) == ["a3", "a2"])
                #expect(try ids(ActivityFilter(before: s3, limit: 1)) == ["a2"])
                #expect(try ids(ActivityFilter(before: s2)) == ["a1"])
                #expect(try ids(ActivityFilter(activityType: "Match", before: s3)) == ["a1"])

                try session.endActivity(appID: "app_1", activityID: "a2", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(5))
                #expect(try ids(ActivityFilter(status: .ended)) == ["a2"])
                #expect(try ids(ActivityFilter(status: .started)) == ["a3", "a1"])
                // Started at or before `expiredBefore`: reads as ended whatever is stored.
                var expired = ActivityFilter(status: .ended)
                expired.expiredBefore = Fixture.at(1)
                #expect(try ids(expired) == ["a2", "a1"])
                var running = ActivityFilter(status: .started)
                running.expiredBefore = Fixture.at(1)
                #expect(try ids(running) == ["a3"])
                try session.recordUpdate(appID: "app_1", activityID: "a3", contentState: .object(["score": .integer(2)]), timestamp: 7, now: Fixture.at(6))
                #expect(try ids(ActivityFilter(status: .updated)) == ["a3"])
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func updatesAndEndsAreRecordedOnTheActivityAndItsCopies(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                try session.insertPendingCopies(
                    appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2")], now: Fixture.t0)
                try session.recordUpdate(appID: "app_1", activityID: "a1", contentState: .object(["score": .integer(3)]), timestamp: 5, now: Fixture.at(1))
                var activity = try #require(try session.activity(appID: "app_1", activityID: "a1"))
                #expect(activity.status == .updated)
                #expect(activity.contentState == .object(["score": .integer(3)]))
                #expect(activity.lastTimestamp == 5)
                #expect(activity.updatedAt == Fixture.at(1))
                #expect(try !session.activityHasEnded(appID: "app_1", activityID: "a1"))

                // An end without content keeps the last.
                try session.endActivity(appID: "app_1", activityID: "a1", cause: .device, contentState: nil, timestamp: nil, at: Fixture.at(2))
                activity = try #require(try session.activity(appID: "app_1", activityID: "a1"))
                #expect(activity.status == .ended)
                #expect(activity.endCause == .device)
                #expect(activity.endedAt == Fixture.at(2))
                #expect(activity.contentState == .object(["score": .integer(3)]))
                #expect(activity.lastTimestamp == 5)
                #expect(try session.copies(appID: "app_1", activityID: "a1").map(\.status) == [.ended, .ended])
                #expect(try session.copies(appID: "app_1", activityID: "a1").map(\.endCause) == [.device, .device])
                #expect(try session.activityHasEnded(appID: "app_1", activityID: "a1"))
                #expect(try session.activityHasEnded(appID: "app_1", activityID: "missing"))
                // Ending again changes nothing.
                try session.endActivity(appID: "app_1", activityID: "a1", cause: .server, contentState: .object([:]), timestamp: 9, at: Fixture.at(3))
                #expect(try session.activity(appID: "app_1", activityID: "a1")?.endCause == .device)

                // An end with content records it.
                try session.startActivity("a2")
                try session.endActivity(appID: "app_1", activityID: "a2", cause: .server, contentState: .object(["score": .integer(9)]), timestamp: 8, at: Fixture.at(4))
                activity = try #require(try session.activity(appID: "app_1", activityID: "a2"))
                #expect(activity.contentState == .object(["score": .integer(9)]))
                #expect(activity.lastTimestamp == 8)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func anActivityIDIsTakenUntilReplaced(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1")], now: Fixture.t0)
            }
            let taken = #expect(throws: StoreError.self) { try store.writeNow { try $0.startActivity("a1") } }
            #expect(taken?.code == .conflict)
            try store.writeNow { session throws in
                let new = try session.startActivity("a1", type: "Race", replacing: true, at: Fixture.at(9))
                let replaced = try #require(try session.activity(appID: "app_1", activityID: "a1"))
                #expect(replaced.sequence == new)
                #expect(replaced.activityType == "Race")
                #expect(replaced.startedAt == Fixture.at(9))
                #expect(try session.copies(appID: "app_1", activityID: "a1").isEmpty)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func expiringEndsOldActivitiesTheirCopiesAndTheirQueuedStartsAndUpdates(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("old", at: Fixture.t0)
                try session.startActivity("new", at: Fixture.at(100))
                _ = try session.registerUpdateToken(appID: "app_1", activityID: "old", deviceID: "d1", token: "u1", environment: .sandbox, now: Fixture.t0)
                _ = try session.registerUpdateToken(appID: "app_1", activityID: "new", deviceID: "d1", token: "u2", environment: .sandbox, now: Fixture.t0)
                try session.queue(.update, activityID: "old", targets: [Fixture.target("d1", "u1")], minter: minter)
                try session.queue(.start, activityID: "old", targets: [Fixture.target("d1", "s1")], kind: .pushToStart, minter: minter)
                try session.queue(.end, activityID: "old", targets: [Fixture.target("d1", "u1")], minter: minter)
                try session.queue(.update, activityID: "new", targets: [Fixture.target("d1", "u2")], minter: minter)

                #expect(try session.expireActivities(startedBefore: Fixture.at(50), total: 8 * 3600, now: Fixture.at(200)).activities.count == 1)
                let old = try #require(try session.activity(appID: "app_1", activityID: "old"))
                #expect(old.status == .ended)
                #expect(old.endCause == .expired)
                #expect(old.endedAt == Date(unixMilliseconds: Fixture.t0.unixMilliseconds + 8 * 3600 * 1000))
                let copy = try #require(try session.copy(appID: "app_1", activityID: "old", deviceID: "d1"))
                #expect(copy.status == .ended)
                #expect(copy.endCause == .expired)
                #expect(copy.endedAt == old.endedAt)
                #expect(try session.activity(appID: "app_1", activityID: "new")?.status == .started)
                #expect(try session.copy(appID: "app_1", activityID: "new", deviceID: "d1")?.status == .active)

                let history = try session.pushes(appID: "app_1", activityID: "old", since: Fixture.t0)
                #expect(history.map(\.event) == [.update, .start, .end])
                #expect(history.map(\.status) == [.dropped, .dropped, .queued])
                #expect(history.prefix(2).allSatisfy { $0.reason == "ActivityExpired" })
                #expect(try session.pushes(appID: "app_1", activityID: "new", since: Fixture.t0).map(\.status) == [.queued])
                // Nothing left to expire.
                #expect(try session.expireActivities(startedBefore: Fixture.at(50), total: 8 * 3600, now: Fixture.at(300)).activities.count == 0)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func scheduledEndsComeDueOldestFirst(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1", endAt: Fixture.at(30))
                try session.startActivity("a2")
                try session.startActivity("a3", endAt: Fixture.at(60))
                try session.setEndAt(appID: "app_1", activityID: "a2", endAt: Fixture.at(20))
                #expect(try session.activity(appID: "app_1", activityID: "a2")?.endAt == Fixture.at(20))
                #expect(try session.dueScheduledEnds(now: Fixture.at(10), limit: 10).isEmpty)
                let due = try session.dueScheduledEnds(now: Fixture.at(30), limit: 10)
                #expect(due.map(\.activityID) == ["a2", "a1"])
                #expect(due.allSatisfy { $0.appID == "app_1" })
                #expect(try session.dueScheduledEnds(now: Fixture.at(90), limit: 2).map(\.activityID) == ["a2", "a1"])
                try session.endActivity(appID: "app_1", activityID: "a2", cause: .scheduled, contentState: nil, timestamp: nil, at: Fixture.at(30))
                #expect(try session.dueScheduledEnds(now: Fixture.at(90), limit: 10).map(\.activityID) == ["a1", "a3"])
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func copiesGoFromPendingToActiveAndRotateTheirTokens(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                try session.insertPendingCopies(
                    appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2", .production)],
                    now: Fixture.t0)
                // Pending again: each device keeps the copy it has.
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1")], now: Fixture.at(1))
                var copies = try session.copies(appID: "app_1", activityID: "a1")
                #expect(copies.map(\.deviceID) == ["d1", "d2"])
                #expect(copies.map(\.status) == [.pending, .pending])
                #expect(copies.map(\.updateToken) == [nil, nil])
                #expect(copies.map(\.environment) == [.sandbox, .production])
                #expect(copies[0].createdAt == Fixture.t0)
                #expect(try session.updateTargets(appID: "app_1", activityID: "a1").isEmpty)

                // The first token of a pending copy, of a device with no copy, then a rotation.
                #expect(try session.registerUpdateToken(appID: "app_1", activityID: "a1", deviceID: "d1", token: "u1", environment: .sandbox, now: Fixture.at(2)))
                #expect(try session.registerUpdateToken(appID: "app_1", activityID: "a1", deviceID: "d3", token: "u3", environment: .sandbox, now: Fixture.at(2)))
                #expect(try !session.registerUpdateToken(appID: "app_1", activityID: "a1", deviceID: "d1", token: "u1b", environment: .production, now: Fixture.at(3)))
                let d1 = try #require(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d1"))
                #expect(d1.status == .active)
                #expect(d1.updateToken == "u1b")
                #expect(d1.environment == .production)
                #expect(d1.tokenRegisteredAt == Fixture.at(3))
                #expect(d1.createdAt == Fixture.t0)
                #expect(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d9") == nil)
                #expect(try session.updateTargets(appID: "app_1", activityID: "a1")
                    == [Fixture.target("d1", "u1b", .production), Fixture.target("d3", "u3")])

                // Ending one copy: only while it holds the token named, once.
                #expect(try !session.endCopy(appID: "app_1", activityID: "a1", deviceID: "d1", cause: .device, onlyToken: "u1", at: Fixture.at(4)))
                #expect(try session.endCopy(appID: "app_1", activityID: "a1", deviceID: "d1", cause: .device, onlyToken: "u1b", at: Fixture.at(4)))
                #expect(try !session.endCopy(appID: "app_1", activityID: "a1", deviceID: "d1", cause: .device, at: Fixture.at(5)))
                #expect(try session.endCopy(appID: "app_1", activityID: "a1", deviceID: "d2", cause: .server, at: Fixture.at(5)))
                copies = try session.copies(appID: "app_1", activityID: "a1")
                #expect(copies.map(\.status) == [.ended, .ended, .active])
                #expect(copies[0].endedAt == Fixture.at(4))
                #expect(copies[0].endCause == .device)
                #expect(copies[1].endCause == .server)
                #expect(try session.updateTargets(appID: "app_1", activityID: "a1") == [Fixture.target("d3", "u3")])
                #expect(try session.registeredKinds(appID: "app_1", token: "u3") == [.liveActivityUpdate])
            }
        }
    }

    /// Read a page at a time, the targets are the whole list's, in device order,
    /// each once: ended copies and copies without a token are left out of every page.
    @Test(arguments: StoreBackend.all)
    func updateTargetsComeAPageAtATime(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                for index in 0..<23 {
                    let device = String(format: "d%02d", index)
                    #expect(try session.registerUpdateToken(
                        appID: "app_1", activityID: "a1", deviceID: device, token: "u\(index)", environment: .sandbox,
                        now: Fixture.at(1)))
                }
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: [Fixture.target("d99", "s")], now: Fixture.t0)
                #expect(try session.endCopy(appID: "app_1", activityID: "a1", deviceID: "d07", cause: .device, at: Fixture.at(2)))
            }
            let whole = try store.readNow { try $0.updateTargets(appID: "app_1", activityID: "a1") }
            #expect(whole.count == 22)
            for limit in [1, 5, 22, 100] {
                var pages: [[PushTarget]] = []
                var after: String?
                while true {
                    let page = try store.readNow {
                        try $0.updateTargets(appID: "app_1", activityID: "a1", afterDeviceID: after, limit: limit)
                    }
                    #expect(page.count <= limit)
                    if page.isEmpty { break }
                    pages.append(page)
                    after = page.last?.deviceID
                }
                #expect(pages.flatMap { $0 } == whole)
                #expect(pages.count == (whole.count + limit - 1) / limit)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func refusedUpdateTokensEndTheirCopyUnlessRegisteredAgain(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                _ = try session.registerUpdateToken(appID: "app_1", activityID: "a1", deviceID: "d1", token: "u1", environment: .sandbox, now: Fixture.at(10))
                #expect(try !session.endRefusedCopy(appID: "app_1", activityID: "a1", token: "u1", refusedAt: Fixture.at(9), now: Fixture.at(11)))
                #expect(try !session.endRefusedCopy(appID: "app_1", activityID: "a1", token: "other", refusedAt: Fixture.at(10), now: Fixture.at(11)))
                #expect(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d1")?.status == .active)
                #expect(try session.endRefusedCopy(appID: "app_1", activityID: "a1", token: "u1", refusedAt: Fixture.at(10), now: Fixture.at(11)))
                let copy = try #require(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d1"))
                #expect(copy.status == .ended)
                #expect(copy.endCause == .tokenRejected)
                #expect(copy.endedAt == Fixture.at(11))
                #expect(try !session.endRefusedCopy(appID: "app_1", activityID: "a1", token: "u1", refusedAt: nil, now: Fixture.at(12)))

                try session.startActivity("a2")
                _ = try session.registerUpdateToken(appID: "app_1", activityID: "a2", deviceID: "d1", token: "u2", environment: .sandbox, now: Fixture.at(10))
                #expect(try session.endRefusedCopy(appID: "app_1", activityID: "a2", token: "u2", refusedAt: nil, now: Fixture.at(11)))
            }
        }
    }

    // MARK: - Activity types

    @Test(arguments: StoreBackend.all)
    func activityTypesArePutReplacedListedAndDeleted(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                #expect(try session.putActivityType(appID: "app_1", name: "Race", schema: Fixture.schema("lap"), now: Fixture.t0))
                #expect(try session.putActivityType(appID: "app_1", name: "Match", schema: Fixture.schema(), now: Fixture.t0))
                #expect(try !session.putActivityType(appID: "app_1", name: "Race", schema: Fixture.schema("position"), now: Fixture.at(5)))
                #expect(try session.putActivityType(appID: "app_2", name: "Race", schema: Fixture.schema(), now: Fixture.t0))
                let race = try #require(try session.activityType(appID: "app_1", name: "Race"))
                #expect(race.schema == Fixture.schema("position"))
                #expect(race.createdAt == Fixture.t0)
                #expect(race.updatedAt == Fixture.at(5))
                #expect(try session.activityType(appID: "app_1", name: "Nothing") == nil)
                #expect(try session.activityTypes(appID: "app_1").map(\.name) == ["Match", "Race"])
                #expect(try session.activityTypes(appID: "app_2").map(\.schema) == [Fixture.schema()])
                #expect(try session.deleteActivityType(appID: "app_1", name: "Race"))
                #expect(try !session.deleteActivityType(appID: "app_1", name: "Race"))
                #expect(try session.activityTypes(appID: "app_1").map(\.name) == ["Match"])
                #expect(try session.activityType(appID: "app_2", name: "Race") != nil)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func runningActivitiesCountTheOpenOnesOfAType(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1", type: "Match", at: Fixture.at(1))
                try session.startActivity("a2", type: "Match", at: Fixture.at(2))
                try session.startActivity("a3", type: "Match", at: Fixture.at(3))
                try session.startActivity("b1", type: "Race", at: Fixture.at(3))
                try session.endActivity(appID: "app_1", activityID: "a3", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(4))
                #expect(try session.runningActivities(appID: "app_1", activityType: "Match", startedAfter: Fixture.t0) == 2)
                #expect(try session.runningActivities(appID: "app_1", activityType: "Match", startedAfter: Fixture.at(1)) == 1)
                #expect(try session.runningActivities(appID: "app_1", activityType: "Race", startedAfter: Fixture.t0) == 1)
                #expect(try session.runningActivities(appID: "app_1", activityType: "None", startedAfter: Fixture.t0) == 0)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func anActivityFirstSeenOnADeviceIsAddedOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                let added = try #require(try session.insertLocalActivity(
                    appID: "app_1", activityID: "local-1", activityType: "Match", createdBy: "device-1", now: Fixture.at(1)))
                #expect(added.activityID == "local-1" && added.activityType == "Match")
                #expect(added.origin == .local && added.status == .started && added.startedAt == Fixture.at(1))
                #expect(added.attributes == nil && added.contentState == nil)
                // Seen again (from another device, or the same one): nothing is added.
                #expect(try session.insertLocalActivity(appID: "app_1", activityID: "local-1", activityType: "Match", createdBy: "device-1", now: Fixture.at(2)) == nil)
            }
            let stored = try #require(try store.readNow { try $0.activity(appID: "app_1", activityID: "local-1") })
            #expect(stored.origin == .local && stored.startedAt == Fixture.at(1))
            // An activity Islet started is not replaced by a device's report of it.
            try store.writeNow { session throws in
                try session.startActivity("remote-1")
                #expect(try session.insertLocalActivity(appID: "app_1", activityID: "remote-1", activityType: "Match", createdBy: "device-1", now: Fixture.at(3)) == nil)
            }
            #expect(try store.readNow { try $0.activity(appID: "app_1", activityID: "remote-1") }?.origin == .remote)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aStartAcceptedButNeverConfirmedIsReportedOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                let targets = [Fixture.target("d1", "s1"), Fixture.target("d2", "s2"), Fixture.target("d3", "s3")]
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: targets, now: Fixture.t0)
                try session.queue(.start, activityID: "a1", targets: targets, kind: .pushToStart, activityType: "Match", minter: minter)
            }
            let claimed = try store.writeNow(durable: false) { session throws in
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(1), limit: 10, lease: Fixture.lease, sends: &cache)
            }
            try #require(claimed.count == 3)
            try store.writeNow { session throws in
                for push in claimed {
                    // d3's start is still being retried: it was never accepted.
                    let outcome = push.deviceID == "d3"
                        ? PushOutcome(status: .queued, attempts: 1, apnsStatus: 503, reason: "ServiceUnavailable", nextAttemptAt: Fixture.at(60))
                        : PushOutcome(status: .sent, attempts: 1, apnsStatus: 200, serviceMessageID: "u-\(push.deviceID)")
                    try session.recordOutcome(pushID: push.id, outcome, by: "node-1", now: Fixture.at(2))
                }
                // d2's activity started and registered its update token.
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: "d2", token: "u2", environment: .sandbox, now: Fixture.at(3))
            }
            // Not before the window has passed since APNs accepted it.
            let early = try store.writeNow { try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(1), now: Fixture.at(5), limit: 10) }
            #expect(early.isEmpty)
            let reported = try store.writeNow { try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(10), now: Fixture.at(10), limit: 10) }
            let d1 = try #require(claimed.first { $0.deviceID == "d1" })
            #expect(reported.map(\.deviceID) == ["d1"])
            #expect(reported.first?.apnsID == d1.apnsID && reported.first?.sentAt == Fixture.at(2))
            #expect(reported.first?.activityID == "a1" && reported.first?.appID == "app_1")
            // Once.
            let again = try store.writeNow { try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(20), now: Fixture.at(20), limit: 10) }
            #expect(again.isEmpty)
        }
    }

    @Test(arguments: StoreBackend.all)
    func anActivitysJoinAudienceTakesInDevicesByIDUserOrTagAndPassesToItsSuccessor(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                for (device, user, tags) in [("d1", "u1", ["vip"]), ("d2", "u2", ["couriers"]), ("d3", nil, [String]())] {
                    _ = try session.insertDevice(
                        appID: "app_1", deviceID: device, Fixture.registration(userID: .some(user), tags: tags),
                        secretHash: nil, now: Fixture.t0)
                }
                try session.startActivity("order-1")
                try session.setJoin(
                    appID: "app_1", activityID: "order-1", rule: .audience, adding: JoinAudience(userIDs: ["u1"]))
            }
            try store.readNow { session throws in
                let activity = try #require(try session.activity(appID: "app_1", activityID: "order-1"))
                #expect(activity.join == .audience && activity.createdBy == nil)
                #expect(try session.inJoinAudience(appID: "app_1", activityID: "order-1", deviceID: "d1"))
                #expect(try !session.inJoinAudience(appID: "app_1", activityID: "order-1", deviceID: "d2"))
                #expect(try !session.inJoinAudience(appID: "app_1", activityID: "order-1", deviceID: "d3"))
                #expect(try !session.inJoinAudience(appID: "app_1", activityID: "order-1", deviceID: "nobody"))
            }
            try store.writeNow { session throws in
                // Values already listed are not added twice.
                let added = try session.addJoinAudience(
                    appID: "app_1", activityID: "order-1", JoinAudience(userIDs: ["u1"], deviceIDs: ["d3"], tags: ["couriers"]))
                #expect(added == 2)
                try session.startActivity("order-1~2")
                try session.setJoin(appID: "app_1", activityID: "order-1~2", rule: .audience, adding: JoinAudience())
                try session.copyJoinAudience(appID: "app_1", from: "order-1", to: "order-1~2")
            }
            try store.readNow { session throws in
                for activityID in ["order-1", "order-1~2"] {
                    #expect(try session.joinAudience(appID: "app_1", activityID: activityID)
                        == JoinAudience(userIDs: ["u1"], deviceIDs: ["d3"], tags: ["couriers"]))
                    for device in ["d1", "d2", "d3"] {
                        #expect(try session.inJoinAudience(appID: "app_1", activityID: activityID, deviceID: device))
                    }
                }
                #expect(try session.activity(appID: "app_1", activityID: "order-1~2")?.join == .audience)
                // Another app's activity of the same id lets in nobody.
                #expect(try !session.inJoinAudience(appID: "app_2", activityID: "order-1", deviceID: "d1"))
            }
            // A local activity knows its creator and the creator's user id; a copy
            // marked joined reads so; a replacement start forgets the old audience.
            try store.writeNow { session throws in
                let local = try #require(try session.insertLocalActivity(
                    appID: "app_1", activityID: "ride-1", activityType: "Match", createdBy: "d1", now: Fixture.t0))
                #expect(local.createdBy == "d1" && local.creatorUserID == "u1" && local.join == nil)
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "ride-1", deviceID: "d2", token: "t-ride", environment: .sandbox, now: Fixture.t0)
                try session.markJoined(appID: "app_1", activityID: "ride-1", deviceID: "d2")
                #expect(try session.copy(appID: "app_1", activityID: "ride-1", deviceID: "d2")?.joined == true)
                try session.startActivity("order-1", replacing: true)
                #expect(try session.joinAudience(appID: "app_1", activityID: "order-1").isEmpty)
            }
            let app = try #require(try store.readNow { try $0.app(id: "app_1") })
            #expect(app.localJoin == .anyone)
            var changed = app
            changed.localJoin = .user
            try store.writeNow { session throws in try session.updateAppSettings(changed) }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.localJoin == .user)
            // A device route reads the rule, and the device's user id, with its access.
            let access = try store.writeNow { try $0.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false) }
            #expect(access.localJoin == .user && access.userID == "u1")
            let anonymous = try store.writeNow { try $0.deviceAccess(appID: "app_1", deviceID: "d3", exclusive: false) }
            #expect(anonymous.localJoin == .user && anonymous.userID == nil)
        }
    }
}
