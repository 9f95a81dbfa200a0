import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: apps, devices, tokens and audiences")
struct AppDeviceContractTests {
    // MARK: - Apps

    @Test(arguments: StoreBackend.all)
    func appsReadBackByIDByKeyHashAndInOrder(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let first = {
                var app = Fixture.app("app_1", createdAt: Fixture.at(10), credentials: true)
                app.strictActivityTypes = true
                return app
            }()
            let second = Fixture.app("app_2", createdAt: Fixture.at(5))
            try await store.write { session throws in
                try session.insertApp(first)
                try session.insertApp(second)
            }
            try store.readNow { session throws in
                #expect(try session.app(id: "app_1") == first)
                #expect(try session.app(id: "app_2")?.credentials == nil)
                #expect(try session.app(id: "app_3") == nil)
                let byServer = try session.app(keyHash: first.serverKeyHash)
                #expect(byServer?.app == first)
                #expect(byServer?.kind == .server)
                let byDevice = try session.app(keyHash: second.deviceKeyHash)
                #expect(byDevice?.app.id == "app_2")
                #expect(byDevice?.kind == .device)
                #expect(try session.app(keyHash: Data("nobody".utf8)) == nil)
                #expect(try session.apps().map(\.id) == ["app_2", "app_1"])
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aTakenAppIDIsAConflictAndRollsBackNothingElse(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { try $0.insertApp(Fixture.app()) }
            let again = {
                var app = Fixture.app()
                app.serverKeyHash = Data("other server".utf8)
                app.deviceKeyHash = Data("other device".utf8)
                return app
            }()
            let inside = #expect(throws: StoreError.self) { try store.writeNow { try $0.insertApp(again) } }
            #expect(inside?.code == .conflict)
            let outside = await #expect(throws: StoreError.self) { try await store.write { try $0.insertApp(again) } }
            #expect(outside?.code == .conflict)
            // A key hash another app holds is a conflict too.
            var sameKeys = Fixture.app("app_2")
            sameKeys.serverKeyHash = Fixture.app().serverKeyHash
            let keys = #expect(throws: StoreError.self) { try store.writeNow { try $0.insertApp(sameKeys) } }
            #expect(keys?.code == .conflict)
            #expect(try store.readNow { try $0.apps().map(\.id) } == ["app_1"])
            #expect(try store.readNow { try $0.app(id: "app_1")?.name } == "App app_1")
        }
    }

    @Test(arguments: StoreBackend.all)
    func aWriteThatDoesNotWaitForTheDiskCommitsAllOrNothingAlike(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write(durable: false) { try $0.insertApp(Fixture.app()) }
            // Beside durable writes, in any order, each commits whole.
            try await withThrowingTaskGroup(of: Void.self) { group in
                for index in 2...9 {
                    group.addTask { try await store.write(durable: index % 2 == 0) { try $0.insertApp(Fixture.app("app_\(index)")) } }
                }
                try await group.waitForAll()
            }
            // One that throws leaves nothing of what it did.
            let refused = await #expect(throws: StoreError.self) {
                try await store.write(durable: false) { session in
                    try session.insertApp(Fixture.app("app_10"))
                    try session.insertApp(Fixture.app())
                }
            }
            #expect(refused?.code == .conflict)
            #expect(try store.readNow { try $0.apps().map(\.id) }.sorted() == (1...9).map { "app_\($0)" })
            #expect(try await store.read { try $0.app(id: "app_10") } == nil)
        }
    }

    @Test(arguments: StoreBackend.all)
    func keysAndSettingsChangeApart(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let app = Fixture.app()
            try store.writeNow { try $0.insertApp(app) }
            let newServer = Data("new server".utf8)
            let newDevice = Data("new device".utf8)
            #expect(try store.writeNow { try $0.replaceKeys(appID: "app_1", serverKeyHash: newServer, deviceKeyHash: newDevice, now: Fixture.t0) })
            #expect(try !store.writeNow { try $0.replaceKeys(appID: "app_9", serverKeyHash: Data("x".utf8), deviceKeyHash: Data("y".utf8), now: Fixture.t0) })
            try store.readNow { session throws in
                #expect(try session.app(keyHash: app.serverKeyHash) == nil)
                #expect(try session.app(keyHash: newServer)?.kind == .server)
                #expect(try session.app(keyHash: newDevice)?.kind == .device)
                // Replaced in the same millisecond as it was made, it still reads as changed.
                #expect(try session.app(id: "app_1")!.updatedAt > app.updatedAt)
            }

            var settings = app
            settings.name = "Renamed"
            settings.bundleID = "com.example.renamed"
            settings.credentials = APNsCredentials(teamID: "T2", keyID: "K2", privateKeyPEM: "PEM2")
            settings.strictActivityTypes = true
            settings.updatedAt = Fixture.at(60)
            try store.writeNow { try $0.updateAppSettings(settings) }
            var stored = try #require(try store.readNow { try $0.app(id: "app_1") })
            #expect(stored.name == "Renamed")
            #expect(stored.bundleID == "com.example.renamed")
            #expect(stored.credentials == settings.credentials)
            #expect(stored.strictActivityTypes)
            #expect(stored.updatedAt == Fixture.at(60))
            #expect(stored.serverKeyHash == newServer)
            #expect(stored.deviceKeyHash == newDevice)

            var everything = settings
            everything.credentials = nil
            everything.strictActivityTypes = false
            everything.serverKeyHash = Data("third server".utf8)
            everything.deviceKeyHash = Data("third device".utf8)
            try store.writeNow { try $0.updateApp(everything) }
            stored = try #require(try store.readNow { try $0.app(id: "app_1") })
            #expect(stored.credentials == nil)
            #expect(!stored.strictActivityTypes)
            #expect(stored.serverKeyHash == everything.serverKeyHash)
            #expect(stored.createdAt == app.createdAt)
        }
    }

    // MARK: - Devices

    @Test(arguments: StoreBackend.all)
    func upsertTellsCreatedFromUpdatedAndChangesOnlyWhatIsGiven(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                #expect(try session.device(appID: "app_1", deviceID: "d1") == nil)
                #expect(try session.upsertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa", userID: "u1", tags: ["b", "a", "a"]),
                    now: Fixture.t0))
                var device = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(device.apnsToken == "aa")
                #expect(device.userID == "u1")
                #expect(device.tags == ["a", "b"])
                #expect(device.platform == "ios")
                #expect(device.environment == .sandbox)
                #expect(device.createdAt == Fixture.t0)
                #expect(device.unreachableAt == nil)

                // Nothing given: token, user id and tags stay; the environment follows.
                #expect(try !session.upsertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(environment: .production), now: Fixture.at(1)))
                device = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(device.apnsToken == "aa")
                #expect(device.userID == "u1")
                #expect(device.tags == ["a", "b"])
                #expect(device.environment == .production)
                #expect(device.createdAt == Fixture.t0)
                #expect(device.updatedAt == Fixture.at(1))
                #expect(try session.deviceEnvironment(appID: "app_1", deviceID: "d1") == .production)
                #expect(try session.deviceEnvironment(appID: "app_1", deviceID: "d2") == nil)

                // A user id of `.some(nil)` clears it; empty tags clear them.
                #expect(try !session.upsertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(userID: .some(nil), tags: []), now: Fixture.at(2)))
                device = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(device.userID == nil)
                #expect(device.tags == [])
                #expect(device.apnsToken == "aa")

                // A new user id and a new token replace the old ones.
                #expect(try !session.upsertDevice(
                    appID: "app_1", deviceID: "d1", Fixture.registration(token: "bb", userID: "u2", tags: ["c"]),
                    now: Fixture.at(3)))
                device = try #require(try session.device(appID: "app_1", deviceID: "d1"))
                #expect(device.apnsToken == "bb")
                #expect(device.userID == "u2")
                #expect(device.tags == ["c"])

                // A device of another app is another device.
                try session.insertApp(Fixture.app("app_2"))
                #expect(try session.upsertDevice(appID: "app_2", deviceID: "d1", Fixture.registration(), now: Fixture.t0))
                #expect(try session.device(appID: "app_2", deviceID: "d1")?.apnsToken == nil)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aTokenRegisteredAgainMakesTheDeviceReachable(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa"), now: Fixture.t0)
                #expect(try session.markDeviceUnreachable(appID: "app_1", token: "aa", refusedAt: Fixture.at(1), now: Fixture.at(2)))
                // Already marked: not marked again.
                #expect(try !session.markDeviceUnreachable(appID: "app_1", token: "aa", refusedAt: Fixture.at(1), now: Fixture.at(3)))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.unreachableAt == Fixture.at(2))
                // A registration without a token leaves it unreachable.
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), now: Fixture.at(4))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.unreachableAt == Fixture.at(2))
                #expect(try session.alertTargets(appID: "app_1", audience: .deviceIDs(["d1"])).isEmpty)
                // The same token registered again: reachable.
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "aa"), now: Fixture.at(5))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.unreachableAt == nil)
                #expect(try session.alertTargets(appID: "app_1", audience: .deviceIDs(["d1"])) == [Fixture.target("d1", "aa")])
                // Refused before that registration: the token stays reachable.
                #expect(try !session.markDeviceUnreachable(appID: "app_1", token: "aa", refusedAt: Fixture.at(4), now: Fixture.at(6)))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.unreachableAt == nil)
                // Refused at an unknown time: marked.
                #expect(try session.markDeviceUnreachable(appID: "app_1", token: "aa", refusedAt: nil, now: Fixture.at(7)))
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.unreachableAt == Fixture.at(7))
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func registeredKindsSeeAllThreeKindsOfToken(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "t1"), now: Fixture.t0)
                #expect(try session.registeredKinds(appID: "app_1", token: "t1") == [.device])
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Match", token: "t1", environment: .sandbox, now: Fixture.t0)
                #expect(try session.registeredKinds(appID: "app_1", token: "t1") == [.device, .pushToStart])
                try session.startActivity("a1")
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: "d1", token: "t1", environment: .sandbox, now: Fixture.t0)
                #expect(try session.registeredKinds(appID: "app_1", token: "t1") == Set(PushTokenKind.deviceKinds))
                #expect(try session.registeredKinds(appID: "app_1", token: "t1", except: .device) == [.pushToStart, .liveActivityUpdate])
                #expect(try session.registeredKinds(appID: "app_1", token: "t1", except: .pushToStart) == [.device, .liveActivityUpdate])
                #expect(try session.registeredKinds(appID: "app_1", token: "t1", except: .liveActivityUpdate) == [.device, .pushToStart])
                #expect(try session.registeredKinds(appID: "app_1", token: "t2").isEmpty)
                try session.insertApp(Fixture.app("app_2"))
                #expect(try session.registeredKinds(appID: "app_2", token: "t1").isEmpty)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func startTokensAreOnePerDeviceAndType(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), now: Fixture.t0)
                #expect(try session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Match", token: "s1", environment: .sandbox, now: Fixture.t0))
                #expect(try !session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Match", token: "s2", environment: .production,
                    now: Fixture.at(1)))
                #expect(try session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Race", token: "s3", environment: .sandbox, now: Fixture.t0))
                #expect(try session.startTargets(appID: "app_1", audience: .deviceIDs(["d1"]), activityType: "Match")
                    == [Fixture.target("d1", "s2", .production)])
                #expect(try session.registeredKinds(appID: "app_1", token: "s1").isEmpty)
                #expect(try session.deleteStartToken(appID: "app_1", deviceID: "d1", activityType: "Match"))
                #expect(try !session.deleteStartToken(appID: "app_1", deviceID: "d1", activityType: "Match"))
                #expect(try session.startTargets(appID: "app_1", audience: .deviceIDs(["d1"]), activityType: "Match").isEmpty)
                #expect(try session.startTargets(appID: "app_1", audience: .deviceIDs(["d1"]), activityType: "Race")
                    == [Fixture.target("d1", "s3")])
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func refusedStartTokensAreDeletedUnlessRegisteredAgain(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(), now: Fixture.t0)
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Match", token: "s1", environment: .sandbox, now: Fixture.at(10))
                // Refused before it was registered (again): kept.
                #expect(try !session.deleteRefusedStartToken(appID: "app_1", token: "s1", refusedAt: Fixture.at(9)))
                #expect(try session.registeredKinds(appID: "app_1", token: "s1") == [.pushToStart])
                #expect(try session.deleteRefusedStartToken(appID: "app_1", token: "s1", refusedAt: Fixture.at(10)))
                #expect(try session.registeredKinds(appID: "app_1", token: "s1").isEmpty)
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: "d1", activityType: "Match", token: "s1", environment: .sandbox, now: Fixture.at(20))
                #expect(try session.deleteRefusedStartToken(appID: "app_1", token: "s1", refusedAt: nil))
                #expect(try !session.deleteRefusedStartToken(appID: "app_1", token: "s1", refusedAt: nil))
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func audiencesNameDevicesByUserDeviceAndTag(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "t1", userID: "u1", tags: ["vip"]), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d2", Fixture.registration(token: "t2", userID: "u1", tags: ["vip", "eu"]), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d3", Fixture.registration(userID: "u2", tags: ["eu"]), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d4", Fixture.registration(token: "t4", environment: .production), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_2", deviceID: "d1", Fixture.registration(token: "x1", userID: "u1", tags: ["vip"]), now: Fixture.t0)

                #expect(try session.audienceSize(appID: "app_1", audience: .userIDs(["u1"])) == 2)
                #expect(try session.audienceSize(appID: "app_1", audience: .userIDs(["u1", "u2", "nobody"])) == 3)
                #expect(try session.audienceSize(appID: "app_1", audience: .deviceIDs(["d1", "d4", "missing"])) == 2)
                #expect(try session.audienceSize(appID: "app_1", audience: .tags(["vip", "eu"])) == 3)
                #expect(try session.audienceSize(appID: "app_1", audience: .tags([])) == 0)
                #expect(try session.audienceSize(appID: "app_2", audience: .userIDs(["u1"])) == 1)

                #expect(try session.alertTargets(appID: "app_1", audience: .userIDs(["u1", "u2"]))
                    == [Fixture.target("d1", "t1"), Fixture.target("d2", "t2")])
                #expect(try session.alertTargets(appID: "app_1", audience: .tags(["eu"])) == [Fixture.target("d2", "t2")])
                #expect(try session.alertTargets(appID: "app_1", audience: .deviceIDs(["d4"])) == [Fixture.target("d4", "t4", .production)])
                _ = try session.markDeviceUnreachable(appID: "app_1", token: "t1", refusedAt: nil, now: Fixture.at(1))
                #expect(try session.alertTargets(appID: "app_1", audience: .tags(["vip"])) == [Fixture.target("d2", "t2")])
                // Unreachable is still registered: the audience keeps its size.
                #expect(try session.audienceSize(appID: "app_1", audience: .tags(["vip"])) == 2)

                _ = try session.upsertStartToken(appID: "app_1", deviceID: "d3", activityType: "Match", token: "s3", environment: .sandbox, now: Fixture.t0)
                _ = try session.upsertStartToken(appID: "app_1", deviceID: "d1", activityType: "Match", token: "s1", environment: .sandbox, now: Fixture.t0)
                _ = try session.upsertStartToken(appID: "app_1", deviceID: "d2", activityType: "Race", token: "s2", environment: .sandbox, now: Fixture.t0)
                #expect(try session.startTargets(appID: "app_1", audience: .tags(["eu"]), activityType: "Match") == [Fixture.target("d3", "s3")])
                #expect(try session.startTargets(appID: "app_1", audience: .userIDs(["u1", "u2"]), activityType: "Match")
                    == [Fixture.target("d1", "s1"), Fixture.target("d3", "s3")])
                #expect(try session.startTargets(appID: "app_2", audience: .userIDs(["u1"]), activityType: "Match").isEmpty)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func environmentsAreCorrectedWhereverTheTokenIs(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: "t1"), now: Fixture.t0)
                _ = try session.upsertStartToken(appID: "app_1", deviceID: "d1", activityType: "Match", token: "s1", environment: .sandbox, now: Fixture.t0)
                try session.startActivity("a1")
                _ = try session.registerUpdateToken(appID: "app_1", activityID: "a1", deviceID: "d1", token: "u1", environment: .sandbox, now: Fixture.t0)

                try session.correctEnvironment(appID: "app_1", token: "t1", kind: .device, environment: .production)
                #expect(try session.device(appID: "app_1", deviceID: "d1")?.environment == .production)
                #expect(try session.startTargets(appID: "app_1", audience: .deviceIDs(["d1"]), activityType: "Match").first?.environment == .sandbox)
                try session.correctEnvironment(appID: "app_1", token: "s1", kind: .pushToStart, environment: .production)
                #expect(try session.startTargets(appID: "app_1", audience: .deviceIDs(["d1"]), activityType: "Match").first?.environment == .production)
                #expect(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d1")?.environment == .sandbox)
                try session.correctEnvironment(appID: "app_1", token: "u1", kind: .liveActivityUpdate, environment: .production)
                #expect(try session.copy(appID: "app_1", activityID: "a1", deviceID: "d1")?.environment == .production)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func anAndroidDeviceIsMarkedUnreachableByItsFCMTokenAndReachableAgainByANewOne(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                var registration = DeviceRegistration(platform: "android", environment: .production, apnsToken: nil, userID: nil, tags: nil)
                registration.fcmToken = "fcm:token-one-0000000000"
                _ = try session.insertDevice(appID: "app_1", deviceID: "pixel", registration, secretHash: nil, now: Fixture.at(0))
                // The APNs mark does not touch it; FCM's does, once.
                #expect(try !session.markDeviceUnreachable(appID: "app_1", token: "fcm:token-one-0000000000", refusedAt: nil, now: Fixture.at(1)))
                #expect(try session.markAndroidDeviceUnreachable(appID: "app_1", token: "fcm:token-one-0000000000", refusedAt: nil, now: Fixture.at(1)))
                #expect(try !session.markAndroidDeviceUnreachable(appID: "app_1", token: "fcm:token-one-0000000000", refusedAt: nil, now: Fixture.at(2)))
                #expect(try session.device(appID: "app_1", deviceID: "pixel")?.unreachableAt == Fixture.at(1))
                // A new token makes it reachable again; a refusal older than it changes nothing.
                var again = DeviceRegistration(platform: "android", environment: .production, apnsToken: nil, userID: nil, tags: nil)
                again.fcmToken = "fcm:token-two-0000000000"
                try session.updateDevice(appID: "app_1", deviceID: "pixel", again, now: Fixture.at(5))
                #expect(try session.device(appID: "app_1", deviceID: "pixel")?.unreachableAt == nil)
                #expect(try !session.markAndroidDeviceUnreachable(appID: "app_1", token: "fcm:token-two-0000000000", refusedAt: Fixture.at(4), now: Fixture.at(6)))
                #expect(try session.device(appID: "app_1", deviceID: "pixel")?.fcmToken == "fcm:token-two-0000000000")
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func androidCopiesAreActiveAtOnceAndReachedThroughTheDevicesOwnToken(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                for (id, token) in [("pixel-a", "fcm:token-a-000000000000"), ("pixel-b", "fcm:token-b-000000000000")] {
                    var registration = DeviceRegistration(platform: "android", environment: .production, apnsToken: nil, userID: "u1", tags: nil)
                    registration.fcmToken = token
                    _ = try session.insertDevice(appID: "app_1", deviceID: id, registration, secretHash: nil, now: Fixture.at(0))
                }
                _ = try session.upsertDevice(
                    appID: "app_1", deviceID: "phone", Fixture.registration(token: "t1", userID: "u1"), now: Fixture.t0)
                // The audience's Android devices, and only those FCM can reach.
                #expect(try session.androidStartTargets(appID: "app_1", audience: .userIDs(["u1"])).map(\.deviceID) == ["pixel-a", "pixel-b"])
                #expect(try session.markAndroidDeviceUnreachable(appID: "app_1", token: "fcm:token-b-000000000000", refusedAt: nil, now: Fixture.at(1)))
                let targets = try session.androidStartTargets(appID: "app_1", audience: .userIDs(["u1"]))
                #expect(targets.map(\.deviceID) == ["pixel-a"])
                #expect(targets.first?.token == "fcm:token-a-000000000000")

                try session.startActivity("a1")
                #expect(try session.insertAndroidCopies(appID: "app_1", activityID: "a1", deviceIDs: ["pixel-a", "pixel-b"], now: Fixture.at(2)) == 2)
                #expect(try session.insertAndroidCopies(appID: "app_1", activityID: "a1", deviceIDs: ["pixel-a"], now: Fixture.at(3)) == 0)
                let copy = try session.copy(appID: "app_1", activityID: "a1", deviceID: "pixel-a")
                #expect(copy?.status == .active)
                #expect(copy?.updateToken == nil)
                #expect(copy?.platform == "android")
                // Updates reach the reachable Android copies, by each device's current
                // token; never through the iOS targets.
                #expect(try session.updateTargets(appID: "app_1", activityID: "a1", afterDeviceID: nil, limit: 10).isEmpty)
                var page = try session.androidUpdateTargets(appID: "app_1", activityID: "a1", afterDeviceID: nil, limit: 10)
                #expect(page.map(\.token) == ["fcm:token-a-000000000000"])
                var rotated = DeviceRegistration(platform: "android", environment: .production, apnsToken: nil, userID: "u1", tags: nil)
                rotated.fcmToken = "fcm:token-b-111111111111"
                try session.updateDevice(appID: "app_1", deviceID: "pixel-b", rotated, now: Fixture.at(4))
                page = try session.androidUpdateTargets(appID: "app_1", activityID: "a1", afterDeviceID: nil, limit: 1)
                #expect(page.map(\.deviceID) == ["pixel-a"])
                page = try session.androidUpdateTargets(appID: "app_1", activityID: "a1", afterDeviceID: "pixel-a", limit: 1)
                #expect(page.map(\.token) == ["fcm:token-b-111111111111"])
                // An ended copy takes nothing more.
                try session.endCopy(appID: "app_1", activityID: "a1", deviceID: "pixel-a", cause: .device, onlyToken: nil, at: Fixture.at(5))
                #expect(try session.androidUpdateTargets(appID: "app_1", activityID: "a1", afterDeviceID: nil, limit: 10).map(\.deviceID) == ["pixel-b"])
            }
        }
    }
}
