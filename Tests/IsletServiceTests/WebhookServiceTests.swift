import Foundation
import IsletCore
import IsletCrypto
import IsletLog
import IsletService
import IsletSync
import IsletTesting
import Storage
import Testing

/// A webhook endpoint in memory: answers by `answer`, keeps every request.
final class RecordingWebhookTransport: WebhookTransport {
    let requests = Lock<[WebhookRequest]>([])
    let answer: Lock<@Sendable (WebhookRequest) -> WebhookReply>

    init(_ answer: @escaping @Sendable (WebhookRequest) -> WebhookReply = { _ in .answered(status: 204, retryAfter: nil) }) {
        self.answer = Lock(answer)
    }

    func post(_ request: WebhookRequest) async -> (reply: WebhookReply, duration: Duration) {
        requests.withLock { $0.append(request) }
        return (answer.withLock { $0 }(request), .milliseconds(3))
    }

    func header(_ name: String, of request: WebhookRequest) -> String? {
        request.headers.first { $0.name == name }?.value
    }

    /// The events received, by id, in order.
    var eventIDs: [String] { requests.withLock { $0.compactMap { header("webhook-id", of: $0) } } }

    func activity(of request: WebhookRequest) -> String? {
        (try? JSONValue(parsing: request.body))?["data"]?["activity_id"]?.stringValue
    }
}

@Suite("Webhooks: saving, signing, ordering, retrying")
struct WebhookServiceTests {
    static let adminToken = "islet_admin_webhook_tests_0123456789"

    struct Rig {
        let services: Services
        let dispatcher: WebhookDispatcher
        let transport: RecordingWebhookTransport
        let clock: ManualWallClock
        let store: any Store
        let app: AppRecord

        func start(_ id: String) async throws {
            _ = try await services.activities.start(StartActivity(
                app: app, activityID: id, activityType: "DeliveryAttributes", attributes: ["order": "42"],
                contentState: ["eta": 10], alert: PushAlert(title: .literal("Order"), body: .literal("Started"), sound: nil),
                audience: .userIDs(["user-1"]), endAt: nil, staleDate: nil, relevanceScore: nil, priority: nil,
                idempotency: nil))
        }

        func update(_ id: String, eta: Int64) async throws {
            _ = try await services.activities.update(UpdateActivity(
                app: app, activityID: id, contentState: ["eta": .integer(eta)], alert: nil, endAt: nil, staleDate: nil,
                relevanceScore: nil, priority: nil, idempotency: nil))
        }

        func webhook(_ events: [String] = ["*"]) async throws -> WebhookRecord {
            try await services.webhooks.create(CreateWebhook(appID: app.id, url: "https://hooks.example.com/islet", events: events, description: nil))
        }

        func deliveries(_ webhook: WebhookRecord) async throws -> [WebhookDeliveryRecord] {
            try await services.webhooks.deliveries(appID: app.id, webhookID: webhook.webhookID, before: nil, limit: 1_000).items
        }
    }

    func withRig(
        policy: WebhookPolicy = WebhookPolicy(), _ body: (Rig) async throws -> Void
    ) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600)
            let services = Services(environment: environment, adminToken: Self.adminToken, webhooks: policy)
            let key = try P256.SigningKey.generate()
            let app = try await services.apps.create(CreateApp(
                name: "Shop", bundleID: "com.example.shop",
                credentials: APNsCredentials(teamID: "TEAM000001", keyID: "KEY0000001", privateKeyPEM: key.pemRepresentation),
                strictActivityTypes: false)).app
            let phone = try await services.devices.register(
                appID: app.id, deviceID: "phone-1", secret: nil,
                DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: .some("user-1"), tags: nil))
            _ = try await services.devices.putStartToken(
                appID: app.id, deviceID: "phone-1", secret: phone.secret, activityType: "DeliveryAttributes",
                token: String(repeating: "a1", count: 32))
            let transport = RecordingWebhookTransport()
            let dispatcher = WebhookDispatcher(
                environment: environment, transport: transport, random: SeededRandomSource(seed: 7))
            try await body(Rig(services: services, dispatcher: dispatcher, transport: transport, clock: clock, store: store, app: app))
        }
    }

    /// The field a refusal names.
    func field(_ body: () async throws -> Void) async -> String? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError {
            return error.fields?.first?.field ?? "(\(error.code))"
        } catch {
            return "\(error)"
        }
    }

    @Test func aWebhookIsSavedOnlyWithASafeURLAndKnownEvents() async throws {
        let policy = WebhookPolicy(addressRefusal: { host, _ in host == "internal.example.com" ? "10.0.0.7 is a private address" : nil })
        try await withRig(policy: policy) { rig in
            let service = rig.services.webhooks
            func create(_ url: String, _ events: [String] = ["push.*"]) async throws {
                _ = try await service.create(CreateWebhook(appID: rig.app.id, url: url, events: events, description: nil))
            }
            #expect(await field { try await create("http://hooks.example.com/x") } == "url")
            #expect(await field { try await create("ftp://hooks.example.com/x") } == "url")
            #expect(await field { try await create("https://user:secret@hooks.example.com/x") } == "url")
            #expect(await field { try await create("not a url") } == "url")
            #expect(await field { try await create("https://internal.example.com/x") } == "url")
            #expect(await field { try await create("https://hooks.example.com/x", []) } == "events")
            #expect(await field { try await create("https://hooks.example.com/x", ["push.sent", "push.nope"]) } == "events[1]")
            #expect(try await service.list(appID: rig.app.id).isEmpty)

            let saved = try await service.create(CreateWebhook(
                appID: rig.app.id, url: "https://hooks.example.com/x", events: ["activity.*", "push.failed", "activity.*"],
                description: "ops"))
            #expect(saved.events == ["activity.*", "push.failed"])
            #expect(saved.webhookID.hasPrefix("wh_") && saved.enabled)
            #expect(saved.secret.hasPrefix("whsec_"))
            #expect(Data(base64Encoded: String(saved.secret.dropFirst(6)))?.count == 32)
            let rotated = try await service.rotateSecret(appID: rig.app.id, webhookID: saved.webhookID)
            #expect(rotated.secret != saved.secret && rotated.previousSecret == saved.secret)
            #expect(await field { _ = try await service.show(appID: rig.app.id, webhookID: "wh_nothing") } == "(notFound)")
        }
        // With the settings, plain http and private addresses are accepted.
        let open = WebhookPolicy(allowHTTP: true, allowPrivate: true, addressRefusal: { _, _ in "never asked" })
        try await withRig(policy: open) { rig in
            let saved = try await rig.services.webhooks.create(CreateWebhook(
                appID: rig.app.id, url: "http://127.0.0.1:9/x", events: ["*"], description: nil))
            #expect(saved.url == "http://127.0.0.1:9/x")
        }
    }

    @Test func deliveriesAreSignedAndCarryOnlyTheEventsAskedFor() async throws {
        try await withRig { rig in
            try await rig.start("before")
            let webhook = try await rig.webhook(["activity.started"])
            try await rig.start("order-1")
            try await rig.update("order-1", eta: 5)
            #expect(await rig.dispatcher.fanOut() == 1)
            #expect(await rig.dispatcher.dispatchOnce() == 1)
            let request = try #require(rig.transport.requests.withLock { $0.first })
            #expect(request.url == webhook.url)
            let body = try JSONValue(parsing: request.body)
            #expect(body["type"] == "activity.started" && body["data"]?["activity_id"] == "order-1")
            #expect(body["app_id"] == .string(rig.app.id))
            let id = try #require(rig.transport.header("webhook-id", of: request))
            #expect(body["id"] == .string(id))
            let timestamp = try #require(rig.transport.header("webhook-timestamp", of: request))
            #expect(Int64(timestamp) == Int64(rig.clock.now().timeIntervalSince1970))
            // v1, base64 of HMAC-SHA256(key, "id.timestamp.body"), the key being the secret's bytes.
            let key = try #require(Data(base64Encoded: String(webhook.secret.dropFirst("whsec_".count))))
            var signed = Data("\(id).\(timestamp).".utf8)
            signed.append(request.body)
            let expected = "v1," + Digest.hmacSHA256(key: key, signed).base64EncodedString()
            #expect(rig.transport.header("webhook-signature", of: request) == expected)
            let delivered = try await rig.deliveries(webhook)
            #expect(delivered.map(\.status) == [.succeeded])
            #expect(delivered.first?.responseStatus == 204 && delivered.first?.attempts == 1)
            // Nothing more to send.
            #expect(await rig.dispatcher.dispatchOnce() == 0)
        }
    }

    @Test func anActivitysEventsArriveInOrderWhileAFailureWaitsForItsRetry() async throws {
        try await withRig { rig in
            let webhook = try await rig.webhook(["activity.*"])
            try await rig.start("a")
            try await rig.start("b")
            try await rig.update("a", eta: 5)
            try await rig.update("b", eta: 5)
            // The endpoint fails activity a's first event once.
            let failedOnce = Lock(false)
            rig.transport.answer.withLock { answer in
                answer = { request in
                    let body = try? JSONValue(parsing: request.body)
                    if body?["data"]?["activity_id"] == "a", body?["type"] == "activity.started",
                        !failedOnce.withLock({ done in defer { done = true }; return done })
                    {
                        return .answered(status: 503, retryAfter: "120")
                    }
                    return .answered(status: 200, retryAfter: nil)
                }
            }
            #expect(await rig.dispatcher.fanOut() == 4)
            #expect(await rig.dispatcher.dispatchOnce() == 4)
            // a's update waited behind its failed start; b's went through.
            #expect(rig.transport.requests.withLock { $0.map { rig.transport.activity(of: $0) } }.sorted { ($0 ?? "") < ($1 ?? "") } == ["a", "b", "b"])
            let failed = try #require(try await rig.deliveries(webhook).first { $0.status == .pending && $0.attempts == 1 })
            #expect(failed.responseStatus == 503)
            // Retry-After: 120 s, not the 5 s backoff.
            #expect(try #require(failed.nextAttemptAt) >= rig.clock.now().addingTimeInterval(120))
            rig.clock.advance(by: 60)
            #expect(await rig.dispatcher.dispatchOnce() == 0)
            rig.clock.advance(by: 61)
            #expect(await rig.dispatcher.dispatchOnce() == 2)
            let forA = rig.transport.requests.withLock { $0.filter { rig.transport.activity(of: $0) == "a" } }
            let types = forA.compactMap { (try? JSONValue(parsing: $0.body))?["type"]?.stringValue }
            #expect(types == ["activity.started", "activity.started", "activity.updated"])
            // The retry carried the same webhook-id.
            #expect(rig.transport.header("webhook-id", of: forA[0]) == rig.transport.header("webhook-id", of: forA[1]))
            // Outside the macro: inside it, this closure took the type checker seconds.
            let statuses: [WebhookDeliveryStatus] = try await rig.deliveries(webhook).map(\.status)
            let allSucceeded = statuses.allSatisfy { $0 == WebhookDeliveryStatus.succeeded }
            #expect(allSucceeded, "\(statuses)")
        }
    }

    /// A failure starts the webhook's failure clock; the next success stops it (and
    /// only then is the webhook's row written).
    @Test func aSuccessStopsTheFailureClock() async throws {
        try await withRig { rig in
            let webhook = try await rig.webhook(["activity.*"])
            let failing = Lock(true)
            rig.transport.answer.withLock { answer in
                answer = { _ in
                    failing.withLock { $0 } ? .failed(reason: "connection refused") : .answered(status: 200, retryAfter: nil)
                }
            }
            try await rig.start("a")
            await rig.dispatcher.fanOut()
            let failedAt = rig.clock.now()
            #expect(await rig.dispatcher.dispatchOnce() == 1)
            let running = try await rig.services.webhooks.show(appID: rig.app.id, webhookID: webhook.webhookID)
            #expect(running.failingSince == failedAt && running.enabled)
            failing.withLock { $0 = false }
            rig.clock.advance(by: 3_600)
            #expect(await rig.dispatcher.dispatchOnce() == 1)
            let stopped = try await rig.services.webhooks.show(appID: rig.app.id, webhookID: webhook.webhookID)
            #expect(stopped.failingSince == nil && stopped.enabled && stopped.updatedAt == rig.clock.now())
            // A success with no clock running leaves the row as it is.
            try await rig.update("a", eta: 5)
            await rig.dispatcher.fanOut()
            rig.clock.advance(by: 60)
            #expect(await rig.dispatcher.dispatchOnce() == 1)
            let after = try await rig.services.webhooks.show(appID: rig.app.id, webhookID: webhook.webhookID)
            #expect(after.failingSince == nil && after.updatedAt == stopped.updatedAt)
        }
    }

    @Test func anEndpointFailingForADayIsDisabledAndAnEventSaysSo() async throws {
        try await withRig { rig in
            let webhook = try await rig.webhook(["activity.*"])
            let watcher = try await rig.webhook(["webhook.disabled"])
            rig.transport.answer.withLock { answer in
                answer = { request in
                    request.url == webhook.url && (try? JSONValue(parsing: request.body))?["type"] != "webhook.disabled"
                        ? .failed(reason: "connection refused") : .answered(status: 200, retryAfter: nil)
                }
            }
            try await rig.start("a")
            await rig.dispatcher.fanOut()
            var rounds = 0
            while try await rig.services.webhooks.show(appID: rig.app.id, webhookID: webhook.webhookID).enabled, rounds < 200 {
                await rig.dispatcher.dispatchOnce()
                rig.clock.advance(by: 3_600)
                rounds += 1
            }
            let disabled = try await rig.services.webhooks.show(appID: rig.app.id, webhookID: webhook.webhookID)
            #expect(!disabled.enabled && disabled.disabledReason != nil)
            #expect(try await rig.deliveries(webhook).allSatisfy { $0.status == .failed })
            let events = try await rig.services.events.page(
                appID: rig.app.id, after: nil, patterns: [EventPattern("webhook.disabled")!], limit: 10).items
            #expect(events.count == 1 && events.first?.data["webhook_id"] == .string(webhook.webhookID))
            // Other webhooks hear of it.
            await rig.dispatcher.fanOut()
            await rig.dispatcher.dispatchOnce()
            #expect(try await rig.deliveries(watcher).map(\.eventType) == ["webhook.disabled"])
            // A retry of a disabled webhook's delivery is refused until it is enabled.
            let first = try #require(try await rig.deliveries(webhook).last)
            await #expect(throws: ServiceError.self) {
                _ = try await rig.services.webhooks.retry(
                    appID: rig.app.id, webhookID: webhook.webhookID, deliveryID: WebhookDeliveryRecord.id(first.sequence))
            }
            _ = try await rig.services.webhooks.update(UpdateWebhook(appID: rig.app.id, webhookID: webhook.webhookID, enabled: true))
            rig.transport.answer.withLock { $0 = { _ in .answered(status: 200, retryAfter: nil) } }
            let retried = try await rig.services.webhooks.retry(
                appID: rig.app.id, webhookID: webhook.webhookID, deliveryID: WebhookDeliveryRecord.id(first.sequence))
            #expect(retried.status == .pending)
            #expect(await rig.dispatcher.dispatchOnce() == 1)
            #expect(try await rig.deliveries(webhook).last?.status == .succeeded)
        }
    }

    @Test func aRotatedSecretSignsAlongsideTheNewOneForADay() async throws {
        try await withRig { rig in
            let webhook = try await rig.webhook(["activity.started"])
            let rotated = try await rig.services.webhooks.rotateSecret(appID: rig.app.id, webhookID: webhook.webhookID)
            try await rig.start("a")
            await rig.dispatcher.fanOut()
            await rig.dispatcher.dispatchOnce()
            let request = try #require(rig.transport.requests.withLock { $0.first })
            let signatures = try #require(rig.transport.header("webhook-signature", of: request)).split(separator: " ")
            #expect(signatures.count == 2)
            let id = try #require(rig.transport.header("webhook-id", of: request))
            let timestamp = try #require(rig.transport.header("webhook-timestamp", of: request))
            for (index, secret) in [rotated.secret, webhook.secret].enumerated() {
                var signed = Data("\(id).\(timestamp).".utf8)
                signed.append(request.body)
                let key = try #require(Data(base64Encoded: String(secret.dropFirst(6))))
                #expect(String(signatures[index]) == "v1," + Digest.hmacSHA256(key: key, signed).base64EncodedString())
            }
            // A day later only the new secret signs.
            rig.clock.advance(by: 86_401)
            try await rig.start("b")
            await rig.dispatcher.fanOut()
            await rig.dispatcher.dispatchOnce()
            let later = try #require(rig.transport.requests.withLock { $0.last })
            #expect(rig.transport.header("webhook-signature", of: later)?.split(separator: " ").count == 1)
        }
    }

    @Test func theRetryPolicyBacksOffHonoursRetryAfterAndGivesUp() {
        let policy = WebhookRetryPolicy()
        let created = Date(timeIntervalSince1970: 1_000_000)
        let first = policy.nextAttempt(attempts: 1, createdAt: created, now: created, retryAfter: nil, jitter: 0.5)
        #expect(first == created.addingTimeInterval(5))
        let fifth = policy.nextAttempt(attempts: 5, createdAt: created, now: created, retryAfter: nil, jitter: 0)
        #expect(fifth == created.addingTimeInterval(80 * 0.8))
        let capped = policy.nextAttempt(attempts: 30, createdAt: created, now: created, retryAfter: nil, jitter: 1)
        #expect(capped == created.addingTimeInterval(3_600 * 1.2))
        let asked = policy.nextAttempt(attempts: 1, createdAt: created, now: created, retryAfter: 300, jitter: 0.5)
        #expect(asked == created.addingTimeInterval(300))
        #expect(policy.nextAttempt(attempts: 3, createdAt: created, now: created.addingTimeInterval(86_390), retryAfter: nil, jitter: 0.5) == nil)
        #expect(WebhookRetryPolicy.retryAfter("42", now: created) == 42)
        #expect(WebhookRetryPolicy.retryAfter("soon", now: created) == nil)
        let date = Date(timeIntervalSince1970: 1_000_090)
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        #expect(WebhookRetryPolicy.retryAfter(formatter.string(from: date), now: created) == 90)
    }
}
