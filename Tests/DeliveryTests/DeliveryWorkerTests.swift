import APNs
import Delivery
import Foundation
import IsletCore
import IsletLog
import IsletSync
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Storage
import Testing

/// Runs `body` with a fresh `makeStore` store in a temporary folder, opened and
/// closed off the concurrency pool (`withOpenedStore`).
func withDeliveryStore<T>(_ body: (any Store) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { folder in try await withOpenedStore({ try makeStore(in: folder) }, body) }
}

/// The store these tests run on: SQLite in `folder`, or a fresh PostgreSQL schema
/// when the suites run on PostgreSQL (dropped when the store closes).
func makeStore(in folder: URL) throws -> any Store {
    guard TestPostgres.suitesUsePostgreSQL else {
        return try SQLiteStore(path: folder.appendingPathComponent("islet.sqlite").path)
    }
    let (url, drop) = try TestPostgres.makeSchema()
    return DroppingStore(try PostgreSQLStore(url: url, poolSize: 2, applicationName: "islet-delivery-tests"), drop: drop)
}

/// A transport that answers every push at once, from another thread, with what
/// `answer` says, and keeps what it was given.
final class FakeTransport: PushTransport {
    let sent = Lock<[ClaimedPush]>([])
    let answer: @Sendable (ClaimedPush) -> TransportResult

    init(answer: @escaping @Sendable (ClaimedPush) -> TransportResult) {
        self.answer = answer
    }

    func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void) {
        sent.withLock { $0.append(push) }
        let result = answer(push)
        Thread { completion(result) }.start()
    }
}

/// A transport that never answers: it keeps each push's completion.
final class SilentTransport: PushTransport {
    let held = Lock<[@Sendable (TransportResult) -> Void]>([])

    func send(_ push: ClaimedPush, completion: @escaping @Sendable (TransportResult) -> Void) {
        held.withLock { $0.append(completion) }
    }
}

/// A stop that no longer ends the worker fails its test at the time limit instead of
/// hanging the suite.
@Suite("Delivery worker", .timeLimit(.minutes(1)))
struct DeliveryWorkerTests {
    let now = Date(timeIntervalSince1970: 1_800_000_000)
    /// The worker's limits (the server passes its `--shutdown-grace-seconds`).
    let configuration = DeliveryConfiguration(shutdownGrace: 10)

    /// Adds an app and its activity `act-1` (started: a retry of its update is kept,
    /// where one for an activity that ended or does not exist is dropped), and queues
    /// one update per token.
    func queue(_ tokens: [String], in store: any Store) throws {
        let now = self.now
        try store.writeNow { session in
            try session.insertApp(AppRecord(
                id: "app_1", name: "Example", bundleID: "com.example.app", credentials: nil,
                serverKeyHash: Data(repeating: 1, count: 32), deviceKeyHash: Data(repeating: 2, count: 32),
                createdAt: now, updatedAt: now))
            try session.insertActivity(
                appID: "app_1", activityID: "act-1", activityType: "Delivery", origin: .remote, attributes: nil,
                contentState: .object(["eta": .integer(5)]), lastTimestamp: 1, endAt: nil, replacing: false, now: now)
            let content = SendContent(
                event: .update, topic: "com.example.app.push-type.liveactivity", pushType: .liveactivity,
                priority: .immediate, expiration: nil, collapseID: nil, payload: Data("{}".utf8))
            let sendID = try session.insertSend(appID: "app_1", activityID: "act-1", content: content, now: now)
            try session.enqueuePushes(
                sendID: sendID, appID: "app_1", activityID: "act-1", activityType: nil, event: .update,
                tokenKind: .liveActivityUpdate,
                targets: tokens.enumerated().map { PushTarget(deviceID: "device-\($0)", token: $1, environment: .sandbox) },
                now: now, mintID: { UUID().uuidString.lowercased() })
        }
    }

    @Test func claimsSendsAndRecordsThroughATransport() async throws {
        try await withDeliveryStore { store in
            let tokens = (0..<3).map { String(repeating: "0\($0)", count: 32) }
            try queue(tokens, in: store)
            let transport = FakeTransport { push in
                push.token == tokens[2]
                    ? TransportResult(disposition: .rejected, status: 413, reason: "PayloadTooLarge", attempts: 1, latency: 0.01)
                    : TransportResult(disposition: .delivered, status: 200, serviceMessageID: "u-\(push.id)", attempts: 1, latency: 0.01)
            }
            // The loop paces on the manual clock too, which the test never moves:
            // the transport's answers ring the worker awake, no timer does.
            let clock = ManualWallClock(start: now)
            // An open stream asks for an event per push sent.
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: configuration, clock: clock, sleeper: clock,
                logger: Logger(sink: MemoryLogSink()), streamsOpen: { $0 == "app_1" })
            try worker.prepare()
            let running = Task { await worker.run() }
            worker.wake()
            let now = self.now
            let settled = try await eventually {
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "act-1", since: now.addingTimeInterval(-1)) }
                    .allSatisfy { $0.status != .queued }
            }
            running.cancel()
            await running.value
            #expect(settled)
            let pushes = try store.readNow { try $0.pushes(appID: "app_1", activityID: "act-1", since: now.addingTimeInterval(-1)) }
            #expect(pushes.map(\.status) == [.sent, .sent, .failed])
            #expect(pushes[0].serviceMessageID == "u-\(pushes[0].id)")
            #expect(pushes[2].reason == "PayloadTooLarge")
            #expect(pushes[2].apnsStatus == 413)
            #expect(transport.sent.withLock { $0.map(\.token) }.sorted() == tokens.sorted())
            #expect(worker.inFlight == 0)
            let counts = Dictionary(uniqueKeysWithValues: worker.metrics.snapshot().pushes.map { ("\($0.key.result) \($0.key.reason)", $0.value) })
            #expect(counts == ["sent ": 2, "failed PayloadTooLarge": 1])
            // Each answer wrote its event in the transaction that recorded it.
            let events = try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 100) }
            #expect(events.map(\.type).sorted() == ["push.failed", "push.sent", "push.sent"])
            let failed = try #require(events.first { $0.type == "push.failed" })
            #expect(failed.data["reason"] == "PayloadTooLarge" && failed.data["apns_status"] == .integer(413))
            #expect(failed.data["apns_id"] == .string(pushes[2].apnsID) && failed.data["device_id"] == "device-2")
            #expect(failed.activityID == "act-1")
            #expect(events.allSatisfy { !$0.data.jsonText.contains(tokens[0]) && !$0.data.jsonText.contains(tokens[2]) })
        }
    }

    @Test func aSendByWindowsGoesOutWithARowOnlyForWhatDiffers() async throws {
        try await withDeliveryStore { store in
            let tokens = (0..<5).map { String(repeating: "1\($0)", count: 32) }
            let now = self.now
            let sendID = try store.writeNow { session throws -> Int64 in
                try session.insertApp(AppRecord(
                    id: "app_1", name: "Example", bundleID: "com.example.app", credentials: nil,
                    serverKeyHash: Data(repeating: 1, count: 32), deviceKeyHash: Data(repeating: 2, count: 32),
                    createdAt: now, updatedAt: now))
                try session.insertActivity(
                    appID: "app_1", activityID: "act-1", activityType: "Delivery", origin: .remote, attributes: nil,
                    contentState: .object(["eta": .integer(5)]), lastTimestamp: 1, endAt: nil, replacing: false, now: now)
                let targets = tokens.enumerated().map { PushTarget(deviceID: "device-\($0)", token: "s\($0)", environment: .sandbox) }
                try session.insertPendingCopies(appID: "app_1", activityID: "act-1", targets: targets, now: now)
                for (index, token) in tokens.enumerated() {
                    _ = try session.registerUpdateToken(
                        appID: "app_1", activityID: "act-1", deviceID: "device-\(index)", token: token, environment: .sandbox,
                        now: now)
                }
                let content = SendContent(
                    event: .update, topic: "com.example.app.push-type.liveactivity", pushType: .liveactivity,
                    priority: .immediate, expiration: nil, collapseID: nil, payload: Data("{}".utf8))
                let sendID = try session.insertSend(appID: "app_1", activityID: "act-1", content: content, now: now)
                #expect(try session.queueToCopies(
                    sendID: sendID, appID: "app_1", activityID: "act-1", activityType: "Delivery", kind: .liveActivityUpdate,
                    now: now) == 5)
                return sendID
            }
            let transport = FakeTransport { push in
                push.token == tokens[3]
                    ? TransportResult(disposition: .rejected, status: 413, reason: "PayloadTooLarge", attempts: 1, latency: 0.01)
                    : TransportResult(disposition: .delivered, status: 200, attempts: 1, latency: 0.01)
            }
            // Windows of at most two pushes.
            var small = configuration
            small.maxInFlight = 2
            let clock = ManualWallClock(start: now)
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: small, clock: clock, sleeper: clock,
                logger: Logger(sink: MemoryLogSink()))
            try worker.prepare()
            let running = Task { await worker.run() }
            worker.wake()
            let settled = try await eventually {
                try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [EventPattern("send.completed")!], limit: 1) }
                    .count == 1
            }
            running.cancel()
            await running.value
            #expect(settled)
            let pushes = try store.readNow { try $0.pushes(appID: "app_1", activityID: "act-1", since: now.addingTimeInterval(-1)) }
            #expect(pushes.map(\.status) == [.sent, .sent, .sent, .failed, .sent])
            // Only the failure has a row.
            #expect(pushes.map { $0.id != 0 } == [false, false, false, true, false])
            #expect(pushes[3].reason == "PayloadTooLarge")
            #expect(pushes.map(\.apnsID) == (0..<5).map { APNsMessageID.derived(sendID: sendID, deviceID: "device-\($0)") })
            #expect(transport.sent.withLock { $0.map(\.token) }.sorted() == tokens.sorted())
            #expect(transport.sent.withLock { $0.allSatisfy { $0.id == 0 && $0.window?.sendID == sendID } })
            #expect(try store.readNow { try $0.queueDepth() } == 0)
            // No stream or webhook asked: no event per push sent, the failure's, and
            // the send's counts.
            let events = try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 100) }
            #expect(events.map(\.type).sorted() == ["push.failed", "send.completed"])
            let done = try #require(events.first { $0.type == "send.completed" })
            #expect(done.data["sent"] == 4 && done.data["failed"] == 1 && done.data["targets"] == 5)
            let counts = Dictionary(uniqueKeysWithValues: worker.metrics.snapshot().pushes.map { ("\($0.key.result) \($0.key.reason)", $0.value) })
            #expect(counts == ["sent ": 4, "failed PayloadTooLarge": 1])
        }
    }

    @Test func aRefusedTokenIsAnEventWithWhatWasDone() async throws {
        try await withDeliveryStore { store in
            let tokens = [String(repeating: "0a", count: 32)]
            try queue(tokens, in: store)
            let transport = FakeTransport { _ in
                TransportResult(disposition: .tokenDead(since: nil), status: 410, reason: "Unregistered", attempts: 1, latency: 0.01)
            }
            // The loop paces on the manual clock too, which the test never moves:
            // the transport's answers ring the worker awake, no timer does.
            let clock = ManualWallClock(start: now)
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: configuration, clock: clock, sleeper: clock, logger: Logger(sink: MemoryLogSink()))
            try worker.prepare()
            let running = Task { await worker.run() }
            worker.wake()
            let found = try await eventually {
                try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 100) }.count >= 2
            }
            running.cancel()
            await running.value
            #expect(found)
            let events = try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 100) }
            #expect(events.map(\.type) == ["push.failed", "token.rejected"])
            let rejected = try #require(events.last)
            #expect(rejected.data["token_kind"] == "live_activity_update" && rejected.data["reason"] == "Unregistered")
            #expect(rejected.data["action"]?.stringValue != nil)
            #expect(!rejected.data.jsonText.contains(tokens[0]))
        }
    }

    /// A push answered 503 is queued again with a backoff, and sent again only once
    /// the clock reaches it: the worker sleeps on the manual clock, which stands
    /// still until the test moves it.
    @Test(arguments: [
        TransportResult(disposition: .retry, status: 503, reason: "ServiceUnavailable", attempts: 1, latency: 0.01),
        TransportResult(disposition: .retryLater(after: nil), status: 429, reason: "TooManyRequests", attempts: 1, latency: 0.01),
        // The host's circuit breaker was open: never tried, back no sooner than asked.
        TransportResult(disposition: .retryLater(after: 3), reason: "circuitOpen", attempts: 0),
    ])
    func aRetryIsSentAgainOnlyOnceTheClockReachesIt(_ refusal: TransportResult) async throws {
        try await withDeliveryStore { store in
            let token = String(repeating: "0b", count: 32)
            try queue([token], in: store)
            // Refused the first time, accepted the second.
            let answered = Lock(0)
            let transport = FakeTransport { _ in
                let first = answered.withLock { count -> Bool in
                    count += 1
                    return count == 1
                }
                return first ? refusal : TransportResult(disposition: .delivered, status: 200, attempts: 1, latency: 0.01)
            }
            let clock = ManualWallClock(start: now)
            // A first backoff of up to 5 s, well past the worker's next look.
            var configuration = self.configuration
            configuration.retryBase = 5
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: configuration, clock: clock, sleeper: clock, random: SeededRandomSource(seed: 7),
                logger: Logger(sink: MemoryLogSink()))
            let now = self.now
            func sent() -> Int { transport.sent.withLock { $0.count } }
            func counted(_ result: String) -> Int {
                worker.metrics.snapshot().pushes.filter { $0.key.result == result }.values.reduce(0, +)
            }
            func status() throws -> PushStatus? {
                try store.readNow { try $0.pushes(appID: "app_1", activityID: "act-1", since: now.addingTimeInterval(-1)) }
                    .first?.status
            }
            // Moves the clock to `date` and waits until the turn it started is over
            // (the worker sleeps on the clock again).
            func move(to date: Date) async -> Bool {
                let mark = clock.lastWatch
                clock.set(date)
                return await clock.waitForSleepers(after: mark)
            }

            try worker.prepare()
            let start = clock.lastWatch
            let running = Task { await worker.run() }
            worker.wake()
            // The refusal comes back on the transport's thread and is recorded as a
            // retry; then the worker sleeps, and the clock has not moved.
            #expect(await eventually { counted("retried") == 1 })
            #expect(await clock.waitForSleepers(after: start))
            let retryAt = try #require(try store.readNow { try $0.nextDueTime() })
            // Within the first round's backoff (5 s), and (by the seeded jitter) past
            // the worker's next look, a quarter second on: each move below ends a sleep.
            let delay = retryAt.timeIntervalSince(now)
            try #require(delay - 0.01 >= DeliveryStateMachine.ceiling && delay <= 5)
            #expect(try status() == .queued)
            #expect(sent() == 1)

            // Just short of the retry time: the worker looks, and sends nothing.
            #expect(await move(to: retryAt.addingTimeInterval(-0.01)))
            #expect(sent() == 1)
            #expect(try status() == .queued)

            // Past it: sent again, and this time accepted.
            #expect(await move(to: retryAt.addingTimeInterval(0.01)))
            #expect(await eventually { counted("sent") == 1 })
            #expect(sent() == 2)
            #expect(try status() == .sent)
            let apnsIDs = Set(transport.sent.withLock { $0.map(\.apnsID) })
            #expect(apnsIDs.count == 1)  // The same push, sent again.
            running.cancel()
            await running.value
        }
    }

    /// A stop waits for the answers in flight until the clock passes the shutdown
    /// grace, then hands the pushes still unanswered back to the queue.
    @Test func aStopWaitsForAnswersUntilTheClockPassesTheGraceThenHandsPushesBack() async throws {
        try await withDeliveryStore { store in
            try queue([String(repeating: "0c", count: 32)], in: store)
            let transport = SilentTransport()
            let clock = ManualWallClock(start: now)
            let worker = DeliveryWorker(
                store: store, transport: transport, configuration: configuration, clock: clock, sleeper: clock, logger: Logger(sink: MemoryLogSink()))
            func nextDue() throws -> Date? { try store.readNow { try $0.nextDueTime() } }
            try worker.prepare()
            let start = clock.lastWatch
            let ended = Lock(false)
            let running = Task {
                await worker.run()
                ended.withLock { $0 = true }
            }
            worker.wake()
            #expect(await eventually { transport.held.withLock { $0.count } == 1 })
            #expect(await clock.waitForSleepers(after: start))  // Sent, and waiting for its answer.
            #expect(try nextDue() == nil)  // In flight, held by this node.

            // The stop waits on the clock, which stands still: the push stays in flight.
            let stopping = clock.lastWatch
            running.cancel()
            #expect(await clock.waitForSleepers(after: stopping))
            #expect(!ended.withLock { $0 })
            #expect(worker.inFlight == 1)
            #expect(try nextDue() == nil)

            // The grace is over: the worker hands the push back and ends.
            clock.advance(by: worker.configuration.shutdownGrace)
            await running.value
            #expect(ended.withLock { $0 })
            #expect(try nextDue() != nil)
            #expect(transport.held.withLock { $0.count } == 1)
        }
    }

    @Test func theAPNsTransportRetriesWhenTheAppCannotBeRead() async throws {
        try await withTemporaryDirectory { folder in
            let store = try makeStore(in: folder)
            let transport = APNsTransport(client: APNsClient(), store: store)
            let missing = ConditionLock<TransportResult?>(nil)
            transport.send(claimedPush(createdAt: now)) { result in missing.withLockBroadcasting { $0 = result } }
            let noApp = missing.wait(until: { $0 != nil }, timeout: .seconds(30)) { $0 }
            #expect(noApp?.disposition == .credentialsRejected)
            #expect(noApp?.attempts == 0)

            store.close()
            let unreadable = ConditionLock<TransportResult?>(nil)
            transport.send(claimedPush(createdAt: now)) { result in unreadable.withLockBroadcasting { $0 = result } }
            let passing = unreadable.wait(until: { $0 != nil }, timeout: .seconds(30)) { $0 }
            #expect(passing?.disposition == .retry)
            #expect(passing?.reason == "transport")
            #expect(passing?.attempts == 0)
        }
    }
}
