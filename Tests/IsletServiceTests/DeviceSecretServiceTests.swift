import Foundation
import IsletCore
import IsletLog
import IsletService
import IsletTesting
import Storage
import Testing

/// Device secrets through the device service: what the device key alone can no
/// longer do to a registered device, under each `device_secrets` setting.
@Suite("Device secrets in the device service")
struct DeviceSecretServiceTests {
    static let startToken = String(repeating: "ab", count: 32)
    static let updateToken = String(repeating: "cd", count: 32)
    static let attackerToken = String(repeating: "ee", count: 32)

    struct Rig {
        let services: Services
        let store: any Store
        var devices: DeviceService { services.devices }

        /// A new app, with its setting.
        func app(_ policy: DeviceSecretPolicy = .required) async throws -> AppRecord {
            let created = try await services.apps.create(
                CreateApp(name: "Shop", bundleID: "com.example.shop", credentials: nil, strictActivityTypes: false))
            #expect(created.app.deviceSecrets == .required)
            guard policy != .required else { return created.app }
            return try await services.apps.update(UpdateApp(
                appID: created.app.id, name: nil, bundleID: nil, credentials: nil, strictActivityTypes: nil,
                deviceSecrets: policy))
        }

        func register(
            _ app: AppRecord, _ deviceID: String = "phone-1", secret: String?, token: String? = nil
        ) async throws -> DeviceService.Registered {
            try await devices.register(
                appID: app.id, deviceID: deviceID, secret: secret,
                DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: token, userID: .some("user-1"), tags: nil))
        }

        /// A device as Islet stored it before secrets existed: no secret.
        func legacyDevice(_ app: AppRecord, _ deviceID: String = "phone-1") throws {
            _ = try store.writeNow { session in
                try session.upsertDevice(
                    appID: app.id, deviceID: deviceID,
                    DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: nil, tags: nil),
                    now: Date())
            }
        }

        func updateToken(_ app: AppRecord, _ activityID: String, _ deviceID: String = "phone-1") throws -> String? {
            try store.readNow { try $0.copy(appID: app.id, activityID: activityID, deviceID: deviceID)?.updateToken }
        }
    }

    func withRig(_ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let environment = ServiceEnvironment(
                store: store, clock: ManualWallClock(), lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600)
            try await body(Rig(services: Services(environment: environment, adminToken: "islet_admin_device_secret_tests_01"), store: store))
        }
    }

    /// The domain error `body` throws, if any.
    func refusal(_ body: () async throws -> Void) async -> ServiceError? {
        do {
            try await body()
            return nil
        } catch {
            return error as? ServiceError
        }
    }

    /// Whether `error` is the refusal of a secret: forbidden, naming the header.
    func namesTheHeader(_ error: ServiceError?) -> Bool {
        error?.code == .forbidden && error?.fields?.map(\.field) == [DeviceSecrets.header]
    }

    @Test func theRegistrationThatCreatesADeviceAnswersItsSecretOnce() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let created = try await rig.register(app, secret: nil)
            #expect(created.created)
            #expect(created.device.hasSecret)
            let secret = try #require(created.secret)
            #expect(secret.hasPrefix("islet_ds_"))
            #expect(secret.count > 40)
            // Updated with it: no new secret.
            let again = try await rig.register(app, secret: secret)
            #expect(!again.created)
            #expect(again.secret == nil)
            // Another device gets another secret.
            let other = try await rig.register(app, "phone-2", secret: nil)
            #expect(other.secret != nil && other.secret != secret)
        }
    }

    @Test func underRequiredEveryLaterRouteNeedsTheSecret() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let secret = try #require(try await rig.register(app, secret: nil).secret)
            let devices = rig.devices
            for presented in [nil, "", "islet_ds_wrong", secret + "x"] as [String?] {
                let registration = await refusal { _ = try await rig.register(app, secret: presented, token: Self.attackerToken) }
                #expect(namesTheHeader(registration), "\(String(describing: registration))")
                #expect(namesTheHeader(await refusal {
                    _ = try await devices.putStartToken(
                        appID: app.id, deviceID: "phone-1", secret: presented, activityType: "DeliveryAttributes",
                        token: Self.startToken)
                }))
                #expect(namesTheHeader(await refusal {
                    try await devices.deleteStartToken(
                        appID: app.id, deviceID: "phone-1", secret: presented, activityType: "DeliveryAttributes")
                }))
                #expect(namesTheHeader(await refusal {
                    _ = try await devices.putUpdateToken(
                        appID: app.id, deviceID: "phone-1", secret: presented, activityID: "local-1",
                        activityType: "DeliveryAttributes", token: Self.updateToken)
                }))
                #expect(namesTheHeader(await refusal {
                    _ = try await devices.endOnDevice(appID: app.id, deviceID: "phone-1", secret: presented, activityID: "local-1")
                }))
                #expect(namesTheHeader(await refusal {
                    _ = try await devices.rotateSecret(appID: app.id, deviceID: "phone-1", secret: presented)
                }))
            }
            // Nothing the refused requests sent was stored.
            let device = try #require(try rig.store.readNow { try $0.device(appID: app.id, deviceID: "phone-1") })
            #expect(device.apnsToken == nil)
            #expect(try rig.store.readNow { try $0.activity(appID: app.id, activityID: "local-1") } == nil)

            // With the secret, each works.
            #expect(try await rig.register(app, secret: secret, token: Self.attackerToken).secret == nil)
            #expect(try await devices.putStartToken(
                appID: app.id, deviceID: "phone-1", secret: secret, activityType: "DeliveryAttributes", token: Self.startToken
            ).created)
            try await devices.deleteStartToken(appID: app.id, deviceID: "phone-1", secret: secret, activityType: "DeliveryAttributes")
            #expect(try await devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: secret, activityID: "local-1", activityType: "DeliveryAttributes",
                token: Self.updateToken
            ).created)
            #expect(try await devices.endOnDevice(appID: app.id, deviceID: "phone-1", secret: secret, activityID: "local-1").status == .ended)
        }
    }

    @Test func aDeviceThatDoesNotExistIsAnsweredAsBefore() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let devices = rig.devices
            #expect(await refusal {
                _ = try await devices.putStartToken(
                    appID: app.id, deviceID: "ghost", secret: nil, activityType: "DeliveryAttributes", token: Self.startToken)
            }?.code == .notFound)
            #expect(await refusal {
                try await devices.deleteStartToken(appID: app.id, deviceID: "ghost", secret: "x", activityType: "DeliveryAttributes")
            }?.code == .notFound)
            #expect(await refusal {
                _ = try await devices.putUpdateToken(
                    appID: app.id, deviceID: "ghost", secret: nil, activityID: "a", activityType: "DeliveryAttributes",
                    token: Self.updateToken)
            }?.code == .notFound)
            #expect(await refusal {
                _ = try await devices.endOnDevice(appID: app.id, deviceID: "ghost", secret: nil, activityID: "a")
            }?.code == .notFound)
            #expect(await refusal { _ = try await devices.rotateSecret(appID: app.id, deviceID: "ghost", secret: "x") }?.code == .notFound)
            #expect(await refusal { _ = try await devices.resetSecret(appID: app.id, deviceID: "ghost") }?.code == .notFound)
            // A header sent to create a device is no obstacle.
            #expect(try await rig.register(app, "ghost", secret: "islet_ds_anything").created)
        }
    }

    @Test func anAttackerWithTheDeviceKeyCannotTakeTheUpdateToken() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let secret = try #require(try await rig.register(app, secret: nil).secret)
            _ = try await rig.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: secret, activityID: "order-1", activityType: "DeliveryAttributes",
                token: Self.updateToken)
            let attack = await refusal {
                _ = try await rig.devices.putUpdateToken(
                    appID: app.id, deviceID: "phone-1", secret: nil, activityID: "order-1", activityType: "DeliveryAttributes",
                    token: Self.attackerToken)
            }
            #expect(namesTheHeader(attack))
            #expect(try rig.updateToken(app, "order-1") == Self.updateToken)
            // Nor can it move the device to another user.
            let moved = await refusal {
                _ = try await rig.devices.register(
                    appID: app.id, deviceID: "phone-1", secret: nil,
                    DeviceRegistration(platform: "ios", environment: .sandbox, apnsToken: nil, userID: .some("attacker"), tags: nil))
            }
            #expect(namesTheHeader(moved))
            #expect(try rig.store.readNow { try $0.device(appID: app.id, deviceID: "phone-1") }?.userID == "user-1")
        }
    }

    @Test func aRotationNeedsTheOldSecretAndEndsIt() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let old = try #require(try await rig.register(app, secret: nil).secret)
            let new = try await rig.devices.rotateSecret(appID: app.id, deviceID: "phone-1", secret: old)
            #expect(new.hasPrefix("islet_ds_") && new != old)
            #expect(namesTheHeader(await refusal { _ = try await rig.register(app, secret: old) }))
            #expect(namesTheHeader(await refusal { _ = try await rig.devices.rotateSecret(appID: app.id, deviceID: "phone-1", secret: old) }))
            #expect(try await rig.register(app, secret: new).secret == nil)
            // Under off too, a rotation needs the current secret.
            let off = try await rig.app(.off)
            let offSecret = try #require(try await rig.register(off, secret: nil).secret)
            #expect(namesTheHeader(await refusal { _ = try await rig.devices.rotateSecret(appID: off.id, deviceID: "phone-1", secret: nil) }))
            #expect(try await rig.devices.rotateSecret(appID: off.id, deviceID: "phone-1", secret: offSecret) != offSecret)
        }
    }

    @Test func aResetNeedsNoSecretAndEndsTheOldOne() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            let old = try #require(try await rig.register(app, secret: nil).secret)
            let reset = try await rig.devices.resetSecret(appID: app.id, deviceID: "phone-1")
            #expect(reset.hasPrefix("islet_ds_") && reset != old)
            #expect(namesTheHeader(await refusal { _ = try await rig.register(app, secret: old) }))
            #expect(try await rig.register(app, secret: reset).secret == nil)
        }
    }

    @Test func underRequiredADeviceWithoutASecretIsGivenOneOnlyByAReset() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            try rig.legacyDevice(app)
            let refused = await refusal { _ = try await rig.register(app, secret: nil) }
            #expect(namesTheHeader(refused))
            #expect(refused?.detail.contains("/secret/reset") == true)
            #expect(namesTheHeader(await refusal {
                _ = try await rig.devices.putStartToken(
                    appID: app.id, deviceID: "phone-1", secret: "islet_ds_guess", activityType: "DeliveryAttributes",
                    token: Self.startToken)
            }))
            #expect(namesTheHeader(await refusal { _ = try await rig.devices.rotateSecret(appID: app.id, deviceID: "phone-1", secret: nil) }))
            let secret = try await rig.devices.resetSecret(appID: app.id, deviceID: "phone-1")
            #expect(try await rig.register(app, secret: secret).secret == nil)
        }
    }

    @Test func underOffNothingIsCheckedButSecretsAreIssued() async throws {
        try await withRig { rig in
            let app = try await rig.app(.off)
            #expect(app.deviceSecrets == .off)
            // Created: a secret, as under required.
            let first = try #require(try await rig.register(app, secret: nil).secret)
            // Every route works without it.
            _ = try await rig.devices.putStartToken(
                appID: app.id, deviceID: "phone-1", secret: nil, activityType: "DeliveryAttributes", token: Self.startToken)
            try await rig.devices.deleteStartToken(appID: app.id, deviceID: "phone-1", secret: "wrong", activityType: "DeliveryAttributes")
            _ = try await rig.devices.putUpdateToken(
                appID: app.id, deviceID: "phone-1", secret: nil, activityID: "local-1", activityType: "DeliveryAttributes",
                token: Self.updateToken)
            _ = try await rig.devices.endOnDevice(appID: app.id, deviceID: "phone-1", secret: nil, activityID: "local-1")
            // While no request has carried the current secret, a registration
            // without it is answered a new one (an app version that stores it ends
            // up with the current secret, whichever version registered before).
            let second = try #require(try await rig.register(app, secret: nil).secret)
            #expect(second != first)
            let third = try #require(try await rig.register(app, secret: first).secret)
            // Once one has carried it, it is the device's: a registration without it,
            // or with an older one, is answered none, and it still works.
            #expect(try await rig.register(app, secret: third).secret == nil)
            #expect(try await rig.register(app, secret: nil).secret == nil)
            #expect(try await rig.register(app, secret: second).secret == nil)
            #expect(try await rig.register(app, secret: third).secret == nil)
            // A device registered before secrets existed gets one at its next registration.
            try rig.legacyDevice(app, "old-phone")
            let given = try await rig.register(app, "old-phone", secret: nil)
            #expect(!given.created)
            #expect(given.secret != nil)
            #expect(given.device.hasSecret)
        }
    }

    @Test func movingAnAppToRequiredTakesEffectAtOnce() async throws {
        try await withRig { rig in
            let app = try await rig.app(.off)
            let secret = try #require(try await rig.register(app, secret: nil).secret)
            try rig.legacyDevice(app, "old-phone")
            _ = try await rig.register(app, secret: nil)  // off: answered a new secret, which this caller drops
            let current = try await rig.devices.resetSecret(appID: app.id, deviceID: "phone-1")
            #expect(current != secret)
            let moved = try await rig.services.apps.update(UpdateApp(
                appID: app.id, name: nil, bundleID: nil, credentials: nil, strictActivityTypes: nil, deviceSecrets: .required))
            #expect(moved.deviceSecrets == .required)
            #expect(try await rig.services.apps.app(id: app.id).deviceSecrets == .required)
            #expect(namesTheHeader(await refusal { _ = try await rig.register(app, secret: nil) }))
            #expect(namesTheHeader(await refusal { _ = try await rig.register(app, secret: secret) }))
            #expect(try await rig.register(app, secret: current).secret == nil)
            #expect(namesTheHeader(await refusal { _ = try await rig.register(app, "old-phone", secret: nil) }))
            // And back: nothing is checked again.
            _ = try await rig.services.apps.update(UpdateApp(
                appID: app.id, name: nil, bundleID: nil, credentials: nil, strictActivityTypes: nil, deviceSecrets: .off))
            _ = try await rig.devices.putStartToken(
                appID: app.id, deviceID: "old-phone", secret: nil, activityType: "DeliveryAttributes", token: Self.startToken)
        }
    }

    /// Two registrations of a new device at the same moment: one creates it (and
    /// holds its secret), the other, without that secret, is refused.
    @Test func twoRegistrationsCreatingOneDeviceAtOnceLeaveOneOwner() async throws {
        try await withRig { rig in
            let app = try await rig.app()
            for round in 0..<5 {
                let deviceID = "race-\(round)"
                let outcomes = try await withThrowingTaskGroup(of: String.self) { group in
                    for _ in 0..<2 {
                        group.addTask {
                            do {
                                let registered = try await rig.register(app, deviceID, secret: nil)
                                return registered.created && registered.secret != nil ? "created" : "updated"
                            } catch let error as ServiceError where error.code == .forbidden {
                                return "refused"
                            }
                        }
                    }
                    return try await group.reduce(into: [String]()) { $0.append($1) }.sorted()
                }
                #expect(outcomes == ["created", "refused"])
            }
        }
    }
}
