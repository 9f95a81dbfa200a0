import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: the push queue")
struct PushQueueContractTests {
    private let targets = [Fixture.target("d1", "u1"), Fixture.target("d2", "u2"), Fixture.target("d3", "u3", .production)]

    @Test(arguments: StoreBackend.all)
    func claimsTakeDuePushesOldestFirstUpToTheLimit(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            let (first, second) = try store.writeNow { session throws -> (Int64, Int64) in
                try session.insertApp(Fixture.app())
                let first = try session.insertSend(appID: "app_1", activityID: "a1", content: Fixture.content(), now: Fixture.t0)
                #expect(try session.enqueuePushes(
                    sendID: first, appID: "app_1", activityID: "a1", activityType: nil, event: .update,
                    tokenKind: .liveActivityUpdate, targets: targets, now: Fixture.t0, mintID: minter.mint) == 3)
                // Queued later: due later.
                let second = try session.queue(
                    .start, activityID: "a2", targets: [Fixture.target("d1", "s1")], kind: .pushToStart, activityType: "Match",
                    minter: minter, at: Fixture.at(10))
                return (first, second)
            }
            #expect(second > first)
            #expect(try store.readNow { try $0.queueDepth() } == 4)
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.t0)

            var sends: [Int64: SendContent] = [:]
            let batch = try store.writeNow(durable: false) { session throws in
                var cache: [Int64: SendContent] = [:]
                let claimed = try session.claimDuePushes(now: Fixture.at(5), limit: 2, lease: Fixture.lease, sends: &cache)
                return (claimed, cache)
            }
            sends = batch.1
            #expect(batch.0.map(\.apnsID) == ["id-1", "id-2"])
            #expect(batch.0.map(\.deviceID) == ["d1", "d2"])
            #expect(batch.0.map(\.token) == ["u1", "u2"])
            #expect(batch.0[0].id < batch.0[1].id)
            let claimed = batch.0[0]
            #expect(claimed.appID == "app_1")
            #expect(claimed.activityID == "a1")
            #expect(claimed.activityType == nil)
            #expect(claimed.tokenKind == .liveActivityUpdate)
            #expect(claimed.environment == .sandbox)
            #expect(!claimed.environmentSwitched)
            #expect(claimed.attempts == 0)
            #expect(claimed.rounds == 0)
            #expect(claimed.createdAt == Fixture.t0)
            #expect(claimed.content == Fixture.content())
            #expect(sends[first] == Fixture.content())

            // In flight: still in the queue's depth, shown as queued, never claimed twice.
            #expect(try store.readNow { try $0.queueDepth() } == 4)
            #expect(try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0).map(\.status) }
                == [.queued, .queued, .queued])
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.t0)
            let rest = try store.writeNow(durable: false) { session throws in
                var cache = sends
                return try session.claimDuePushes(now: Fixture.at(5), limit: 10, lease: Fixture.lease, sends: &cache)
            }
            #expect(rest.map(\.apnsID) == ["id-3"])
            #expect(rest.first?.environment == .production)
            // The start is not due yet.
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(10))
            let start = try store.writeNow(durable: false) { session throws in
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(10), limit: 10, lease: Fixture.lease, sends: &cache)
            }
            #expect(start.map(\.apnsID) == ["id-4"])
            #expect(start.first?.activityType == "Match")
            #expect(start.first?.tokenKind == .pushToStart)
            #expect(start.first?.content == Fixture.content(.start))
            #expect(try store.readNow { try $0.nextDueTime() } == nil)
            #expect(try store.writeNow { session throws in
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(100), limit: 10, lease: Fixture.lease, sends: &cache).count
            } == 0)
        }
    }

    @Test(arguments: StoreBackend.all)
    func outcomesRecordSentRetriedFailedAndSwitchedPushes(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
            }
            func claim(at seconds: Double) throws -> [ClaimedPush] {
                try store.writeNow(durable: false) { session throws in
                    var cache: [Int64: SendContent] = [:]
                    return try session.claimDuePushes(now: Fixture.at(seconds), limit: 10, lease: Fixture.lease, sends: &cache)
                }
            }
            func history() throws -> [PushHistoryItem] {
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
            }
            let pushes = try claim(at: 1)
            #expect(pushes.count == 3)
            try store.writeNow(durable: false) { session throws in
                try session.recordOutcome(
                    pushID: pushes[0].id, PushOutcome(status: .sent, attempts: 1, apnsStatus: 200, serviceMessageID: "unique-1"),
                    by: "node-1", now: Fixture.at(2))
                try session.recordOutcome(
                    pushID: pushes[1].id,
                    PushOutcome(status: .queued, attempts: 2, apnsStatus: 503, reason: "ServiceUnavailable", nextAttemptAt: Fixture.at(30)),
                    by: "node-1", now: Fixture.at(2))
                try session.recordOutcome(
                    pushID: pushes[2].id,
                    PushOutcome(status: .queued, attempts: 1, apnsStatus: 400, reason: "BadDeviceToken", nextAttemptAt: Fixture.at(2), environment: .sandbox),
                    by: "node-1", now: Fixture.at(2))
            }
            var items = try history()
            #expect(items[0].status == .sent)
            #expect(items[0].attempts == 1)
            #expect(items[0].apnsStatus == 200)
            #expect(items[0].serviceMessageID == "unique-1")
            #expect(items[0].reason == nil)
            #expect(items[0].sentAt == Fixture.at(2))
            #expect(items[0].updatedAt == Fixture.at(2))
            #expect(items[0].apnsID == "id-1")
            #expect(items[0].tokenKind == .liveActivityUpdate)
            #expect(items[0].event == .update)
            #expect(items[1].status == .queued)
            #expect(items[1].reason == "ServiceUnavailable")
            #expect(items[1].apnsStatus == 503)
            #expect(items[1].sentAt == nil)
            #expect(!items[1].environmentSwitched)
            #expect(items[2].environment == .sandbox)
            #expect(items[2].environmentSwitched)
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(2))

            // The switched push goes again at once, to the other environment; the retry waits.
            var again = try claim(at: 5)
            #expect(again.map(\.apnsID) == ["id-3"])
            #expect(again[0].environment == .sandbox)
            #expect(again[0].environmentSwitched)
            #expect(again[0].attempts == 1)
            #expect(again[0].rounds == 1)
            // Another environment given that is the one it has: still switched once.
            let recorded = try store.writeNow(durable: false) { session throws in
                try session.recordOutcome(
                    pushID: again[0].id,
                    PushOutcome(status: .failed, attempts: 1, apnsStatus: 410, reason: "Unregistered", environment: .sandbox),
                    by: "node-1", now: Fixture.at(6))
            }
            #expect(recorded)
            items = try history()
            #expect(items[2].status == .failed)
            #expect(items[2].attempts == 2)
            #expect(items[2].reason == "Unregistered")
            #expect(items[2].environmentSwitched)
            #expect(items[2].sentAt == nil)

            #expect(try claim(at: 29).isEmpty)
            again = try claim(at: 30)
            #expect(again.map(\.apnsID) == ["id-2"])
            #expect(again[0].attempts == 2)
            #expect(again[0].rounds == 1)
            // Sent after a retry, by the general statement: what the outcome lacks is kept.
            let recordedAgain = try store.writeNow(durable: false) { session throws in
                try session.recordOutcome(
                    pushID: again[0].id, PushOutcome(status: .sent, attempts: 1, nextAttemptAt: Fixture.at(31)), by: "node-1",
                    now: Fixture.at(31))
            }
            #expect(recordedAgain)
            items = try history()
            #expect(items[1].status == .sent)
            #expect(items[1].attempts == 3)
            #expect(items[1].apnsStatus == 503)
            #expect(items[1].reason == nil)
            #expect(items[1].sentAt == Fixture.at(31))
            #expect(try store.readNow { try $0.queueDepth() } == 0)
        }
    }

    /// A push the transport never handed to the network (its host paused) goes back
    /// to the queue without using a round; an attempt that reached the service uses one.
    @Test(arguments: StoreBackend.all)
    func onlyAttemptsThatReachedTheServiceUseARound(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: Array(targets.prefix(1)), minter: minter)
            }
            func claim(at seconds: Double) throws -> ClaimedPush? {
                try store.writeNow(durable: false) { session throws in
                    var cache: [Int64: SendContent] = [:]
                    return try session.claimDuePushes(now: Fixture.at(seconds), limit: 10, lease: Fixture.lease, sends: &cache).first
                }
            }
            func requeue(_ push: ClaimedPush, attempts: Int, at seconds: Double) throws {
                let recorded = try store.writeNow(durable: false) { session throws in
                    try session.recordOutcome(
                        pushID: push.id,
                        PushOutcome(status: .queued, attempts: attempts, reason: "r", nextAttemptAt: Fixture.at(seconds)),
                        by: "node-1", now: Fixture.at(seconds))
                }
                #expect(recorded)
            }
            let first = try #require(try claim(at: 1))
            #expect(first.rounds == 0)
            try requeue(first, attempts: 0, at: 2)
            let second = try #require(try claim(at: 2))
            #expect(second.rounds == 0)
            #expect(second.attempts == 0)
            try requeue(second, attempts: 1, at: 3)
            let third = try #require(try claim(at: 3))
            #expect(third.rounds == 1)
            #expect(third.attempts == 1)
        }
    }

    /// A tap counts on the push named, or on the newest push sent to the device's
    /// copy by the time given; the same tap sent again (same push, same time) counts
    /// once, however often and in whatever order; the first tap is the earliest
    /// reported.
    @Test(arguments: StoreBackend.all)
    func tapsCountOnThePushNamedOrTheNewestSent(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)  // id-1 … id-3
            }
            func tap(_ device: String, _ apnsID: String?, at seconds: Double, sentBy: Double? = nil) throws -> RecordedTap? {
                try store.writeNow {
                    try $0.recordTap(
                        appID: "app_1", activityID: "a1", deviceID: device, apnsID: apnsID, at: Fixture.at(seconds),
                        sentBy: Fixture.at(sentBy ?? seconds))
                }.map { RecordedTap(apnsID: $0.apnsID, counted: $0.counted) }
            }
            func item(_ apnsID: String) throws -> PushHistoryItem {
                try #require(try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
                    .first { $0.apnsID == apnsID })
            }
            // Nothing was sent yet: a tap without a push named counts on none, once.
            #expect(try tap("d1", nil, at: 5) == RecordedTap(apnsID: nil, counted: true))
            #expect(try tap("d1", nil, at: 5) == RecordedTap(apnsID: nil, counted: false))
            func claim(at seconds: Double) throws -> [ClaimedPush] {
                try store.writeNow(durable: false) { session throws in
                    var cache: [Int64: SendContent] = [:]
                    return try session.claimDuePushes(now: Fixture.at(seconds), limit: 10, lease: Fixture.lease, sends: &cache)
                }
            }
            let first = try claim(at: 1)
            #expect(first.count == 3)
            try store.writeNow(durable: false) { session throws in
                for push in first {
                    try session.recordOutcome(
                        pushID: push.id, PushOutcome(status: .sent, attempts: 1, apnsStatus: 200), by: "node-1", now: Fixture.at(2))
                }
            }
            // A later update to d1 (id-4), in flight.
            _ = try store.writeNow { try $0.queue(.update, activityID: "a1", targets: [targets[0]], minter: minter) }
            let inFlight = try #require(try claim(at: 3).first)
            #expect(inFlight.apnsID == "id-4")
            // d1's newest sent push is id-1 (id-4 is still in flight).
            #expect(try tap("d1", nil, at: 10) == RecordedTap(apnsID: "id-1", counted: true))
            // The same tap again counts once; another one counts, and an earlier one
            // becomes the first.
            #expect(try tap("d1", nil, at: 10) == RecordedTap(apnsID: "id-1", counted: false))
            #expect(try tap("d1", nil, at: 12) == RecordedTap(apnsID: "id-1", counted: true))
            #expect(try tap("d1", nil, at: 8) == RecordedTap(apnsID: "id-1", counted: true))
            // Two taps reported again in turn still count once each.
            for _ in 0..<3 {
                #expect(try tap("d1", nil, at: 10) == RecordedTap(apnsID: "id-1", counted: false))
                #expect(try tap("d1", "id-1", at: 12) == RecordedTap(apnsID: "id-1", counted: false))
            }
            #expect(try item("id-1").taps == 3 && item("id-1").firstTappedAt == Fixture.at(8))
            // A push named counts whatever its status, on its own copy only; it
            // arrived no earlier than it was made (in flight) or sent.
            let named = try store.writeNow {
                try $0.recordTap(
                    appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: "id-4", at: Fixture.at(20), sentBy: Fixture.at(20))
            }
            #expect(named?.apnsID == "id-4" && named?.counted == true && named?.pushArrivedFrom == inFlight.createdAt)
            #expect(try tap("d2", "id-4", at: 20) == nil)
            #expect(try tap("d1", "id-9", at: 20) == nil)
            #expect(try item("id-4").taps == 1 && item("id-4").firstTappedAt == Fixture.at(20))
            #expect(try item("id-2").taps == 0 && item("id-2").firstTappedAt == nil)
            _ = try store.writeNow(durable: false) { session throws in
                try session.recordOutcome(
                    pushID: inFlight.id,
                    PushOutcome(status: .sent, attempts: 1, apnsStatus: 200), by: "node-1", now: Fixture.at(21))
            }
            // Now sent, id-4 is d1's newest; a tap dated before it was sent (a retry
            // of an earlier tap) still counts on id-1, where it counted first.
            #expect(try tap("d1", nil, at: 30) == RecordedTap(apnsID: "id-4", counted: true))
            #expect(try tap("d1", nil, at: 12) == RecordedTap(apnsID: "id-1", counted: false))
            #expect(try tap("d1", nil, at: 15, sentBy: 21) == RecordedTap(apnsID: "id-4", counted: true))
            #expect(try item("id-4").taps == 3 && item("id-1").taps == 3)
            let sent = try store.writeNow {
                try $0.recordTap(
                    appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: "id-4", at: Fixture.at(40), sentBy: Fixture.at(40))
            }
            #expect(sent?.pushArrivedFrom == Fixture.at(21))
        }
    }

    @Test(arguments: StoreBackend.all)
    func aSwitchToTheOtherEnvironmentIsRecorded(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: [Fixture.target("d1", "u1")], minter: minter)
                var cache: [Int64: SendContent] = [:]
                let push = try #require(try session.claimDuePushes(now: Fixture.at(1), limit: 1, lease: Fixture.lease, sends: &cache).first)
                try session.recordOutcome(
                    pushID: push.id,
                    PushOutcome(status: .queued, attempts: 1, apnsStatus: 400, reason: "BadDeviceToken", nextAttemptAt: Fixture.at(1), environment: .production),
                    by: "node-1", now: Fixture.at(1))
                let item = try #require(try session.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0).first)
                #expect(item.environment == .production)
                #expect(item.environmentSwitched)
                let again = try #require(try session.claimDuePushes(now: Fixture.at(1), limit: 1, lease: Fixture.lease, sends: &cache).first)
                #expect(again.environment == .production)
                #expect(again.environmentSwitched)
                #expect(again.apnsID == push.apnsID)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func pushesLeftInFlightGoBackToTheQueue(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            let claimed = try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(1), limit: 2, lease: Fixture.lease, sends: &cache)
            }
            #expect(claimed.count == 2)
            #expect(try store.writeNow { try $0.requeueInFlight(.requeueAll, now: Fixture.at(9)) } == 2)
            #expect(try store.writeNow { try $0.requeueInFlight(.requeueAll, now: Fixture.at(9)) } == 0)
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.t0)
            let again = try store.writeNow { session throws in
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(9), limit: 10, lease: Fixture.lease, sends: &cache)
            }
            #expect(again.map(\.apnsID) == ["id-1", "id-2", "id-3"])
            #expect(Set(again.map(\.id)).isSuperset(of: claimed.map(\.id)))
        }
    }

    @Test(arguments: StoreBackend.all)
    func queuedUpdatesAreSupersededAndEventsDropped(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.start, activityID: "a1", targets: [Fixture.target("d1", "s1")], kind: .pushToStart, minter: minter)
                try session.queue(.update, activityID: "a1", targets: targets, minter: minter)
                try session.queue(.end, activityID: "a1", targets: targets, minter: minter)
                try session.queue(.update, activityID: "a2", targets: targets, minter: minter)
                #expect(try session.supersedeQueuedUpdates(appID: "app_1", activityID: "a1", now: Fixture.at(1)).count == 3)
                #expect(try session.supersedeQueuedUpdates(appID: "app_1", activityID: "a1", now: Fixture.at(1)).count == 0)
                #expect(try session.dropQueuedPushes(appID: "app_1", activityID: "a1", events: [.start, .update], reason: "ActivityEnded", now: Fixture.at(2)).count == 1)
                #expect(try session.dropQueuedPushes(appID: "app_1", activityID: "a1", events: [], reason: "Nothing", now: Fixture.at(2)).count == 0)
                let items = try session.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0)
                #expect(items.map(\.event) == [.start, .update, .update, .update, .end, .end, .end])
                #expect(items.map(\.status) == [.dropped, .dropped, .dropped, .dropped, .queued, .queued, .queued])
                #expect(items.map(\.reason) == ["ActivityEnded", "Superseded", "Superseded", "Superseded", nil, nil, nil])
                #expect(items[0].updatedAt == Fixture.at(2))
                #expect(try session.pushes(appID: "app_1", activityID: "a2", since: Fixture.t0).map(\.status) == [.queued, .queued, .queued])
                #expect(try session.pushes(appID: "app_1", activityID: "a2", since: Fixture.at(1)).isEmpty)
                #expect(try session.queueDepth() == 6)
                #expect(try session.dropQueuedPushes(appID: "app_1", activityID: "a1", events: [.end], reason: "Gone", now: Fixture.at(3)).count == 3)
                #expect(try session.queueDepth() == 3)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func anAlertWithoutAnActivityIsQueuedToo(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            let claimed = try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.queue(.alert, activityID: nil, targets: [Fixture.target("d1", "t1")], kind: .device, minter: minter)
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.t0, limit: 10, lease: Fixture.lease, sends: &cache)
            }
            #expect(claimed.count == 1)
            #expect(claimed.first?.activityID == nil)
            #expect(claimed.first?.tokenKind == .device)
            #expect(claimed.first?.content.event == .alert)
        }
    }

    @Test(arguments: StoreBackend.all)
    func budgetsCountACopysPriorityTenUpdatesAndADevicesStarts(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let minter = IDMinter()
            func send(_ priority: APNsPriority, at seconds: Double, _ targets: [PushTarget]) throws {
                try store.writeNow { session throws in
                    var content = Fixture.content(.update)
                    content.priority = priority
                    let send = try session.insertSend(appID: "app_1", activityID: "a1", content: content, now: Fixture.at(seconds))
                    try session.enqueuePushes(
                        sendID: send, appID: "app_1", activityID: "a1", activityType: nil, event: .update,
                        tokenKind: .liveActivityUpdate, targets: targets, now: Fixture.at(seconds), mintID: minter.mint)
                }
            }
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                var frequent = Fixture.registration()
                frequent.frequentUpdates = .some(true)
                _ = try session.insertDevice(appID: "app_1", deviceID: "d1", frequent, secretHash: nil, now: Fixture.t0)
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: targets, now: Fixture.t0)
            }
            var downgraded = targets[0]
            downgraded.priorityDowngraded = true
            try send(.immediate, at: 0, targets)  // counts for d1, d2; d3's fails below
            try send(.immediate, at: 10, [downgraded, targets[1]])  // counts for d2 only
            try send(.powerConsidered, at: 20, [targets[0], targets[1]])  // counts for nobody
            try store.writeNow(durable: false) { session throws in
                var cache: [Int64: SendContent] = [:]
                let claimed = try session.claimDuePushes(now: Fixture.at(30), limit: 10, lease: Fixture.lease, sends: &cache)
                #expect(claimed.count == 7)
                // A downgraded push goes at priority 5.
                #expect(claimed.filter(\.priorityDowngraded).map(\.content.priority) == [.powerConsidered])
                #expect(claimed.filter { !$0.priorityDowngraded }.map(\.content.priority.rawValue) == [10, 10, 10, 10, 5, 5])
                for push in claimed {
                    let failed = push.deviceID == "d3"
                    try session.recordOutcome(
                        pushID: push.id, PushOutcome(status: failed ? .failed : .sent, attempts: 1, apnsStatus: failed ? 400 : 200),
                        by: "node-1", now: Fixture.at(31))
                }
            }
            let usage = try store.readNow {
                try $0.priority10Usage(appID: "app_1", activityID: "a1", since: Fixture.at(-1), afterDeviceID: nil, throughDeviceID: nil)
            }
            #expect(usage == [
                "d1": BudgetUsage(used: 1, frequentUpdates: true), "d2": BudgetUsage(used: 2, frequentUpdates: nil),
                "d3": BudgetUsage(used: 0, frequentUpdates: nil),
            ])
            // The window excludes its start; a page of copies is bounded on both sides.
            #expect(try store.readNow {
                try $0.priority10Usage(appID: "app_1", activityID: "a1", since: Fixture.t0, afterDeviceID: "d1", throughDeviceID: "d2")
            } == ["d2": BudgetUsage(used: 1, frequentUpdates: nil)])
            #expect(try store.readNow { try $0.priority10Sends(appID: "app_1", activityID: "a1", since: Fixture.at(-1)) } == 2)
            #expect(try store.readNow { try $0.priority10Sends(appID: "app_1", activityID: "a1", since: Fixture.t0) } == 1)
            #expect(try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
                .map(\.priorityDowngraded) == [false, false, false, true, false, false, false])

            // Starts: when each goes, a deferred one at the time it was held to, and
            // not before then.
            var held = Fixture.target("d1", "s1")
            held.deferredUntil = Fixture.at(3600)
            try store.writeNow { session throws in
                try session.queue(.start, activityID: "s1", targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2")], kind: .pushToStart, minter: minter, at: Fixture.at(40))
                try session.queue(.start, activityID: "s2", targets: [held], kind: .pushToStart, minter: minter, at: Fixture.at(50))
            }
            let times = try store.readNow { try $0.startTimes(appID: "app_1", deviceIDs: ["d1", "d2", "d3"], since: Fixture.t0) }
            #expect(times.mapValues { $0.sorted() } == ["d1": [Fixture.at(40), Fixture.at(3600)], "d2": [Fixture.at(40)]])
            #expect(try store.readNow { try $0.startTimes(appID: "app_1", deviceIDs: ["d1"], since: Fixture.at(40)) } == ["d1": [Fixture.at(3600)]])
            let early = try store.writeNow(durable: false) { session throws -> [ClaimedPush] in
                var cache: [Int64: SendContent] = [:]
                return try session.claimDuePushes(now: Fixture.at(3599), limit: 10, lease: Fixture.lease, sends: &cache)
            }
            #expect(early.map(\.activityID) == ["s1", "s1"])
            #expect(try store.readNow { try $0.nextDueTime() } == Fixture.at(3600))
            let history = try store.readNow { try $0.pushes(appID: "app_1", activityID: "s2", since: Fixture.t0) }
            #expect(history.map(\.deferredUntil) == [Fixture.at(3600)])
        }
    }
}
