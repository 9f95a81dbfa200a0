import Foundation
import IsletCore
import IsletSync
import IsletTesting
import Storage
import Testing

/// Leases, heartbeats and the other rules that let several nodes share a queue.
@Suite("Store contract: nodes and leases")
struct NodeContractTests {
    let targets = [Fixture.target("d1", "u1"), Fixture.target("d2", "u2"), Fixture.target("d3", "u3")]

    private func claim(
        _ store: any Store, at seconds: Double, limit: Int = 10, node: String = "node-1", leaseSeconds: Double = 30
    ) throws -> [ClaimedPush] {
        try store.writeNow { session in
            var cache: [Int64: SendContent] = [:]
            return try session.claimDuePushes(
                now: Fixture.at(seconds), limit: limit,
                lease: PushLease(nodeID: node, until: Fixture.at(seconds + leaseSeconds)), sends: &cache)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aNodeHandsBackOnlyThePushesItHolds(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
            }
            #expect(try claim(store, at: 1, limit: 2, node: "node-1").map(\.apnsID) == ["id-1", "id-2"])
            #expect(try claim(store, at: 1, limit: 2, node: "node-2").map(\.apnsID) == ["id-3"])
            #expect(try store.writeNow { try $0.requeueInFlight(.heldBy(nodeID: "node-1"), now: Fixture.at(2)) } == 2)
            #expect(try store.writeNow { try $0.requeueInFlight(.heldBy(nodeID: "node-1"), now: Fixture.at(2)) } == 0)
            // node-2's push stays in flight; node-1's are due again, with their apns-ids.
            #expect(try store.readNow { try $0.queueDepth() } == 3)
            #expect(try claim(store, at: 2, node: "node-3").map(\.apnsID) == ["id-1", "id-2"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func pushesWhoseLeaseRanOutAreTakenOverAndRenewedLeasesAreNot(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
            }
            _ = try claim(store, at: 1, limit: 1, node: "dead", leaseSeconds: 10)
            _ = try claim(store, at: 1, limit: 1, node: "alive", leaseSeconds: 10)
            // At 9 s the live node renews to 19 s; the dead one never does.
            #expect(try store.writeNow { try $0.renewLeases(nodeID: "alive", until: Fixture.at(19)) } == 1)
            #expect(try store.writeNow { try $0.renewLeases(nodeID: "nobody", until: Fixture.at(19)) } == 0)
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(10)) } == 0)
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(12)) } == 1)
            let taken = try claim(store, at: 12, node: "alive")
            #expect(taken.map(\.apnsID) == ["id-1", "id-3"])
            // Renewed again at 18 s, all three of the live node's are safe at 20 s.
            #expect(try store.writeNow { try $0.renewLeases(nodeID: "alive", until: Fixture.at(28)) } == 3)
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(20)) } == 0)
        }
    }

    @Test(arguments: StoreBackend.all)
    func heartbeatsListNodesWithThePushesTheyHold(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
                try session.recordHeartbeat(nodeID: "node-b", startedAt: Fixture.at(0), now: Fixture.at(1))
                try session.recordHeartbeat(nodeID: "node-a", startedAt: Fixture.at(0), now: Fixture.at(1))
                try session.recordHeartbeat(nodeID: "node-a", startedAt: Fixture.at(0), now: Fixture.at(5))
                try session.recordHeartbeat(nodeID: "old", startedAt: Fixture.at(-100), now: Fixture.at(-50))
            }
            _ = try claim(store, at: 2, limit: 2, node: "node-a")
            let nodes = try store.readNow { try $0.nodes(seenSince: Fixture.at(0)) }
            #expect(nodes.map(\.nodeID) == ["node-a", "node-b"])
            #expect(nodes.map(\.claimedPushes) == [2, 0])
            #expect(nodes[0].lastHeartbeatAt == Fixture.at(5))
            #expect(nodes[0].startedAt == Fixture.at(0))
            #expect(try store.writeNow { try $0.forgetNodes(seenBefore: Fixture.at(0)) } == 1)
            #expect(try store.readNow { try $0.nodes(seenSince: Fixture.at(-1000)) }.count == 2)
        }
    }

    @Test(arguments: StoreBackend.all)
    func sentPushesAreRecordedTogetherAndLeaveTheQueue(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
            }
            let claimed = try claim(store, at: 1, node: "node-1")
            let recorded = try store.writeNow { session -> Set<Int64> in
                let recorded = try session.recordSent(
                    [
                        SentPush(pushID: claimed[0].id, attempts: 1, apnsStatus: 200, serviceMessageID: #"unique-1 "quoted" \é"#),
                        SentPush(pushID: claimed[1].id, attempts: 2, apnsStatus: 200, serviceMessageID: nil),
                    ], by: "node-1", now: Fixture.at(3))
                #expect(try session.recordSent([], by: "node-1", now: Fixture.at(3)).isEmpty)
                return recorded
            }
            #expect(recorded == [claimed[0].id, claimed[1].id])
            let items = try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
            #expect(items.map(\.status) == [.sent, .sent, .queued])
            #expect(items.map(\.attempts) == [1, 2, 0])
            #expect(items.map(\.serviceMessageID) == [#"unique-1 "quoted" \é"#, nil, nil])
            #expect(items.map(\.apnsStatus) == [200, 200, nil])
            #expect(items[0].sentAt == Fixture.at(3))
            // Recorded pushes are no longer the node's: only the third is counted.
            #expect(try store.readNow { try $0.nodes(seenSince: Fixture.t0) }.isEmpty)
            try store.writeNow { try $0.recordHeartbeat(nodeID: "node-1", startedAt: Fixture.t0, now: Fixture.at(3)) }
            #expect(try store.readNow { try $0.nodes(seenSince: Fixture.t0) }.first?.claimedPushes == 1)
            #expect(try store.readNow { try $0.queueDepth() } == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aPeriodicJobIsTakenByOneTransactionAtATime(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let first = try store.writeNow { try $0.claimPeriodicJob("sweep") }
            // Ended with its transaction: the next one takes it again.
            let second = try store.writeNow { try $0.claimPeriodicJob("sweep") }
            #expect(first && second)
        }
    }

    @Test(arguments: StoreBackend.all)
    func theLockedActivityReadsLikeTheActivity(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.startActivity("a1")
                #expect(try session.lockedActivity(appID: "app_1", activityID: "a1")
                    == session.activity(appID: "app_1", activityID: "a1"))
                #expect(try session.lockedActivity(appID: "app_1", activityID: "nope") == nil)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func anUpdateTokenIsCheckedAgainstItsDeviceItsOtherKindsAndItsActivity(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let checks = try store.writeNow { session -> (UpdateTokenChecks, UpdateTokenChecks) in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa", environment: .production), now: Fixture.t0)
                try session.startActivity("a1")
                let known = try session.updateTokenChecks(appID: "app_1", deviceID: "d1", activityID: "a1", token: "aa")
                let unknown = try session.updateTokenChecks(appID: "app_1", deviceID: "d2", activityID: "a2", token: "bb")
                return (known, unknown)
            }
            #expect(checks.0.environment == .production)
            #expect(checks.0.otherKinds == [.device])
            #expect(checks.0.activity?.activityID == "a1")
            #expect(checks.1.environment == nil)
            #expect(checks.1.otherKinds.isEmpty)
            #expect(checks.1.activity == nil)
        }
    }

    /// A node whose lease ran out, and whose push another node took over, records
    /// nothing when its late answer comes.
    @Test(arguments: StoreBackend.all)
    func aLateAnswerForAPushTakenOverChangesNothing(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: [Fixture.target("d1", "u1")], minter: minter)
            }
            let slow = try #require(try claim(store, at: 1, node: "slow", leaseSeconds: 5).first)
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(10)) } == 1)
            let taken = try #require(try claim(store, at: 10, node: "fast").first)
            #expect(taken.id == slow.id && taken.apnsID == slow.apnsID)
            let late = try store.writeNow { session in
                try session.recordOutcome(
                    pushID: slow.id, PushOutcome(status: .queued, attempts: 1, apnsStatus: 429, reason: "TooManyRequests",
                                                 nextAttemptAt: Fixture.at(11)), by: "slow", now: Fixture.at(11))
            }
            #expect(!late)
            let lateRecorded = try store.writeNow { session in
                try session.recordSent([SentPush(pushID: slow.id, attempts: 1, apnsStatus: 200, serviceMessageID: nil)], by: "slow", now: Fixture.at(11))
            }
            #expect(lateRecorded.isEmpty, "a push the node no longer holds is not recorded, nor answered as recorded")
            // Still the fast node's, in flight: the late answers changed nothing.
            let item = try #require(try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }.first)
            #expect(item.attempts == 0)
            #expect(item.sentAt == nil)
            try store.writeNow { try $0.recordHeartbeat(nodeID: "fast", startedAt: Fixture.t0, now: Fixture.at(11)) }
            #expect(try store.readNow { try $0.nodes(seenSince: Fixture.t0) }.first?.claimedPushes == 1)
            let recorded = try store.writeNow { session in
                try session.recordOutcome(
                    pushID: taken.id, PushOutcome(status: .sent, attempts: 1, apnsStatus: 200), by: "fast", now: Fixture.at(12))
            }
            #expect(recorded)
        }
    }

    /// Notices reach every node of a shared database (this one too) once the
    /// transaction commits, none for a rollback; a database only one node uses
    /// sends none at all.
    @Test(arguments: StoreBackend.all)
    func noticesGoOutAtCommitWhereNodesShareTheDatabase(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let received = Lock<[StoreNotice]>([])
            store.subscribe { notice in received.withLock { $0.append(notice) } }
            func rollBack(_ notice: StoreNotice) {
                #expect(throws: StoreError.self) {
                    try store.writeNow { session in
                        try session.notifyNodes(notice)
                        throw StoreError(.conflict, "rolled back on purpose")
                    }
                }
            }
            switch backend.kind {
            case .sqlite:
                rollBack(.appChanged(appID: "rolled-back"))
                try store.writeNow { try $0.notifyNodes(.pushesQueued) }
                #expect(received.withLock { $0 }.isEmpty)
            case .postgresql:
                // The listener connects on a thread of its own: notify until it hears.
                #expect(await eventually {
                    try? store.writeNow { try $0.notifyNodes(.pushesQueued) }
                    return received.withLock { $0 }.contains(.pushesQueued)
                })
                rollBack(.appChanged(appID: "rolled-back"))
                try store.writeNow { try $0.notifyNodes(.appChanged(appID: "app_1")) }
                #expect(await eventually { received.withLock { $0 }.contains(.appChanged(appID: "app_1")) })
                #expect(!received.withLock { $0 }.contains(.appChanged(appID: "rolled-back")))
            }
        }
    }
}
