import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: device secrets and the apps' device_secrets setting")
struct DeviceSecretContractTests {
    @Test(arguments: StoreBackend.all)
    func theSettingIsStoredReadAndChanged(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var required = Fixture.app("app_1")
            required.deviceSecrets = .required
            let off = Fixture.app("app_2")
            #expect(off.deviceSecrets == .off)
            try store.writeNow { session throws in
                try session.insertApp(required)
                try session.insertApp(off)
            }
            try store.readNow { session throws in
                #expect(try session.app(id: "app_1")?.deviceSecrets == .required)
                #expect(try session.app(id: "app_2")?.deviceSecrets == .off)
                #expect(try session.app(keyHash: required.deviceKeyHash)?.app.deviceSecrets == .required)
                #expect(try session.apps().map(\.deviceSecrets) == [.required, .off])
            }
            var changed = required
            changed.deviceSecrets = .off
            try store.writeNow { try $0.updateAppSettings(changed) }
            #expect(try store.readNow { try $0.app(id: "app_1")?.deviceSecrets } == .off)
            changed.deviceSecrets = .required
            try store.writeNow { try $0.updateApp(changed) }
            #expect(try store.readNow { try $0.app(id: "app_1")?.deviceSecrets } == .required)
            // The setting is what a device route reads.
            #expect(try store.writeNow { try $0.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false) }.policy == .required)
            #expect(try store.writeNow { try $0.deviceAccess(appID: "app_2", deviceID: "d1", exclusive: false) }.policy == .off)
        }
    }

    @Test(arguments: StoreBackend.all)
    func aDeviceIsCreatedWithItsSecretAndOnlyAReplacementChangesIt(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var app = Fixture.app()
            app.deviceSecrets = .required
            let first = Data("first secret hash".utf8)
            try store.writeNow { session throws in
                try session.insertApp(app)
                let unknown = try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: true)
                #expect(unknown == DeviceAccess(policy: .required, environment: nil, secretHash: nil))
                #expect(!unknown.deviceExists)

                #expect(try session.insertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa", userID: "u1", tags: ["t"]),
                    secretHash: first, now: Fixture.t0))
                let created = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(created.hasSecret)
                #expect(created.apnsToken == "aa")
                #expect(created.userID == "u1")
                #expect(created.tags == ["t"])
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false)
                    == DeviceAccess(policy: .required, environment: .sandbox, secretHash: first, platform: "ios", userID: "u1"))

                // A second insert of the device changes nothing, its secret least of all.
                #expect(try !session.insertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(token: "bb", userID: "u2", tags: ["x"], environment: .production),
                    secretHash: Data("intruder".utf8), now: Fixture.at(1)))
                let same = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(same == created)
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretHash == first)

                // An update changes the registration, never the secret.
                try session.updateDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(token: "cc", tags: ["y"], environment: .production),
                    now: Fixture.at(2))
                let updated = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(updated.apnsToken == "cc")
                #expect(updated.userID == "u1")
                #expect(updated.tags == ["y"])
                #expect(updated.updatedAt == Fixture.at(2))
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: true)
                    == DeviceAccess(policy: .required, environment: .production, secretHash: first, platform: "ios", userID: "u1"))

                // A replacement does, and only for a device that exists.
                let second = Data("second secret hash".utf8)
                #expect(try session.replaceDeviceSecret(appID: "app_1", deviceID: "d1", secretHash: second, presentedAt: nil))
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretHash == second)
                #expect(try !session.replaceDeviceSecret(appID: "app_1", deviceID: "d2", secretHash: second, presentedAt: nil))
                #expect(try session.device(appID: "app_1", deviceID: "d2") == nil)
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.updatedAt == Fixture.at(2))
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aDeviceWithoutASecretGetsOneByReplacement(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                // As a device registered before secrets existed.
                #expect(try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), now: Fixture.t0))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.hasSecret == false)
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false)
                    == DeviceAccess(policy: .off, environment: .sandbox, secretHash: nil, platform: "ios"))
                // An upsert of it leaves it without one.
                #expect(try !session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa"), now: Fixture.at(1)))
                #expect(try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretHash == nil)
                #expect(try session.replaceDeviceSecret(appID: "app_1", deviceID: "d1", secretHash: Data("given".utf8), presentedAt: nil))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.hasSecret == true)
            }
        }
    }

    /// A secret is recorded as presented once a request carried it (the first time
    /// only); a replacement says whether the new one counts as presented.
    @Test(arguments: StoreBackend.all)
    func aSecretPresentedIsRecordedUntilItIsReplaced(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.insertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(), secretHash: Data("first".utf8), now: Fixture.t0)
                func presented() throws -> Bool {
                    try session.deviceAccess(appID: "app_1", deviceID: "d1", exclusive: false).secretPresented
                }
                #expect(try !presented())
                try session.recordDeviceSecretPresented(appID: "app_1", deviceID: "d1", at: Fixture.at(1))
                try session.recordDeviceSecretPresented(appID: "app_1", deviceID: "d1", at: Fixture.at(2))
                #expect(try presented())
                try session.recordDeviceSecretPresented(appID: "app_1", deviceID: "d9", at: Fixture.at(2))
                // A reset (no request carried the new one) clears it; a rotation (the
                // old one asked for it) keeps it.
                #expect(try session.replaceDeviceSecret(appID: "app_1", deviceID: "d1", secretHash: Data("reset".utf8), presentedAt: nil))
                #expect(try !presented())
                #expect(try session.replaceDeviceSecret(
                    appID: "app_1", deviceID: "d1", secretHash: Data("rotated".utf8), presentedAt: Fixture.at(3)))
                #expect(try presented())
                #expect(try session.updateTokenChecks(appID: "app_1", deviceID: "d1", activityID: "a1", token: "aa")
                    .device.secretPresented)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func updateTokenChecksReadTheDeviceSecretAndSetting(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            var app = Fixture.app()
            app.deviceSecrets = .required
            let hash = Data("hash".utf8)
            let checks = try store.writeNow { session -> (UpdateTokenChecks, UpdateTokenChecks) in
                try session.insertApp(app)
                _ = try session.insertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), secretHash: hash, now: Fixture.t0)
                return (
                    try session.updateTokenChecks(appID: "app_1", deviceID: "d1", activityID: "a1", token: "aa"),
                    try session.updateTokenChecks(appID: "app_1", deviceID: "d2", activityID: "a1", token: "aa"))
            }
            #expect(checks.0.device == DeviceAccess(policy: .required, environment: .sandbox, secretHash: hash, platform: "ios"))
            #expect(checks.0.environment == .sandbox)
            #expect(checks.1.device == DeviceAccess(policy: .required, environment: nil, secretHash: nil))
            #expect(checks.1.environment == nil)
        }
    }
}
