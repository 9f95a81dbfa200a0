import Foundation
import IsletBackground
import IsletCore
import IsletCrypto
import IsletLog
import IsletService
import IsletSync
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Storage
import Testing

/// The domain services called directly, with no HTTP: commands in, results or
/// domain errors out, on a real store and a clock that moves only when told.
@Suite("Domain services without HTTP")
struct ServiceTests {
    static let adminToken = "islet_admin_service_tests_0123456789"
    static let startToken = String(repeating: "ab", count: 32)
    static let updateToken = String(repeating: "cd", count: 32)
    static let alert = PushAlert(title: .literal("Order 42"), body: .literal("On its way"), sound: nil)

    struct Rig {
        let services: Services
        let clock: ManualWallClock
        let store: any Store
        let woken: Lock<Int>
        /// Rung by the services when timed work is added or moved.
        let timers: Doorbell
        let secrets = DeviceSecretBook()

        /// An app with credentials, a device of it with a push-to-start token.
        func appWithDevice() async throws -> AppRecord {
            let key = try P256.SigningKey.generate()
            let created = try await services.apps.create(CreateApp(
                name: "Shop", bundleID: "com.example.shop",
                credentials: APNsCredentials(teamID: "TEAM000001", keyID: "KEY0000001", privateKeyPEM: key.pemRepresentation),
                strictActivityTypes: false))
            let appID = created.app.id
            try await secrets.register(
                services.devices, appID: appID, deviceID: "phone-1",
                DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: .some("user-1"), tags: nil))
            _ = try await services.devices.putStartToken(
                appID: appID, deviceID: "phone-1", secret: secrets[appID, "phone-1"], activityType: "DeliveryAttributes",
                token: ServiceTests.startToken)
            return created.app
        }

        func start(_ app: AppRecord, id: String = "order-1", endAt: Date? = nil, key: IdempotencyKey? = nil) async throws -> Replayable<StartResult> {
            try await services.activities.start(StartActivity(
                app: app, activityID: id, activityType: "DeliveryAttributes", attributes: ["order": "42"],
                contentState: ["eta": 10], alert: ServiceTests.alert, audience: .userIDs(["user-1"]), endAt: endAt, staleDate: nil,
                relevanceScore: nil, priority: nil, idempotency: key))
        }

        var queued: Int { get throws { try store.readNow { try $0.queueDepth() } } }
    }

    func withRig(_ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let woken = Lock(0)
            let timers = Doorbell()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(), logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()),
                idempotencyWindow: 3600, pushesQueued: { woken.withLock { $0 += 1 } }, timersChanged: { timers.ring() })
            let rig = Rig(
                services: Services(environment: environment, adminToken: Self.adminToken), clock: clock, store: store, woken: woken,
                timers: timers)
            try await body(rig)
        }
    }

    /// The code of the domain error `body` throws.
    func code(_ body: () async throws -> Void) async -> ServiceError.Code? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError {
            return error.code
        } catch {
            return nil
        }
    }

    @Test func aStartQueuesOnePushPerDeviceAndWakesDelivery() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            let answer = try await rig.start(app)
            #expect(answer.result.targets == 1 && !answer.replayed)
            #expect(try rig.queued == 1)
            #expect(rig.woken.withLock { $0 } == 1)
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "order-1")
            #expect(detail.activity.record.attributes?["islet_activity_id"] == .string("order-1"))
            #expect(detail.devices.map(\.status) == [.pending])
        }
    }

    @Test func theSameKeyReplaysAndQueuesNothingTwice() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            let key = IdempotencyKey(key: "k-1", fingerprint: Data("one".utf8))
            let first = try await rig.start(app, key: key)
            let again = try await rig.start(app, key: key)
            #expect(again.replayed && again.result == first.result)
            #expect(try rig.queued == 1)
            #expect(rig.woken.withLock { $0 } == 1)
            let other = IdempotencyKey(key: "k-1", fingerprint: Data("two".utf8))
            #expect(await code { _ = try await rig.start(app, key: other) } == .invalid)
            let malformed = IdempotencyKey(key: "has space", fingerprint: Data())
            #expect(await code { _ = try await rig.start(app, id: "order-2", key: malformed) } == .invalid)
        }
    }

    @Test func refusalsCarryTheirCodes() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            var bare = app
            bare.credentials = nil
            #expect(await code { _ = try await rig.start(bare) } == .conflict)
            #expect(await code {
                _ = try await rig.services.activities.update(UpdateActivity(
                    app: app, activityID: "nothing", contentState: ["eta": 1], alert: nil, endAt: nil, staleDate: nil,
                    relevanceScore: nil, priority: nil, idempotency: nil))
            } == .notFound)
            _ = try await rig.start(app)
            #expect(await code { _ = try await rig.start(app) } == .conflict)
            // No device of this audience holds a token: the error names the field.
            do {
                _ = try await rig.services.activities.start(StartActivity(
                    app: app, activityID: "order-9", activityType: "DeliveryAttributes", attributes: ["order": "9"],
                    contentState: ["eta": 1], alert: Self.alert, audience: .tags(["nobody"]), endAt: nil, staleDate: nil,
                    relevanceScore: nil, priority: nil, idempotency: nil))
                Issue.record("a start to nobody was accepted")
            } catch let error as ServiceError {
                #expect(error.code == .invalid)
                #expect(error.fields?.map(\.field) == ["audience.tags"])
            }
        }
    }

    @Test func anEndTimeEndsTheActivityWithoutARequest() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            _ = try await rig.start(app, endAt: rig.clock.now().addingTimeInterval(60))
            #expect(await rig.services.activities.endDue() == 0)
            rig.clock.advance(by: 61)
            #expect(await rig.services.activities.endDue() == 1)
            let detail = try await rig.services.activities.show(appID: app.id, activityID: "order-1")
            #expect(detail.activity.status == .ended && detail.activity.endCause == .scheduled)
            #expect(await rig.services.activities.endDue() == 0)
            let again = try await rig.services.activities.end(EndActivity(
                app: app, activityID: "order-1", contentState: nil, dismissalDate: nil, idempotency: nil))
            #expect(again.result.alreadyEnded && !again.result.accepted)
        }
    }

    @Test func keysAreCheckedByKind() async throws {
        try await withRig { rig in
            let created = try await rig.services.apps.create(
                CreateApp(name: "A", bundleID: "com.example.a", credentials: nil, strictActivityTypes: false))
            let other = try await rig.services.apps.create(
                CreateApp(name: "B", bundleID: "com.example.b", credentials: nil, strictActivityTypes: false))
            let apps = rig.services.apps
            #expect(try await apps.requireApp(key: created.serverKey, appID: created.app.id, kind: .server).id == created.app.id)
            #expect(await code { _ = try await apps.requireApp(key: created.deviceKey, appID: created.app.id, kind: .server) } == .forbidden)
            #expect(await code { _ = try await apps.requireApp(key: Self.adminToken, appID: created.app.id, kind: .server) } == .forbidden)
            #expect(await code { _ = try await apps.requireApp(key: other.serverKey, appID: created.app.id, kind: .server) } == .notFound)
            #expect(await code { try await apps.requireAdmin(key: created.serverKey) } == .forbidden)
            #expect(await code { try await apps.requireAdmin(key: "nonsense") } == .unauthenticated)
            try await apps.requireAdmin(key: Self.adminToken)
            _ = try await apps.rotateKeys(appID: created.app.id)
            #expect(await code { _ = try await apps.requireApp(key: created.serverKey, appID: created.app.id, kind: .server) } == .unauthenticated)
            #expect(await code { _ = try await apps.rotateKeys(appID: "app_00000000000000000000") } == .notFound)
        }
    }

    @Test func aTokenIsNeverStoredUnderTwoKinds() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            do {
                try await rig.secrets.register(
                    rig.services.devices, appID: app.id, deviceID: "phone-2",
                    DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: Self.startToken, userID: nil, tags: nil))
                Issue.record("a push-to-start token was taken as a device token")
            } catch let error as ServiceError {
                #expect(error.code == .invalid && error.fields?.first?.field == "apns_token")
            }
            let first = try await rig.services.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: rig.secrets[app.id, "phone-1"], activityID: "local-1", activityType: "DeliveryAttributes", token: Self.updateToken)
            let again = try await rig.services.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: rig.secrets[app.id, "phone-1"], activityID: "local-1", activityType: "DeliveryAttributes", token: Self.updateToken)
            #expect(first.created && !again.created)
            #expect(await code {
                _ = try await rig.services.devices.putUpdateToken(
                    appID: app.id, deviceID: "phone-9", secret: nil, activityID: "local-1", activityType: "DeliveryAttributes", token: Self.updateToken)
            } == .notFound)
        }
    }

    /// Devices registering their update tokens for an activity Islet has not seen,
    /// at the same moment: one of them creates it, none is told to try again.
    @Test func updateTokensForANewActivityRegisteredAtOnceAreAllTaken() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            let devices = 8
            for index in 0..<devices {
                try await rig.secrets.register(
                    rig.services.devices, appID: app.id, deviceID: "fan-\(index)",
                    DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: nil, tags: nil))
            }
            for round in 0..<10 {
                let registered = try await withThrowingTaskGroup(of: Bool.self) { group in
                    for index in 0..<devices {
                        group.addTask {
                            let token = String(format: "%02x%02x", round, index) + String(repeating: "ef", count: 30)
                            return try await rig.services.devices.putUpdateToken(
                                appID: app.id, deviceID: "fan-\(index)", secret: rig.secrets[app.id, "fan-\(index)"],
                                activityID: "match-\(round)",
                                activityType: "MatchAttributes", token: token
                            ).created
                        }
                    }
                    return try await group.reduce(into: 0) { count, created in count += created ? 1 : 0 }
                }
                #expect(registered == devices)
            }
            // A device registering for the activity with another type than the one it
            // was created with is still refused.
            #expect(await code {
                _ = try await rig.services.devices.putUpdateToken(
                    appID: app.id, deviceID: "fan-0", secret: rig.secrets[app.id, "fan-0"], activityID: "match-0",
                    activityType: "OtherAttributes",
                    token: String(repeating: "fe", count: 32))
            } == .invalid)
        }
    }

    @Test func anActivitysAudienceHoldsAtMostItsCeilingAndAWideningPastItAddsNothing() async throws {
        try await withRig { rig in
            let app = try await rig.appWithDevice()
            _ = try await rig.start(app)
            // The audience already holds its start's user id; filled to one short of
            // the ceiling in the store.
            let filler = (1..<(JoinAudience.maximumValues - 1)).map { "d-\($0)" }
            _ = try rig.store.writeNow { session throws in
                try session.addJoinAudience(appID: app.id, activityID: "order-1", JoinAudience(deviceIDs: filler))
            }
            let activities = rig.services.activities
            let full = JoinAudience.maximumValues - 1
            #expect(try await activities.join(appID: app.id, activityID: "order-1").audience.count == full)
            // Two more would pass it: refused, naming a field, and nothing is added.
            var refused: ServiceError?
            do {
                _ = try await activities.widenAudience(
                    appID: app.id, activityID: "order-1", adding: JoinAudience(deviceIDs: ["x-1", "x-2"]))
            } catch {
                refused = error as? ServiceError
            }
            #expect(refused?.code == .invalid && refused?.fields?.map(\.field) == ["device_ids"], "\(String(describing: refused))")
            #expect(try await activities.join(appID: app.id, activityID: "order-1").audience.count == full)
            // One more fills it exactly; values already listed add nothing.
            let widened = try await activities.widenAudience(
                appID: app.id, activityID: "order-1", adding: JoinAudience(userIDs: ["user-1"], deviceIDs: ["x-1", "d-1"]))
            #expect(widened.audience.count == JoinAudience.maximumValues)
        }
    }

    @Test func aStoreErrorIsADomainError() {
        #expect(ServiceError(StoreError(.conflict, "x")).code == .conflict)
        #expect(ServiceError(StoreError(.busy, "x")).code == .unavailable)
        #expect(ServiceError(StoreError(.unavailable, "x")).code == .unavailable)
        #expect(ServiceError(StoreError(.corrupt, "x")).code == .failed)
    }
}

/// Runs `body` with a fresh suite store (`openSuiteStore`) in a temporary folder,
/// opened and closed off the concurrency pool (`withOpenedStore`).
func withSuiteStore<T>(_ body: (any Store) async throws -> T) async throws -> T {
    try await withTemporaryDirectory { dir in
        try await withOpenedStore({ try openSuiteStore(in: dir) }, body)
    }
}

/// The store the service suites run on: SQLite in `folder`, or a fresh PostgreSQL
/// schema when the suites run on PostgreSQL (dropped when the store closes).
func openSuiteStore(in folder: URL) throws -> any Store {
    guard TestPostgres.suitesUsePostgreSQL else {
        return try SQLiteStore(path: folder.appendingPathComponent("islet.sqlite").path)
    }
    let (url, drop) = try TestPostgres.makeSchema()
    return DroppingStore(try PostgreSQLStore(url: url, poolSize: 2, applicationName: "islet-service-tests"), drop: drop)
}
