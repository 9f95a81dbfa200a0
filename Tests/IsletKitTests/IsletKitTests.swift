import Foundation
import Testing

@testable import IsletKit

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// A server by script, for the rules that need no real one: records each request
/// and answers what `answer` says.
final class ScriptedServer: IsletTransport, @unchecked Sendable {
    // @unchecked: `requests` and `answer` are read and written under `lock` only.
    let lock = NSLock()
    var requests: [URLRequest] = []
    var answer: @Sendable (URLRequest) throws -> HTTPAnswer

    init(_ answer: @escaping @Sendable (URLRequest) throws -> HTTPAnswer = ScriptedServer.accepting) {
        self.answer = answer
    }

    static let accepting: @Sendable (URLRequest) throws -> HTTPAnswer = { request in
        if request.httpMethod == "PUT" && request.url?.path.hasSuffix("/devices/phone-1") == true {
            return HTTPAnswer(status: 201, body: Data(#"{"device_id":"phone-1","device_secret":"islet_ds_one"}"#.utf8))
        }
        return HTTPAnswer(status: 201, body: Data("{}".utf8))
    }

    func send(_ request: URLRequest) async throws -> HTTPAnswer {
        let answer = lock.withLock {
            requests.append(request)
            return self.answer
        }
        return try answer(request)
    }

    func script(_ answer: @escaping @Sendable (URLRequest) throws -> HTTPAnswer) { lock.withLock { self.answer = answer } }
    var lines: [String] {
        lock.withLock { requests.map { "\($0.httpMethod ?? "") \($0.url?.path ?? "")" } }
    }
    var all: [URLRequest] { lock.withLock { requests } }
}

/// One activity type whose token is given, and no activity.
struct TokenOnly: ActivitySource {
    var activityType = "DeliveryAttributes"
    var token: Data? = Data(repeating: 0xab, count: 32)
    func pushToStartToken() async -> Data? { token }
    func pushToStartTokenUpdates() -> AsyncStream<Data> { AsyncStream { _ in } }
    func activities() async -> [ActivitySnapshot] { [] }
    func activityUpdates() -> AsyncStream<ActivitySnapshot> { AsyncStream { _ in } }
    func pushTokenUpdates(of localID: String) -> AsyncStream<Data> { AsyncStream { $0.finish() } }
    func phaseUpdates(of localID: String) -> AsyncStream<ActivityPhase> { AsyncStream { $0.finish() } }
    func contentUpdates(of localID: String) -> AsyncStream<ShownContent> { AsyncStream { $0.finish() } }
    func end(_ localID: String) async {}
}

func temporaryFolder() -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("isletkit-\(UUID().uuidString)")
    try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
}

func waitFor(_ what: String, _ condition: () async -> Bool) async throws {
    let deadline = Date().addingTimeInterval(60)
    while Date() < deadline {
        if await condition() { return }
        try await Task.sleep(for: .milliseconds(10))
    }
    Issue.record("never: \(what)")
    throw CancellationError()
}

@Suite("IsletKit: backoff")
struct RetryPolicyTests {
    @Test(arguments: [0, 1, 2, 3, 10, 62, 63, 1_000, Int.max, -1, Int.min])
    func aDelayIsWithinItsBoundsWhateverTheFailures(_ failures: Int) {
        let policy = RetryPolicy(first: .seconds(2), longest: .seconds(300), jitter: 0.5)
        for unit in [0, 1, 0.5, -0.0, .leastNonzeroMagnitude, .nan, .infinity, -.infinity, -1, 2] as [Double] {
            let delay = policy.delay(afterFailures: failures, unit: unit).inSeconds
            #expect(delay >= 0 && delay <= 300, "\(failures) \(unit): \(delay)")
            let exponent = min(max(failures, 1) - 1, 62)
            let raw = min(2 * pow(2, Double(exponent)), 300)
            #expect(delay >= raw * 0.5 - 1e-9, "\(failures) \(unit): \(delay) under half of \(raw)")
        }
    }

    @Test func theFirstWaitsGrowAndJitterSpreadsThem() {
        let policy = RetryPolicy(first: .milliseconds(100), longest: .seconds(1), jitter: 0.5)
        #expect(policy.delay(afterFailures: 1, unit: 0) == .milliseconds(100))
        #expect(policy.delay(afterFailures: 2, unit: 0) == .milliseconds(200))
        #expect(policy.delay(afterFailures: 3, unit: 1) == .milliseconds(200))
        #expect(policy.delay(afterFailures: 9, unit: 0) == .seconds(1))
        // Retry-After is waited for when longer, within the longest wait.
        #expect(policy.delay(afterFailures: 1, unit: 0, retryAfter: .milliseconds(700)) == .milliseconds(700))
        #expect(policy.delay(afterFailures: 1, unit: 0, retryAfter: .seconds(86_400)) == .seconds(1))
        #expect(policy.delay(afterFailures: 1, unit: 0, retryAfter: .seconds(-5)) == .milliseconds(100))
    }

    @Test(arguments: [0.0, -0.0, .leastNonzeroMagnitude, -1, 1, 7, .nan, .infinity])
    func jitterIsHeldWithinZeroAndOne(_ jitter: Double) {
        let policy = RetryPolicy(first: .seconds(1), longest: .seconds(1), jitter: jitter)
        #expect(policy.jitter >= 0 && policy.jitter <= 1)
        let delay = policy.delay(afterFailures: 1, unit: 1).inSeconds
        #expect(delay >= 0 && delay <= 1)
    }

    @Test func aLongestShorterThanTheFirstIsTheFirstAndZeroIsZero() {
        #expect(RetryPolicy(first: .seconds(5), longest: .seconds(1)).delay(afterFailures: 3, unit: 0) == .seconds(5))
        #expect(RetryPolicy(first: .zero, longest: .zero).delay(afterFailures: 40, unit: 0.3) == .zero)
        #expect(RetryPolicy(first: .seconds(-3), longest: .seconds(-1)).delay(afterFailures: 2, unit: 0) == .zero)
        // The widest durations are held to a year.
        let widest = RetryPolicy(first: .seconds(Int64.max), longest: .seconds(Int64.max))
        #expect(widest.delay(afterFailures: Int.max, unit: 0) == .seconds(365 * 86_400))
        #expect(widest.delay(afterFailures: 1, unit: 0, retryAfter: .seconds(Int64.max)) == .seconds(365 * 86_400))
        let tiny = RetryPolicy(first: .nanoseconds(1), longest: .nanoseconds(1), jitter: 0)
        #expect(tiny.delay(afterFailures: 5, unit: 0.5) == .nanoseconds(1))
    }
}

@Suite("IsletKit: what an answer means")
struct VerdictTests {
    func answer(_ status: Int, errors: [String] = [], retryAfter: String? = nil) -> HTTPAnswer {
        let problem: [String: Any] = ["status": status, "detail": "because", "errors": errors.map { ["field": $0, "message": "x"] }]
        return HTTPAnswer(
            status: status, headers: retryAfter.map { ["retry-after": $0] } ?? [:],
            body: try! JSONSerialization.data(withJSONObject: problem))
    }

    @Test func eachAnswerIsAcceptedRetriedRefusedOrStopsForTheSecret() {
        #expect(Verdict(answer(200), kind: .registration) == .accepted)
        #expect(Verdict(answer(201), kind: .receipt) == .accepted)
        #expect(Verdict(answer(204), kind: .pushToStartRemoval) == .accepted)
        #expect(Verdict(answer(403, errors: ["Islet-Device-Secret"]), kind: .updateToken) == .secretRefused)
        #expect(Verdict(answer(403, errors: ["activity_id"]), kind: .updateToken) == .refused)
        #expect(Verdict(answer(404), kind: .updateToken) == .unregistered)
        #expect(Verdict(answer(404), kind: .pushToStartToken) == .unregistered)
        #expect(Verdict(answer(404), kind: .tap) == .refused)
        #expect(Verdict(answer(404), kind: .pushToStartRemoval) == .accepted)
        #expect(Verdict(answer(404), kind: .end) == .refused)
        #expect(Verdict(answer(422, errors: ["send_id"]), kind: .receipt) == .refused)
        #expect(Verdict(answer(409), kind: .updateToken) == .refused)
        #expect(Verdict(answer(429, retryAfter: "7"), kind: .tap) == .retry(.seconds(7)))
        #expect(Verdict(answer(503, retryAfter: " 2 "), kind: .tap) == .retry(.seconds(2)))
        #expect(Verdict(answer(503, retryAfter: "soon"), kind: .tap) == .retry(nil))
        #expect(Verdict(answer(503, retryAfter: "-4"), kind: .tap) == .retry(nil))
        #expect(Verdict(answer(503, retryAfter: "99999999999999999999"), kind: .tap) == .retry(nil))
        #expect(Verdict(answer(503, retryAfter: "9999999"), kind: .tap) == .retry(.seconds(86_400)))
        #expect(Verdict(answer(408), kind: .end) == .retry(nil))
        #expect(Verdict(answer(500), kind: .end) == .retry(nil))
        #expect(Verdict(answer(400), kind: .end) == .refused)
        #expect(answer(422, errors: ["send_id"]).problemDetail == "HTTP 422: because")
        #expect(HTTPAnswer(status: 502, body: Data("<html>".utf8)).problemDetail == "HTTP 502")
    }
}

@Suite("IsletKit: taps")
struct TapTests {
    @Test func aWidgetLinkCarriesTheActivityAndGivesTheAppItsOwnURLBack() throws {
        let own = try #require(URL(string: "deliveries://orders/1?tab=map"))
        let link = IsletTapURL.url(own, activityID: "order 1/é", apnsID: "A1B2")
        let (tap, back) = IsletTapURL.parse(link)
        #expect(tap?.activityID == "order 1/é" && tap?.apnsID == "A1B2")
        #expect(back == own)
        // A link made twice carries the activity once.
        let twice = IsletTapURL.url(link, activityID: "order-2")
        #expect(IsletTapURL.parse(twice).tap?.activityID == "order-2" && IsletTapURL.parse(twice).tap?.apnsID == nil)
        // Not Islet's: untouched.
        let plain = try #require(URL(string: "deliveries://home?islet_activity_id="))
        #expect(IsletTapURL.parse(plain).tap == nil && IsletTapURL.parse(plain).appURL == plain)
        let bare = try #require(URL(string: "https://example.com/a"))
        #expect(IsletTapURL.parse(IsletTapURL.url(bare, activityID: "x")).appURL == bare)
    }
}

@Suite("IsletKit: the outbox", .serialized)
struct OutboxTests {
    func configuration(_ folder: URL) -> IsletConfiguration {
        IsletConfiguration(
            serverURL: URL(string: "https://islet.example.com/")!, appID: "app_1", deviceKey: "islet_dk_x",
            environment: .sandbox, deviceID: "phone-1", userID: "user-1", storageDirectory: folder,
            retry: RetryPolicy(first: .milliseconds(5), longest: .milliseconds(20)))
    }

    @Test func whatWaitsIsKeptAcrossLaunchesAndGoesInOrderOnceTheServerAnswers() async throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        // A tap before IsletKit runs is held.
        _ = Islet.handle(IsletTapURL.url(URL(string: "deliveries://x")!, activityID: "order-1"))
        let down = ScriptedServer { _ in throw URLError(.notConnectedToInternet) }
        var islet = await Islet.start(configuration(folder), secrets: FileSecretStore(directory: folder), transport: down)
        await islet.track(TokenOnly())
        try await waitFor("a few failed attempts") { down.lines.count >= 3 }
        #expect(await islet.diagnostics().outboxLength == 3)
        #expect(await islet.diagnostics().lastError != nil)
        await islet.shutdown()

        let server = ScriptedServer()
        islet = await Islet.start(configuration(folder), secrets: FileSecretStore(directory: folder), transport: server)
        try await waitFor("the outbox sent") { await islet.diagnostics().outboxLength == 0 }
        #expect(server.lines == [
            "PUT /v1/apps/app_1/devices/phone-1", "POST /v1/apps/app_1/devices/phone-1/activities/order-1/taps",
            "PUT /v1/apps/app_1/devices/phone-1/push-to-start/DeliveryAttributes",
        ])
        let requests = server.all
        #expect(requests[0].value(forHTTPHeaderField: "Idempotency-Key") != nil)
        #expect(requests[0].value(forHTTPHeaderField: "Islet-Device-Secret") == nil)
        #expect(requests[2].value(forHTTPHeaderField: "Islet-Device-Secret") == "islet_ds_one")
        #expect(requests[2].value(forHTTPHeaderField: "Authorization") == "Bearer islet_dk_x")
        let body = try JSONSerialization.jsonObject(with: try #require(requests[2].httpBody)) as? [String: String]
        #expect(body == ["token": String(repeating: "ab", count: 32)])
        // Tracked again on a later launch: the accepted token is not sent again.
        await islet.track(TokenOnly())
        await islet.refresh()
        #expect(await islet.diagnostics().outboxLength == 0)
        #expect(await islet.status(ofType: "DeliveryAttributes") == .registered)
        await islet.shutdown()
    }

    @Test func aRefusedSecretHoldsEverythingUntilANewOneComes() async throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = ScriptedServer { request in
            if request.value(forHTTPHeaderField: "Islet-Device-Secret") == "islet_ds_new" || request.url?.path.hasSuffix("phone-1") == true {
                return HTTPAnswer(status: 200, body: Data("{}".utf8))
            }
            return HTTPAnswer(
                status: 403, body: Data(#"{"detail":"no secret","errors":[{"field":"Islet-Device-Secret","message":"x"}]}"#.utf8))
        }
        let islet = await Islet.start(configuration(folder), secrets: FileSecretStore(directory: folder), transport: server)
        var events = islet.events.makeAsyncIterator()
        await islet.track(TokenOnly())
        try await waitFor("the secret refused") { await islet.diagnostics().secretRefused }
        #expect(await islet.diagnostics().outboxLength == 1)
        let before = server.lines.count
        await islet.flush()
        #expect(server.lines.count == before, "nothing is tried while the secret is refused")
        var saw = false
        while let event = await events.next() {
            if event == .secretRefused { saw = true; break }
        }
        #expect(saw)
        await islet.useDeviceSecret("islet_ds_new")
        try await waitFor("the token accepted") { await islet.status(ofType: "DeliveryAttributes") == .registered }
        let after = await islet.diagnostics()
        #expect(!after.secretRefused && after.hasSecret)
        await islet.shutdown()
    }

    @Test func aTokenRefusedForGoodIsAFailedStatusWithTheServersReason() async throws {
        let folder = temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let server = ScriptedServer { request in
            if request.url?.path.contains("push-to-start") == true {
                return HTTPAnswer(status: 422, body: Data(#"{"detail":"token is not hex"}"#.utf8))
            }
            return HTTPAnswer(status: 200, body: Data("{}".utf8))
        }
        let islet = await Islet.start(configuration(folder), secrets: FileSecretStore(directory: folder), transport: server)
        await islet.track(TokenOnly())
        try await waitFor("the refusal") { await islet.status(ofType: "DeliveryAttributes") != .pending }
        #expect(await islet.status(ofType: "DeliveryAttributes") == .failed("HTTP 422: token is not hex"))
        #expect(await islet.status(ofType: "Other") == .notTracked)
        #expect(await islet.status(ofActivity: "order-1") == .notTracked)
        #expect(await islet.diagnostics().outboxLength == 0)
        await islet.shutdown()
    }
}

@Suite("IsletKit: its documentation page")
struct ReadmeSnippetTests {
    @Test func theDocumentationShowsEachCompiledSnippetAsItIsCompiled() throws {
        let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        let page = try String(contentsOf: here.appendingPathComponent("../../docs/isletkit.md"), encoding: .utf8)
        let compiled = try String(contentsOf: here.appendingPathComponent("ReadmeSnippets.swift"), encoding: .utf8)
        #expect(page.hasPrefix("# Use it in your app"), "docs/isletkit.md starts otherwise")
        // The page's own section, up to its first subsection (Android apps, over plain HTTP).
        let section = page.components(separatedBy: "\n## ").first ?? ""
        let blocks = section.components(separatedBy: "```swift\n").dropFirst().compactMap {
            $0.components(separatedBy: "```").first
        }
        let checked = blocks.filter { !$0.hasPrefix("// iOS only") && !$0.hasPrefix("// Package.swift") }
        #expect(checked.count >= 3, "\(blocks.count) blocks")
        for block in checked {
            #expect(compiled.contains(block), "the snippet of docs/isletkit.md is not compiled as shown:\n\(block)")
        }
    }
}
