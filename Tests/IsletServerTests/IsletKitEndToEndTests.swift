import Foundation
import IsletCore
import IsletKit
import IsletSync
import IsletTesting
import Simulators
import Testing

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The simulated phone, as IsletKit's `ActivitySource` sees it: its push-to-start
/// token, and the activities the simulator started on it, read from the simulator
/// (the user's own acts, a dismissal or a token ActivityKit rotates, are the
/// script's). Every stream is polled from the simulator and stops when its reader
/// goes; the activities' stream is made at once and buffers, as a cold launch by
/// push-to-start yields the activity before anyone subscribed.
final class SimulatedPhone: ActivitySource, @unchecked Sendable {
    // @unchecked: `phone` is read and written under its lock only; the rest is let.
    let activityType: String
    let engine: SimulatorEngine
    let startToken: String
    struct Phone {
        var dismissed: Set<String> = []
        var ended: Set<String> = []
        /// Update tokens the script rotated, by the simulator's activity id.
        var rotated: [String: String] = [:]
        /// Activities the script made on the device itself, as copies of another.
        var copies: [String: ActivitySnapshot] = [:]
    }
    let phone = Lock(Phone())
    /// This launch's stream of activities, and the activities it yielded.
    struct Launch {
        var stream: AsyncStream<ActivitySnapshot>
        var continuation: AsyncStream<ActivitySnapshot>.Continuation
        var yielded: Set<String> = []
    }
    let launch: Lock<Launch>
    let poller: Task<Void, Never>

    init(engine: SimulatorEngine, activityType: String = "DeliveryAttributes") {
        self.engine = engine
        self.activityType = activityType
        self.startToken = ServerHarness.token()
        let (stream, continuation) = AsyncStream<ActivitySnapshot>.makeStream()
        let launch = Lock(Launch(stream: stream, continuation: continuation))
        self.launch = launch
        let token = startToken
        let phone = self.phone
        poller = Task {
            while !Task.isCancelled {
                let state = phone.withLock { $0 }
                for activity in engine.activities() where activity.pushToStartToken == token {
                    launch.withLock { launch in
                        guard launch.yielded.insert(activity.id).inserted else { return }
                        launch.continuation.yield(Self.snapshot(activity, state))
                    }
                }
                try? await Task.sleep(for: .milliseconds(10))
            }
            launch.withLock { $0.continuation.finish() }
        }
    }

    /// The app's process starts again: ActivityKit's stream of activities is a new
    /// one, and yields the activities there are (the one whose push-to-start launched
    /// the app among them) before anyone reads it.
    func relaunch() {
        let (stream, continuation) = AsyncStream<ActivitySnapshot>.makeStream()
        launch.withLock { launch in
            launch.continuation.finish()
            launch = Launch(stream: stream, continuation: continuation)
        }
    }

    deinit { poller.cancel() }

    func stop() { poller.cancel() }

    static func snapshot(_ activity: SimulatedActivity, _ phone: Phone) -> ActivitySnapshot {
        var phase: ActivityPhase = switch activity.status {
        case .active: .active
        case .stale: .stale
        case .ended: .ended
        case .dismissed: .dismissed
        }
        if phone.dismissed.contains(activity.id) { phase = .dismissed }
        if phone.ended.contains(activity.id) { phase = .ended }
        let token = phone.rotated[activity.id] ?? activity.updateToken
        return ActivitySnapshot(
            localID: activity.id, activityID: activity.attributes?["islet_activity_id"]?.stringValue,
            pushToken: token.flatMap { Data(hex: $0) }, phase: phase,
            shownSendID: activity.contentState?["islet"]?["send_id"]?.stringValue)
    }

    func current(_ localID: String) -> ActivitySnapshot? {
        let phone = self.phone.withLock { $0 }
        if let copy = phone.copies[localID] {
            var copy = copy
            if phone.ended.contains(localID) { copy.phase = .ended }
            return copy
        }
        return engine.activity(id: localID).map { Self.snapshot($0, phone) }
    }

    /// Polls what `read` makes of the activity, yielding each change.
    func watch<T: Sendable & Equatable>(_ localID: String, _ read: @escaping @Sendable (ActivitySnapshot) -> T?) -> AsyncStream<T> {
        AsyncStream { continuation in
            let task = Task {
                var last: T?
                while !Task.isCancelled {
                    if let value = self.current(localID).flatMap(read), value != last {
                        last = value
                        continuation.yield(value)
                    }
                    try? await Task.sleep(for: .milliseconds(10))
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    func pushToStartToken() async -> Data? { Data(hex: startToken) }
    func pushToStartTokenUpdates() -> AsyncStream<Data> { AsyncStream { _ in } }
    func activities() async -> [ActivitySnapshot] {
        let phone = self.phone.withLock { $0 }
        return engine.activities().filter { $0.pushToStartToken == startToken }.map { Self.snapshot($0, phone) }
            + phone.copies.keys.sorted().compactMap { current($0) }
    }
    func activityUpdates() -> AsyncStream<ActivitySnapshot> { launch.withLock { $0.stream } }
    func pushTokenUpdates(of localID: String) -> AsyncStream<Data> { watch(localID) { $0.pushToken } }
    func phaseUpdates(of localID: String) -> AsyncStream<ActivityPhase> { watch(localID) { $0.phase } }
    func contentUpdates(of localID: String) -> AsyncStream<ShownContent> {
        watch(localID) { $0.shownSendID.map { ShownContent(sendID: $0) } }
    }
    func end(_ localID: String) async { phone.withLock { _ = $0.ended.insert(localID) } }

    /// The one activity the simulator started for `activityID` on this phone.
    func localID(of activityID: String) -> String? {
        engine.activities().first {
            $0.pushToStartToken == startToken && $0.attributes?["islet_activity_id"]?.stringValue == activityID
        }?.id
    }
}

/// An outage at will in front of the real transport: while `down`, every request
/// fails as an unreachable host would; `loseNextAnswer` lets one request reach the
/// server and drops its answer, as a timeout on the way back would. Counts what
/// reached the server.
final class FlakyTransport: IsletTransport, @unchecked Sendable {
    // @unchecked: `state` is a lock; `real` is immutable.
    let real = URLSessionTransport(timeout: 30)
    struct State {
        var down = false
        var loseNextAnswer: String?
        var reached: [String] = []
    }
    let state = Lock(State())

    func send(_ request: URLRequest) async throws -> HTTPAnswer {
        let line = "\(request.httpMethod ?? "GET") \(request.url?.path ?? "")"
        let (down, lose) = state.withLock { state -> (Bool, Bool) in
            if state.down { return (true, false) }
            state.reached.append(line)
            let lose = state.loseNextAnswer.map { line.hasPrefix($0) } ?? false
            if lose { state.loseNextAnswer = nil }
            return (false, lose)
        }
        if down { throw URLError(.cannotConnectToHost) }
        let answer = try await real.send(request)
        if lose { throw URLError(.timedOut) }
        return answer
    }
}

@Suite("IsletKit against a real Islet and its simulator")
struct IsletKitEndToEndTests {
    static let schema: JSONValue = [
        "attributes": ["order": ["type": "string"]],
        "content_state": ["status": ["type": "string"], "eta": ["type": "int"]],
        "receipts": true,
    ]

    func configuration(_ h: ServerHarness, _ app: TestApp, _ directory: URL, device: String = "phone-1") -> IsletConfiguration {
        IsletConfiguration(
            serverURL: URL(string: "http://127.0.0.1:\(h.application.port)")!, appID: app.id, deviceKey: app.deviceKey,
            environment: .sandbox, deviceID: device, userID: "user-1", tags: ["beta"], storageDirectory: directory,
            retry: RetryPolicy(first: .milliseconds(20), longest: .milliseconds(200)))
    }

    func launch(
        _ h: ServerHarness, _ app: TestApp, _ directory: URL, transport: any IsletTransport = URLSessionTransport(),
        device: String = "phone-1"
    ) async -> Islet {
        // The phone's own clock: real time (the server's manual clock stays near it,
        // within the 5 minutes a receipt or a tap may differ by).
        await Islet.start(
            configuration(h, app, directory, device: device), secrets: FileSecretStore(directory: directory),
            host: PlainDeviceHost(osVersion: "18.2", frequentPushes: true), transport: transport)
    }

    func until(_ h: ServerHarness, _ what: String, _ condition: () async throws -> Bool) async throws {
        let held = try await h.eventually(condition)
        #expect(held, "never: \(what)")
        try #require(held)
    }

    func copy(_ h: ServerHarness, _ app: TestApp, _ activityID: String, device: String = "phone-1") async throws -> JSONValue? {
        let activity = try await h.call("GET", "/v1/apps/\(app.id)/activities/\(activityID)", key: app.serverKey)
        return activity["devices"]?.arrayValue?.first { $0["device_id"]?.stringValue == device }
    }

    func events(_ h: ServerHarness, _ app: TestApp, _ type: String) async throws -> [JSONValue] {
        try await h.call("GET", "/v1/apps/\(app.id)/events?types=\(type)", key: app.serverKey)["items"]?.arrayValue ?? []
    }

    func registerType(_ h: ServerHarness, _ app: TestApp) async throws {
        let reply = try await h.call(
            "PUT", "/v1/apps/\(app.id)/activity-types/DeliveryAttributes", key: app.serverKey, json: Self.schema)
        try #require(reply.status == 201, "\(reply.json)")
    }

    @Test func aWholeLifeFromPushToStartToTheUsersDismissal() async throws {
        try await ServerHarness.with { h in try await withTemporaryDirectory { directory in
            let app = try await h.createApp()
            try await registerType(h, app)
            let phone = SimulatedPhone(engine: h.sandbox.engine)
            defer { phone.stop() }

            // First launch: the device registers, its secret goes to the store, the
            // push-to-start token follows.
            var islet = await launch(h, app, directory)
            await islet.track(phone)
            try await until(h, "the type's token registered") { await islet.status(ofType: "DeliveryAttributes") == .registered }
            let first = await islet.diagnostics()
            #expect(first.registered && first.hasSecret && first.outboxLength == 0, "\(first)")
            // The app is not running when the server starts an activity by push-to-start.
            await islet.shutdown()
            // The audience finds the device by the tags it registered with.
            let started = try await h.start(app, "order-1", audience: ["tags": ["beta"]])
            #expect(started.status == 202 && started["targets"] == 1, "\(started.json)")
            try await until(h, "the phone shows the activity") { phone.localID(of: "order-1") != nil }
            let localID = try #require(phone.localID(of: "order-1"))

            // A cold launch in the background: the activity was yielded before anyone
            // subscribed; its update token goes up, and the start's receipt.
            phone.relaunch()
            try await until(h, "the launch's stream holds the activity") {
                phone.launch.withLock { $0.yielded.contains(localID) }
            }
            islet = await launch(h, app, directory)
            await islet.track(phone)
            try await until(h, "the update token at the server") { await islet.status(ofActivity: "order-1") == .registered }
            let token = try #require(phone.current(localID)?.pushToken?.hex)
            #expect(try await copy(h, app, "order-1")?["update_token_prefix"]?.stringValue == String(token.prefix(8)) + "…")

            // An update reaches the phone; the receipt of each send is recorded once.
            #expect(try await h.update(app, "order-1", state: ["status": "on the way", "eta": 10]).status == 202)
            try await until(h, "both sends received") {
                let sends = try await h.call("GET", "/v1/apps/\(app.id)/activities/order-1", key: app.serverKey)["sends"]?.arrayValue ?? []
                return sends.count == 2 && sends.allSatisfy { $0["received"] == 1 }
            }
            let shown = try #require(phone.current(localID)?.shownSendID)
            try await until(h, "the copy's newest receipt") {
                try await copy(h, app, "order-1")?["last_received_send_id"]?.stringValue == shown
            }
            #expect(try await events(h, app, "activity.received").count == 2)

            // A tap on the widget: the app gets its own URL back, the server the tap.
            let link = IsletTapURL.url(URL(string: "deliveries://orders/1?tab=map")!, activityID: "order-1")
            #expect(await islet.handle(link).absoluteString == "deliveries://orders/1?tab=map")
            try await until(h, "the tap recorded") { try await events(h, app, "activity.tapped").count == 1 }

            // The user dismisses it: the device's copy ends at the server.
            phone.phone.withLock { _ = $0.dismissed.insert(localID) }
            try await until(h, "the copy ended") { try await copy(h, app, "order-1")?["status"] == "ended" }
            try await until(h, "the outbox empty") { await islet.diagnostics().outboxLength == 0 }
            #expect(await islet.diagnostics().lastError == nil)
            await islet.shutdown()
        } }
    }

    @Test func anOutageLosesNothingAndSendsNothingTwice() async throws {
        try await ServerHarness.with { h in try await withTemporaryDirectory { directory in
            let app = try await h.createApp()
            try await registerType(h, app)
            let phone = SimulatedPhone(engine: h.sandbox.engine)
            defer { phone.stop() }
            let transport = FlakyTransport()
            transport.state.withLock { $0.down = true }
            let islet = await launch(h, app, directory, transport: transport)
            await islet.track(phone)
            _ = await islet.handle(IsletTapURL.url(URL(string: "deliveries://home")!, activityID: "order-9"))
            try await until(h, "a few attempts fail") {
                await islet.diagnostics().lastError != nil && transport.state.withLock { $0.reached.isEmpty }
            }
            #expect(await islet.diagnostics().outboxLength == 3)  // registration, token, tap
            #expect(await islet.status(ofType: "DeliveryAttributes") == .pending)
            // Back: everything goes, once each, in order.
            transport.state.withLock { $0.down = false }
            await islet.flush()
            try await until(h, "the outbox empty") { await islet.diagnostics().outboxLength == 0 }
            let reached = transport.state.withLock { $0.reached }
            #expect(reached.count == 3, "\(reached)")
            #expect(reached.first?.hasPrefix("PUT") == true && reached.first?.hasSuffix("/devices/phone-1") == true)
            #expect(await islet.status(ofType: "DeliveryAttributes") == .registered)
            // The tap was for an activity the device does not hold: refused for good, dropped.
            #expect(await islet.diagnostics().lastError?.contains("404") == true)
            await islet.refresh()
            await islet.flush()
            try await until(h, "nothing waits") { await islet.diagnostics().outboxLength == 0 }
            #expect(transport.state.withLock { $0.reached.count } == 3, "an accepted token is not sent again")
            await islet.shutdown()
        } }
    }

    @Test func aLostRegistrationAnswerIsRetriedWithTheSameKeyAndSecret() async throws {
        try await ServerHarness.with { h in try await withTemporaryDirectory { directory in
            let app = try await h.createApp()
            let phone = SimulatedPhone(engine: h.sandbox.engine)
            defer { phone.stop() }
            let transport = FlakyTransport()
            transport.state.withLock { $0.loseNextAnswer = "PUT /v1/apps/\(app.id)/devices/phone-1" }
            let islet = await launch(h, app, directory, transport: transport)
            await islet.track(phone)
            let registered = try await h.eventually { await islet.status(ofType: "DeliveryAttributes") == .registered }
            let diagnostics = await islet.diagnostics()
            #expect(registered, "\(diagnostics) \(transport.state.withLock { $0.reached })")
            try #require(registered)
            let reached = transport.state.withLock { $0.reached }
            #expect(reached.filter { $0.hasSuffix("/devices/phone-1") }.count == 2, "\(reached)")
            #expect(await islet.diagnostics().hasSecret)
            #expect(await islet.diagnostics().secretRefused == false)
            await islet.shutdown()
        } }
    }

    @Test func aRelaunchReportsWhatEndedMeanwhileAndEndsDuplicates() async throws {
        try await ServerHarness.with { h in try await withTemporaryDirectory { directory in
            let app = try await h.createApp()
            try await registerType(h, app)
            let phone = SimulatedPhone(engine: h.sandbox.engine)
            defer { phone.stop() }
            var islet = await launch(h, app, directory)
            await islet.track(phone)
            try await until(h, "the type's token registered") { await islet.status(ofType: "DeliveryAttributes") == .registered }
            for id in ["order-1", "order-2"] {
                #expect(try await h.start(app, id, audience: ["user_ids": ["user-1"]]).status == 202)
            }
            try await until(h, "both tokens registered") {
                let first = await islet.status(ofActivity: "order-1")
                let second = await islet.status(ofActivity: "order-2")
                return first == .registered && second == .registered
            }
            await islet.shutdown()
            // While the app is not running: the user dismisses order-1; and a second
            // copy of order-2 appears on the device.
            let first = try #require(phone.localID(of: "order-1"))
            phone.phone.withLock {
                _ = $0.dismissed.insert(first)
                $0.copies["zz-copy"] = ActivitySnapshot(localID: "zz-copy", activityID: "order-2", pushToken: Data(hex: ServerHarness.token()))
            }
            phone.relaunch()
            islet = await launch(h, app, directory)
            let seen = Lock<[IsletEvent]>([])
            let events = islet.events
            let reader = Task { for await event in events { seen.withLock { $0.append(event) } } }
            defer { reader.cancel() }
            await islet.track(phone)
            try await until(h, "order-1's copy ended") { try await copy(h, app, "order-1")?["status"] == "ended" }
            #expect(try await copy(h, app, "order-2")?["status"] == "active")
            #expect(phone.phone.withLock { $0.ended } == ["zz-copy"])
            try await until(h, "the duplicate's event") {
                seen.withLock { $0.contains(.duplicateEnded(activityID: "order-2", localID: "zz-copy")) }
            }

            // ActivityKit rotates order-2's token: the new one goes up.
            let second = try #require(phone.localID(of: "order-2"))
            let rotated = ServerHarness.token()
            phone.phone.withLock { $0.rotated[second] = rotated }
            try await until(h, "the rotated token at the server") {
                try await copy(h, app, "order-2")?["update_token_prefix"]?.stringValue == String(rotated.prefix(8)) + "…"
            }
            await islet.shutdown()
        } }
    }

    @Test func logoutRemovesThePushToStartTokenAndANewUserBringsItBack() async throws {
        try await ServerHarness.with { h in try await withTemporaryDirectory { directory in
            let app = try await h.createApp()
            let phone = SimulatedPhone(engine: h.sandbox.engine)
            defer { phone.stop() }
            let islet = await launch(h, app, directory)
            await islet.track(phone)
            try await until(h, "the type's token registered") { await islet.status(ofType: "DeliveryAttributes") == .registered }
            await islet.logout()
            try await until(h, "the outbox empty") { await islet.diagnostics().outboxLength == 0 }
            #expect(await islet.status(ofType: "DeliveryAttributes") == .pending)
            let refused = try await h.start(app, "order-1", audience: ["device_ids": ["phone-1"]])
            #expect(refused.status == 422, "\(refused.json)")
            // A foreground return while logged out sends nothing.
            await islet.refresh()
            #expect(await islet.diagnostics().outboxLength == 0)
            await islet.setUser("user-2", tags: nil)
            try await until(h, "the token registered again") { await islet.status(ofType: "DeliveryAttributes") == .registered }
            #expect(try await h.start(app, "order-1", audience: ["user_ids": ["user-2"]]).status == 202)
            await islet.shutdown()
        } }
    }
}

extension Data {
    init?(hex: String) {
        guard hex.count % 2 == 0 else { return nil }
        var bytes: [UInt8] = []
        var index = hex.startIndex
        while index < hex.endIndex {
            let next = hex.index(index, offsetBy: 2)
            guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
            bytes.append(byte)
            index = next
        }
        self.init(bytes)
    }

    var hex: String { map { String(format: "%02x", $0) }.joined() }
}
