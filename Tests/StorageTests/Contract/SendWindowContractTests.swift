import Foundation
import IsletCore
import Storage
import Testing

/// A send to an activity's copies, by windows: one row for the send, a row of
/// `send_windows` per window in flight, a row of `pushes` only for a copy whose
/// story differs.
@Suite("Store contract: sends by windows")
struct SendWindowContractTests {
    private static let devices = ["d1", "d2", "d3", "d4", "d5"]

    /// An app with an activity `a1` whose five copies hold update tokens (`u1`…).
    private func prepare(_ store: any Store) throws {
        try store.writeNow { session throws in
            try session.insertApp(Fixture.app())
            try session.insertActivity(
                appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
            let targets = Self.devices.map { Fixture.target($0, "s" + $0.dropFirst()) }
            try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: targets, now: Fixture.t0)
            for device in Self.devices {
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: device, token: "u" + device.dropFirst(), environment: .sandbox,
                    now: Fixture.t0)
            }
        }
    }

    /// Queues an update (priority `priority`) to the copies at `seconds`; answers the
    /// send's id and the copies it reaches.
    private func send(
        _ store: any Store, at seconds: Double, priority: APNsPriority = .immediate, event: PushEvent = .update
    ) throws -> (Int64, Int) {
        try store.writeNow { session throws -> (Int64, Int) in
            var content = Fixture.content(event)
            content.priority = priority
            let id = try session.insertSend(appID: "app_1", activityID: "a1", content: content, now: Fixture.at(seconds))
            let reached = try session.queueToCopies(
                sendID: id, appID: "app_1", activityID: "a1", activityType: "Match", kind: .liveActivityUpdate,
                now: Fixture.at(seconds))
            return (id, reached)
        }
    }

    private func claim(_ store: any Store, at seconds: Double, limit: Int, node: String = "node-1") throws -> [ClaimedPush] {
        try store.writeNow(durable: false) { session throws in
            var cache: [Int64: SendContent] = [:]
            return try session.claimDuePushes(
                now: Fixture.at(seconds), limit: limit, lease: PushLease(nodeID: node, until: Fixture.at(seconds + 30)),
                sends: &cache)
        }
    }

    /// A window of `size` pushes, every one answered: `sent` plainly, `exceptions`
    /// with rows of their own.
    private func answered(_ size: Int, sent: Int, exceptions: Int = 0) -> WindowTally {
        var tally = WindowTally(size: size)
        tally.answered = size
        tally.sent = sent
        tally.exceptions = exceptions
        return tally
    }

    private func history(_ store: any Store) throws -> [PushHistoryItem] {
        try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
    }

    private func completions(_ store: any Store) throws -> [JSONValue] {
        try store.readNow { session in
            try session.events(appID: "app_1", after: 0, patterns: [EventPattern("send.completed")!], limit: 100)
        }.map(\.data)
    }

    @Test(arguments: StoreBackend.all)
    func aSendReachesEveryCopyByWindowsWithRowsOnlyForWhatDiffers(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (sendID, reached) = try send(store, at: 1)
            #expect(reached == 5)
            #expect(try store.readNow { try $0.queueDepth() } == 5)
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(1))
            // Nothing per device was written.
            #expect(try history(store).allSatisfy { $0.id == 0 && $0.status == .queued })

            let first = try claim(store, at: 2, limit: 2)
            #expect(first.map(\.deviceID) == ["d1", "d2"])
            #expect(first.map(\.token) == ["u1", "u2"])
            #expect(first.map(\.apnsID) == first.map { APNsMessageID.derived(sendID: sendID, deviceID: $0.deviceID) })
            #expect(first.allSatisfy { $0.id == 0 && $0.window == SendWindow(sendID: sendID, through: "d2") })
            #expect(first.first?.content == Fixture.content(.update))
            #expect(first.first?.activityType == "Match")
            let second = try claim(store, at: 2, limit: 10)
            #expect(second.map(\.deviceID) == ["d3", "d4", "d5"])
            #expect(second.allSatisfy { $0.window == SendWindow(sendID: sendID, through: "d5") })
            #expect(try claim(store, at: 2, limit: 10).isEmpty)
            #expect(try store.readNow { try $0.nextDueTime() } == nil)

            // The first window settles in one write: its copies show as sent.
            var tally = answered(2, sent: 2)
            #expect(try store.writeNow { try $0.settleWindow(first[0].window!, tally, by: "node-1", now: Fixture.at(3)) })
            #expect(try history(store).map(\.status) == [.sent, .sent, .queued, .queued, .queued])
            #expect(try store.readNow { try $0.queueDepth() } == 3)
            // Settled once only.
            #expect(try !store.writeNow { try $0.settleWindow(first[0].window!, tally, by: "node-1", now: Fixture.at(3)) })

            // In the second, d4 fails: a row of its own; the rest settle plainly.
            let failing = second[1]
            #expect(try store.writeNow {
                try $0.recordWindowOutcome(
                    failing, PushOutcome(status: .failed, attempts: 1, apnsStatus: 400, reason: "BadDeviceToken"),
                    by: "node-1", now: Fixture.at(4))
            })
            // Another node's answer for a window it does not hold records nothing.
            #expect(try !store.writeNow {
                try $0.recordWindowOutcome(
                    second[0], PushOutcome(status: .failed, attempts: 1, apnsStatus: 400), by: "node-2", now: Fixture.at(4))
            })
            tally = answered(3, sent: 2, exceptions: 1)
            #expect(try completions(store).isEmpty)
            #expect(try store.writeNow { try $0.settleWindow(second[0].window!, tally, by: "node-1", now: Fixture.at(5)) })
            let items = try history(store)
            #expect(items.map(\.deviceID) == Self.devices)
            #expect(items.map(\.status) == [.sent, .sent, .sent, .failed, .sent])
            #expect(items[3].reason == "BadDeviceToken")
            #expect(items[3].id != 0)
            #expect(items.filter { $0.id == 0 }.count == 4)
            #expect(items[0].apnsStatus == 200)
            // A push with no row was sent when its send last moved on.
            #expect(items[0].sentAt == Fixture.at(5))
            #expect(Set(items.map(\.apnsID)).count == 5)
            #expect(try store.readNow { try $0.queueDepth() } == 0)

            let done = try completions(store)
            #expect(done.count == 1)
            #expect(done.first?["send_id"] == .integer(sendID))
            #expect(done.first?["status"] == "completed")
            #expect(done.first?["targets"] == 5)
            #expect(done.first?["sent"] == 4)
            #expect(done.first?["failed"] == 1)
            #expect(done.first?["dropped"] == 0)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aWindowLeftInFlightIsClaimedAgainWithTheSameIDsLessTheCopiesThatHaveRows(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (sendID, _) = try send(store, at: 1)
            let claimed = try claim(store, at: 2, limit: 3)
            // d2 waits for a retry, by a row of its own.
            #expect(try store.writeNow {
                try $0.recordWindowOutcome(
                    claimed[1], PushOutcome(status: .queued, attempts: 1, apnsStatus: 429, nextAttemptAt: Fixture.at(100)),
                    by: "node-1", now: Fixture.at(3))
            })
            // The node dies: its lease runs out, and another node takes the window.
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(10)) } == 0)
            #expect(try store.writeNow { try $0.requeueInFlight(.leaseExpired, now: Fixture.at(40)) } == 3)
            let again = try claim(store, at: 41, limit: 10, node: "node-2")
            // The window first (d1, d3), then the rest of the send (d4, d5).
            #expect(again.map(\.deviceID) == ["d1", "d3", "d4", "d5"])
            #expect(again.prefix(2).map(\.apnsID) == [claimed[0].apnsID, claimed[2].apnsID])
            #expect(again.prefix(2).allSatisfy { $0.window == SendWindow(sendID: sendID, through: "d3") })
            // The old holder settles nothing.
            var tally = answered(3, sent: 0)
            #expect(try !store.writeNow { try $0.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(42)) })
            tally = answered(2, sent: 2)
            #expect(try store.writeNow { try $0.settleWindow(again[0].window!, tally, by: "node-2", now: Fixture.at(42)) })
            // Handing back on a stop puts a window back too.
            #expect(try store.writeNow { try $0.requeueInFlight(.heldBy(nodeID: "node-2"), now: Fixture.at(43)) } == 2)
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(1))
            let third = try claim(store, at: 44, limit: 10, node: "node-3")
            #expect(third.map(\.deviceID) == ["d4", "d5"])
            // The retry row comes when due, by itself.
            let retry = try claim(store, at: 100, limit: 10, node: "node-3")
            #expect(retry.map(\.deviceID) == ["d2"])
            #expect(retry.first?.id != 0)
            #expect(retry.first?.window == nil)
            #expect(retry.first?.apnsID == claimed[1].apnsID)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aSupersededSendDropsTheCopiesItHadNotReached(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (sendID, _) = try send(store, at: 1)
            let claimed = try claim(store, at: 2, limit: 2)
            let dropped = try store.writeNow {
                try $0.dropOpenSends(appID: "app_1", activityID: "a1", events: [.update], reason: "Superseded", now: Fixture.at(3))
            }
            #expect(dropped == 3)
            #expect(try claim(store, at: 4, limit: 10).isEmpty)
            #expect(try history(store).map(\.status) == [.queued, .queued, .dropped, .dropped, .dropped])
            #expect(try history(store).last?.reason == "Superseded")
            // Finished once its window in flight settled.
            #expect(try completions(store).isEmpty)
            let tally = answered(2, sent: 2)
            #expect(try store.writeNow { try $0.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(5)) })
            #expect(try history(store).map(\.status) == [.sent, .sent, .dropped, .dropped, .dropped])
            let done = try completions(store)
            #expect(done.first?["send_id"] == .integer(sendID))
            #expect(done.first?["status"] == "superseded")
            #expect(done.first?["sent"] == 2)
            #expect(done.first?["dropped"] == 3)
            #expect(done.first?["reason"] == "Superseded")
            // A send with no window in flight finishes at once.
            _ = try send(store, at: 6)
            #expect(try store.writeNow {
                try $0.dropOpenSends(appID: "app_1", activityID: "a1", events: [.update], reason: "Superseded", now: Fixture.at(7))
            } == 5)
            #expect(try completions(store).count == 2)
        }
    }

    @Test(arguments: StoreBackend.all)
    func anEndReachesTheCopiesItEndedAndAnUpdateSkipsCopiesEndedSince(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            // d5 ends its copy after the update was queued: it gets a dropped row.
            let (_, reached) = try send(store, at: 1)
            #expect(reached == 5)
            _ = try store.writeNow {
                try $0.endCopy(appID: "app_1", activityID: "a1", deviceID: "d5", cause: .device, at: Fixture.at(2))
            }
            let update = try claim(store, at: 3, limit: 10)
            #expect(update.map(\.deviceID) == ["d1", "d2", "d3", "d4"])
            #expect(try history(store).last?.status == .dropped)
            #expect(try history(store).last?.reason == "ActivityEnded")
            // The end, queued before the copies end in its transaction, reaches the
            // four; d5 ended before it was made.
            let (_, ending) = try send(store, at: 10, event: .end)
            try store.writeNow {
                try $0.endActivity(appID: "app_1", activityID: "a1", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(10))
            }
            #expect(ending == 4)
            // It goes once the update's window was answered.
            #expect(try claim(store, at: 11, limit: 10).isEmpty)
            #expect(try store.writeNow { try $0.settleWindow(update[0].window!, answered(4, sent: 4), by: "node-1", now: Fixture.at(11)) })
            let end = try claim(store, at: 11, limit: 10)
            #expect(end.map(\.deviceID) == ["d1", "d2", "d3", "d4"])
            #expect(end.allSatisfy { $0.content.event == .end })
        }
    }

    @Test(arguments: StoreBackend.all)
    func aTapOnAWindowsPushIsFoundByItsDerivedIDAndGivesItARow(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (sendID, _) = try send(store, at: 1)
            let claimed = try claim(store, at: 2, limit: 10)
            // Not yet reached: no push to count on.
            let early = APNsMessageID.derived(sendID: sendID, deviceID: "d1")
            #expect(try store.writeNow {
                try $0.recordTap(appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: early, at: Fixture.at(3), sentBy: Fixture.at(3))
            } == nil)
            let tally = answered(5, sent: 5)
            _ = try store.writeNow { try $0.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(4)) }
            let tap = try store.writeNow {
                try $0.recordTap(appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: early, at: Fixture.at(5), sentBy: Fixture.at(5))
            }
            #expect(tap?.apnsID == early)
            #expect(tap?.counted == true)
            #expect(tap?.pushArrivedFrom == Fixture.at(4))
            // Another device's id names no push of this one.
            #expect(try store.writeNow {
                try $0.recordTap(
                    appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: APNsMessageID.derived(sendID: sendID, deviceID: "d2"),
                    at: Fixture.at(6), sentBy: Fixture.at(6))
            } == nil)
            // Without an id: the newest send that reached the copy.
            let unnamed = try store.writeNow {
                try $0.recordTap(appID: "app_1", activityID: "a1", deviceID: "d3", apnsID: nil, at: Fixture.at(7), sentBy: Fixture.at(7))
            }
            #expect(unnamed?.apnsID == APNsMessageID.derived(sendID: sendID, deviceID: "d3"))
            let items = try history(store)
            #expect(items.map(\.taps) == [1, 0, 1, 0, 0])
            #expect(items.map(\.status) == [.sent, .sent, .sent, .sent, .sent])
            #expect(items.filter { $0.id != 0 }.map(\.deviceID) == ["d1", "d3"])
            // The same tap again counts once.
            #expect(try store.writeNow {
                try $0.recordTap(appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: early, at: Fixture.at(5), sentBy: Fixture.at(8))
            }?.counted == false)
        }
    }

    @Test(arguments: StoreBackend.all)
    func budgetsCountTheWindowsThatReachedACopy(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            func usage() throws -> [String: Int] {
                try store.readNow {
                    try $0.priority10Usage(appID: "app_1", activityID: "a1", since: Fixture.t0, afterDeviceID: nil, throughDeviceID: nil)
                }.mapValues(\.used)
            }
            // Queued, it counts for every copy (as a row's queued push does).
            _ = try send(store, at: 1)
            #expect(try usage() == ["d1": 1, "d2": 1, "d3": 1, "d4": 1, "d5": 1])
            // Superseded after its first window: only the copies it reached.
            let first = try claim(store, at: 2, limit: 2)
            #expect(first.map(\.deviceID) == ["d1", "d2"])
            _ = try store.writeNow {
                try $0.dropOpenSends(appID: "app_1", activityID: "a1", events: [.update], reason: "Superseded", now: Fixture.at(3))
            }
            #expect(try usage() == ["d1": 1, "d2": 1, "d3": 0, "d4": 0, "d5": 0])
            #expect(try store.writeNow { try $0.settleWindow(first[0].window!, answered(2, sent: 2), by: "node-1", now: Fixture.at(3)) })
            // Priority 5 counts for nobody; a copy with a failed row does not count it.
            _ = try send(store, at: 4, priority: .powerConsidered)
            let (third, _) = try send(store, at: 5)
            let quiet = try claim(store, at: 6, limit: 100)
            #expect(quiet.count == 5 && quiet.allSatisfy { $0.content.priority == .powerConsidered })
            #expect(try store.writeNow { try $0.settleWindow(quiet[0].window!, answered(5, sent: 5), by: "node-1", now: Fixture.at(6)) })
            let claimed = try claim(store, at: 6, limit: 100)
            #expect(claimed.count == 5 && claimed.allSatisfy { $0.window?.sendID == third })
            try store.writeNow {
                _ = try $0.recordWindowOutcome(
                    claimed[0], PushOutcome(status: .failed, attempts: 1, apnsStatus: 400), by: "node-1", now: Fixture.at(7))
            }
            #expect(try usage() == ["d1": 1, "d2": 2, "d3": 1, "d4": 1, "d5": 1])
        }
    }

    @Test(arguments: StoreBackend.all)
    func aSendByWindowsStaysUntilItFinishedAndGoesAfterTheRetention(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            _ = try send(store, at: 1)
            let claimed = try claim(store, at: 2, limit: 3)
            #expect(try store.writeNow {
                try $0.recordWindowOutcome(
                    claimed[0], PushOutcome(status: .failed, attempts: 1, apnsStatus: 400), by: "node-1", now: Fixture.at(3))
            })
            func purge(before seconds: Double) throws -> PurgedHistory {
                try store.writeNow { try $0.purgeSettledSends(appID: "app_1", before: Fixture.at(seconds), limit: 100) }
            }
            // Open, it stays however old: its copies are told by it.
            #expect(try purge(before: 10_000).sends == 0)
            #expect(try history(store).count == 5)
            #expect(try store.readNow { try $0.historySummary(appID: "app_1") }.sends == 1)
            var tally = answered(3, sent: 2, exceptions: 1)
            try store.writeNow { _ = try $0.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(4)) }
            let rest = try claim(store, at: 5, limit: 10)
            tally = answered(2, sent: 2)
            try store.writeNow { _ = try $0.settleWindow(rest[0].window!, tally, by: "node-1", now: Fixture.at(6)) }
            // Four told by the send, one with a row.
            #expect(try store.readNow { try $0.historySummary(appID: "app_1") }.pushes == 5)
            // Finished after the cutoff: it stays.
            #expect(try purge(before: 6).sends == 0)
            let purged = try purge(before: 7)
            #expect(purged.sends == 1 && purged.pushes == 1)
            #expect(try history(store).isEmpty)
            #expect(try store.readNow { try $0.historySummary(appID: "app_1") }.sends == 0)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aSendThatReachesNoCopyIsOverAtOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertActivity(
                    appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
                // A copy still waiting for its update token takes no update.
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1")], now: Fixture.t0)
            }
            let (_, reached) = try send(store, at: 1)
            #expect(reached == 0)
            #expect(try store.readNow { try $0.queueDepth() } == 0)
            #expect(try store.readNow { try $0.nextDueTime() } == nil)
            #expect(try claim(store, at: 2, limit: 10).isEmpty)
            #expect(try history(store).isEmpty)
            // Finished, it is history like any other send: no event says so.
            #expect(try completions(store).isEmpty)
            #expect(try store.writeNow { try $0.purgeSettledSends(appID: "app_1", before: Fixture.at(2), limit: 10) }.sends == 1)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aLaterSendToTheCopiesWaitsUntilTheEarlierOneIsOver(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (update, _) = try send(store, at: 1)
            let first = try claim(store, at: 2, limit: 2)
            #expect(first.map(\.deviceID) == ["d1", "d2"])
            // The end is queued while the update's first window is in flight: the
            // update's other copies go first, and the end none of its own.
            let (end, _) = try send(store, at: 3, event: .end)
            let second = try claim(store, at: 4, limit: 10)
            #expect(second.map(\.deviceID) == ["d3", "d4", "d5"])
            #expect(second.allSatisfy { $0.window?.sendID == update })
            #expect(try claim(store, at: 4, limit: 10).isEmpty)
            // Nothing is due while the end waits: a worker has nothing to look for.
            #expect(try store.readNow { try $0.nextDueTime() } == nil)
            #expect(try store.writeNow { try $0.settleWindow(first[0].window!, answered(2, sent: 2), by: "node-1", now: Fixture.at(5)) })
            #expect(try claim(store, at: 5, limit: 10).isEmpty)
            // Once the update is over, the end goes, to every copy.
            #expect(try store.writeNow { try $0.settleWindow(second[0].window!, answered(3, sent: 3), by: "node-1", now: Fixture.at(6)) })
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(3))
            let ending = try claim(store, at: 6, limit: 10)
            #expect(ending.map(\.deviceID) == Self.devices)
            #expect(ending.allSatisfy { $0.window?.sendID == end })
        }
    }

    @Test(arguments: StoreBackend.all)
    func aStoppedSendHoldsTheNextOnlyUntilItsWindowsInFlightAreAnswered(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let (first, _) = try send(store, at: 1)
            let claimed = try claim(store, at: 2, limit: 2)
            // A newer update supersedes the first: the first's window in flight
            // finishes before the newer one's first window goes.
            try store.writeNow { session throws in
                _ = try session.dropOpenSends(
                    appID: "app_1", activityID: "a1", events: [.update], reason: "Superseded", now: Fixture.at(3))
            }
            let (newer, _) = try send(store, at: 3)
            #expect(try claim(store, at: 4, limit: 10).isEmpty)
            #expect(try store.writeNow { try $0.settleWindow(claimed[0].window!, answered(2, sent: 2), by: "node-1", now: Fixture.at(5)) })
            #expect(try completions(store).first?["send_id"] == .integer(first))
            let next = try claim(store, at: 5, limit: 10)
            #expect(next.count == 5 && next.allSatisfy { $0.window?.sendID == newer })
        }
    }
}
