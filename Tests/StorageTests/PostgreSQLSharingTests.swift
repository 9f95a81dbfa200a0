import Foundation
import IsletCore
import IsletSync
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Storage
import Testing

/// Several stores on one PostgreSQL schema, as several nodes share one database:
/// what one writer made true must hold with many.
@Suite("PostgreSQL shared by several nodes", .requires(.postgres))
struct PostgreSQLSharingTests {
    /// Runs `body` with `count` stores on one fresh schema, all closed afterwards.
    func withNodes<T>(_ count: Int, poolSize: Int = 2, _ body: ([PostgreSQLStore], String) async throws -> T) async throws -> T {
        // Named apart from every other test's connections, which this suite may end.
        let tag = String(UInt32.random(in: 0...UInt32.max), radix: 16)
        return try await TestPostgres.withSchema { url in
            var stores: [PostgreSQLStore] = []
            defer { for store in stores { store.close() } }
            for index in 0..<count {
                stores.append(try PostgreSQLStore(url: url, poolSize: poolSize, applicationName: "islet-node-\(tag)-\(index)"))
            }
            return try await body(stores, url)
        }
    }

    /// A gate one transaction waits at until the test opens it.
    final class Gate: Sendable {
        private let state = ConditionLock((reached: false, open: false))
        func wait() {
            state.withLockBroadcasting { $0.reached = true }
            state.wait(until: { $0.open }, timeout: .seconds(60)) { _ in }
        }
        func open() { state.withLockBroadcasting { $0.open = true } }
        /// Notes that the point was reached, without waiting.
        func mark() { state.withLockBroadcasting { $0.reached = true } }
        var reached: Bool { state.withLock { $0.reached } }
    }

    @Test func nodesStartingTogetherMigrateOnce() async throws {
        try await TestPostgres.withSchema { url in
            let stores = try await withThrowingTaskGroup(of: PostgreSQLStore.self) { group in
                for index in 0..<3 {
                    group.addTask { try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet-start-\(index)") }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            defer { for store in stores { store.close() } }
            // SQLite's first six migrations are one on PostgreSQL.
            #expect(try await TestPostgres.psql(url, "SELECT count(*) FROM islet_migrations") == String(IsletSchema.migrations.count - 5))
            for store in stores { #expect(try store.readNow { try $0.schemaVersion() } == IsletSchema.migrations.last?.version) }
        }
    }

    @Test func aDatabaseFromANewerIsletIsRefused() async throws {
        try await TestPostgres.withSchema { url in
            try PostgreSQLStore(url: url, poolSize: 1).close()
            try await TestPostgres.psql(url, "INSERT INTO islet_migrations VALUES (99, 'future', 'later')")
            let error = #expect(throws: StoreError.self) { try PostgreSQLStore(url: url, poolSize: 1) }
            #expect(error?.message.contains("newer than this Islet knows") == true)
        }
    }

    @Test func twoNodesClaimingAtOnceNeverTakeTheSamePush() async throws {
        try await withNodes(2) { stores, _ in
            let targets = (0..<600).map { Fixture.target("d\($0)", "t\($0)") }
            let minter = IDMinter()
            try stores[0].writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
            }
            let taken = try await withThrowingTaskGroup(of: (Int, [Int64]).self) { group in
                for (index, store) in stores.enumerated() {
                    group.addTask {
                        var mine: [Int64] = []
                        while true {
                            // On the store's own threads: a claim loop on the
                            // concurrency pool's would hold up every other test.
                            let claimed = try await store.write { session in
                                var cache: [Int64: SendContent] = [:]
                                return try session.claimDuePushes(
                                    now: Fixture.at(1), limit: 25, lease: PushLease(nodeID: "node-\(index)", until: Fixture.at(60)),
                                    sends: &cache)
                            }
                            if claimed.isEmpty { return (index, mine) }
                            mine += claimed.map(\.id)
                        }
                    }
                }
                var byNode: [[Int64]] = [[], []]
                for try await (index, ids) in group { byNode[index] = ids }
                return byNode
            }
            #expect(taken[0].count + taken[1].count == 600)
            #expect(Set(taken[0]).isDisjoint(with: taken[1]))
            let nodes = try stores[1].writeNow { session in
                try session.recordHeartbeat(nodeID: "node-0", startedAt: Fixture.t0, now: Fixture.at(1))
                try session.recordHeartbeat(nodeID: "node-1", startedAt: Fixture.t0, now: Fixture.at(1))
                return try session.nodes(seenSince: Fixture.t0)
            }
            #expect(nodes.map(\.claimedPushes) == [taken[0].count, taken[1].count])
        }
    }

    @Test func theSecondAnswerToAnIdempotencyKeyIsAConflictOnceTheFirstCommits() async throws {
        try await withNodes(2) { stores, _ in
            try stores[0].writeNow { try $0.insertApp(Fixture.app()) }
            @Sendable func answer(_ body: String) -> IdempotentAnswer {
                IdempotentAnswer(requestHash: Data("hash".utf8), status: 202, body: Data(body.utf8), createdAt: Fixture.at(1))
            }
            let gate = Gate()
            async let first: Void = stores[0].write { session in
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k", since: Fixture.t0) == nil)
                try session.saveIdempotentAnswer(appID: "app_1", key: "k", answer("first"), replacingBefore: Fixture.t0)
                gate.wait()
            }
            #expect(await eventually { gate.reached })
            let read = Gate()
            let second = Task { try await stores[1].write { session -> Bool in
                // Reads before the first commits: no answer yet, so it saves one too,
                // and waits on the first's row.
                let sawNone = try session.idempotentAnswer(appID: "app_1", key: "k", since: Fixture.t0) == nil
                read.mark()
                try session.saveIdempotentAnswer(appID: "app_1", key: "k", answer("second"), replacingBefore: Fixture.t0)
                return sawNone
            } }
            #expect(await eventually { read.reached })
            // Let the second's insert reach the first's row and wait there.
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            try await first
            let error = await #expect(throws: StoreError.self) { try await second.value }
            #expect(error?.code == .conflict)
            let stored = try stores[1].readNow { try $0.idempotentAnswer(appID: "app_1", key: "k", since: Fixture.t0) }
            #expect(stored?.body == Data("first".utf8))
        }
    }

    @Test func aLockedActivityMakesTheNextWriterReadWhatTheFirstWrote() async throws {
        try await withNodes(2) { stores, _ in
            try stores[0].writeNow { session in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
            }
            let gate = Gate()
            async let first: Void = stores[0].write { session in
                let activity = try #require(try session.lockedActivity(appID: "app_1", activityID: "a1"))
                gate.wait()
                try session.recordUpdate(
                    appID: "app_1", activityID: "a1", contentState: .object(["score": .integer(1)]),
                    timestamp: (activity.lastTimestamp ?? 0) + 1, now: Fixture.at(1))
            }
            #expect(await eventually { gate.reached })
            async let second: Int64? = stores[1].write { session in
                try session.lockedActivity(appID: "app_1", activityID: "a1")?.lastTimestamp
            }
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            try await first
            let seen = try await second
            // The fixture starts at timestamp 1; the first writer made it 2 while the
            // second waited for the row.
            #expect(seen == 2)
        }
    }

    @Test func aDeviceReadForItsSecretKeepsThatSecretUntilTheTransactionEnds() async throws {
        try await withNodes(2) { stores, url in
            let first = Data("first".utf8)
            try stores[0].writeNow { session in
                try session.insertApp(Fixture.app())
                _ = try session.insertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), secretHash: first, now: Fixture.t0)
            }
            let gate = Gate()
            // A request checked against the secret (shared lock) acts on what it checked.
            async let checked: (Data?, Data?) = stores[0].write { session in
                let before = try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretHash
                gate.wait()
                return (before, try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretHash)
            }
            #expect(await eventually { gate.reached })
            // A reset meanwhile waits for it.
            let reset = Task {
                try await stores[1].write { session in
                    try session.replaceDeviceSecret(appID: "app_1", deviceID: "d1", secretHash: Data("second".utf8), presentedAt: nil)
                }
            }
            // Seen waiting on the lock, so that the gate opens on a reset that has
            // begun, not on one yet to start.
            let waiting = await eventually {
                let count = try? await TestPostgres.psql(
                    url, "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        + "AND application_name LIKE 'islet-node-%-1' AND query LIKE '%devices%'")
                return (Int(count ?? "0") ?? 0) > 0
            }
            #expect(waiting, "the reset never waited for the checked device's lock")
            gate.open()
            let (before, after) = try await checked
            #expect(before == first)
            #expect(after == first)
            #expect(try await reset.value)
            #expect(try stores[1].writeNow { try $0.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false) }.secretHash
                == Data("second".utf8))
        }
    }

    @Test func twoNodesAddingTheSameLocalActivityBothSucceedAndOneAddsIt() async throws {
        try await withNodes(2) { stores, _ in
            try stores[0].writeNow { try $0.insertApp(Fixture.app()) }
            let gate = Gate()
            async let first: Bool = stores[0].write { session in
                let added = try session.insertLocalActivity(appID: "app_1", activityID: "a1", activityType: "Match", createdBy: "device-1", now: Fixture.t0)
                gate.wait()
                return added?.origin == .local
            }
            #expect(await eventually { gate.reached })
            let second = Task {
                try await stores[1].write { session in
                    try session.insertLocalActivity(appID: "app_1", activityID: "a1", activityType: "Match", createdBy: "device-1", now: Fixture.t0) != nil
                }
            }
            try await Task.sleep(for: .milliseconds(100))
            gate.open()
            let firstAdded = try await first
            let secondAdded = try await second.value
            #expect(firstAdded && !secondAdded)
            let activity = try stores[1].readNow { try $0.activity(appID: "app_1", activityID: "a1") }
            #expect(activity?.origin == .local)
            #expect(activity?.activityType == "Match")
        }
    }

    @Test func aPeriodicJobRunsOnOneNodeAtATime() async throws {
        try await withNodes(2) { stores, _ in
            let gate = Gate()
            async let first: Bool = stores[0].write { session in
                let taken = try session.claimPeriodicJob("sweep")
                gate.wait()
                return taken
            }
            #expect(await eventually { gate.reached })
            let whileHeld = try await stores[1].write { try $0.claimPeriodicJob("sweep") }
            let another = try await stores[1].write { try $0.claimPeriodicJob("scheduled-ends") }
            #expect(!whileHeld)
            #expect(another)
            gate.open()
            let firstTook = try await first
            #expect(firstTook)
            let afterwards = try await stores[1].write { try $0.claimPeriodicJob("sweep") }
            #expect(afterwards)
        }
    }

    @Test func noticesReachEveryNodeWhenTheTransactionCommits() async throws {
        try await withNodes(2) { stores, _ in
            let heard = Lock<[StoreNotice]>([])
            stores[1].subscribe { notice in heard.withLock { $0.append(notice) } }
            // The listener connects in its own time: send until one is heard.
            #expect(await eventually {
                try? stores[0].writeNow { try $0.notifyNodes(.resync) }
                return heard.withLock { $0.contains(.resync) }
            })
            let minter = IDMinter()
            try stores[0].writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: [Fixture.target("d1", "t1")], minter: minter)
                _ = try session.replaceKeys(appID: "app_1", serverKeyHash: Data("s2".utf8), deviceKeyHash: Data("d2".utf8), now: Fixture.at(1))
            }
            #expect(await eventually { heard.withLock { $0.contains(.pushesQueued) && $0.contains(.appChanged(appID: "app_1")) } })
            // Timed work added or moved (a schedule item, an end time, a renewal)
            // wakes the other nodes' timekeepers; nothing timed, no notice.
            heard.withLock { $0.removeAll() }
            try stores[0].writeNow { session in
                try session.startActivity("plain", at: Fixture.at(1))
                try session.notifyNodes(.appChanged(appID: "marker-1"))
            }
            #expect(await eventually { heard.withLock { $0.contains(.appChanged(appID: "marker-1")) } })
            #expect(!heard.withLock { $0.contains(.timersChanged) })
            for write in [
                { (session: any StoreSession) in try session.startActivity("timed", endAt: Fixture.at(90), at: Fixture.at(1)) },
                { (session: any StoreSession) in try session.setEndAt(appID: "app_1", activityID: "plain", endAt: Fixture.at(80)) },
                { (session: any StoreSession) in
                    try session.insertSchedules(
                        appID: "app_1",
                        [NewSchedule(scheduleID: "s1", kind: .notification, activityID: nil, sendAt: Fixture.at(60), command: .null)],
                        now: Fixture.at(1))
                },
            ] as [(any StoreSession) throws -> Void] {
                heard.withLock { $0.removeAll() }
                try stores[0].writeNow { try write($0) }
                #expect(await eventually { heard.withLock { $0.contains(.timersChanged) } })
            }
            // A rolled-back transaction tells nobody.
            heard.withLock { $0.removeAll() }
            struct Abandon: Error {}
            #expect(throws: Abandon.self) {
                try stores[0].writeNow { session in
                    try session.notifyNodes(.appChanged(appID: "rolled-back"))
                    throw Abandon()
                }
            }
            try stores[0].writeNow { try $0.notifyNodes(.appChanged(appID: "after")) }
            #expect(await eventually { heard.withLock { $0.contains(.appChanged(appID: "after")) } })
            // A stream open on one node asks the others for an event per push sent.
            try stores[0].writeNow { try $0.notifyNodes(.eventsWanted(appID: "app_1")) }
            #expect(await eventually { heard.withLock { $0.contains(.eventsWanted(appID: "app_1")) } })
            #expect(!heard.withLock { $0.contains(.appChanged(appID: "rolled-back")) })
        }
    }

    @Test func aLostConnectionIsReplacedAndTheTransactionRunsAgain() async throws {
        let name = "islet-lost-" + String(UInt32.random(in: 0...UInt32.max), radix: 16)
        try await TestPostgres.withSchema { url in
            let store = try PostgreSQLStore(url: url, poolSize: 1, applicationName: name)
            defer { store.close() }
            try store.writeNow { try $0.insertApp(Fixture.app()) }
            // Every connection of the store dies under it, the listener's too.
            let killed = try await TestPostgres.psql(
                url,
                "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = '\(name)' AND pid <> pg_backend_pid()")
            #expect(Int(killed) ?? 0 >= 1)
            try store.writeNow { try $0.insertApp(Fixture.app("app_2")) }
            #expect(try await store.read { try $0.apps().map(\.id) } == ["app_1", "app_2"])
        }
    }

    @Test func anUnreachableServerOrARefusedPasswordIsUnavailableWithoutThePassword() async throws {
        let port = try ReservedPort()
        let unreachable = #expect(throws: StoreError.self) {
            try PostgreSQLStore(url: "postgresql://islet:hunter2secret@127.0.0.1:\(port.port)/postgres?connect_timeout=5")
        }
        #expect(unreachable?.code == .unavailable)
        #expect(unreachable?.message.contains("hunter2secret") == false)
        let serverPort = try #require(TestPostgres.port)
        let refused = #expect(throws: StoreError.self) {
            try PostgreSQLStore(url: "postgresql://islet_password:wrong-secret-123@127.0.0.1:\(serverPort)/postgres")
        }
        #expect(refused?.code == .unavailable)
        #expect(refused?.message.contains("wrong-secret-123") == false)
        #expect(refused?.message.contains("password") == true)
    }
}
