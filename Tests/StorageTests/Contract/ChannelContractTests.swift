import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: broadcast channels")
struct ChannelContractTests {
    private func channel(_ id: String, _ environment: APNsEnvironment = .sandbox, at seconds: Double = 0) -> ChannelRecord {
        ChannelRecord(
            channelID: id, apnsChannelID: id + "==", environment: environment, storesMostRecent: id.hasPrefix("m"),
            activityID: nil, createdAt: Fixture.at(seconds))
    }

    @Test(arguments: StoreBackend.all)
    func channelsAreKeptPerAppPagedByIdAndCountedPerEnvironment(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                try session.insertChannel(appID: "app_1", channel("b"))
                try session.insertChannel(appID: "app_1", channel("m", .production, at: 1))
                try session.insertChannel(appID: "app_1", channel("a"))
                try session.insertChannel(appID: "app_2", channel("c"))
            }
            // The same id twice is a conflict, for one app only.
            #expect(throws: StoreError.self) {
                try store.writeNow { session throws in try session.insertChannel(appID: "app_1", channel("a")) }
            }
            try store.writeNow { session throws in try session.insertChannel(appID: "app_2", channel("a")) }
            let page = try store.readNow { try $0.channels(appID: "app_1", afterChannelID: nil, limit: 2) }
            #expect(page.map(\.channelID) == ["a", "b"])
            #expect(try store.readNow { try $0.channels(appID: "app_1", afterChannelID: "b", limit: 2) }.map(\.channelID) == ["m"])
            let stored = try #require(try store.readNow { try $0.channel(appID: "app_1", channelID: "m") })
            #expect(stored == channel("m", .production, at: 1))
            #expect(stored.storesMostRecent)
            #expect(try store.readNow { try $0.channel(appID: "app_2", channelID: "b") } == nil)
            #expect(try store.readNow { try $0.channelCount(appID: "app_1", environment: .sandbox) } == 2)
            #expect(try store.readNow { try $0.channelCount(appID: "app_1", environment: .production) } == 1)
            #expect(try store.writeNow { try $0.deleteChannel(appID: "app_1", channelID: "a") })
            #expect(try !store.writeNow { try $0.deleteChannel(appID: "app_1", channelID: "a") })
            #expect(try store.readNow { try $0.channel(appID: "app_2", channelID: "a") } != nil)
        }
    }

    @Test(arguments: StoreBackend.all)
    func anActivitysChannelsAreItsAndIsletsOwnAreRetiredOnceItIsOver(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                for (id, seconds) in [("live", 0.0), ("ended", 0), ("old", 0)] {
                    _ = try session.insertActivity(
                        appID: "app_1", activityID: id, activityType: "Match", origin: .remote, attributes: nil,
                        contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.at(seconds))
                }
                for id in ["c-live", "c-ended", "c-old", "c-orphan", "c-own"] {
                    var record = channel(id)
                    record.managed = id != "c-own"
                    try session.insertChannel(appID: "app_1", record)
                }
                let expiredBy = Fixture.at(-1)
                #expect(try session.assignChannels(appID: "app_1", activityID: "live", channelIDs: ["c-live"], expiredBy: expiredBy) == [])
                #expect(try session.assignChannels(
                    appID: "app_1", activityID: "ended", channelIDs: ["c-ended", "c-own"], expiredBy: expiredBy) == [])
                #expect(try session.assignChannels(appID: "app_1", activityID: "old", channelIDs: ["c-old"], expiredBy: expiredBy) == [])
                // A channel a running activity holds is not taken; the same activity may take it again.
                #expect(try session.assignChannels(appID: "app_1", activityID: "old", channelIDs: ["c-live"], expiredBy: expiredBy) == ["c-live"])
                #expect(try session.assignChannels(appID: "app_1", activityID: "live", channelIDs: ["c-live"], expiredBy: expiredBy) == [])
                try session.endActivity(
                    appID: "app_1", activityID: "ended", cause: .server, contentState: nil, timestamp: nil, at: Fixture.at(100))
            }
            #expect(try store.readNow { try $0.activity(appID: "app_1", activityID: "live")?.delivery } == .channel)
            let channels = try store.readNow { try $0.activityChannels(appID: "app_1", activityID: "ended") }
            #expect(channels.map(\.channelID) == ["c-ended", "c-own"])
            #expect(channels.map(\.managed) == [true, false])
            #expect(channels.allSatisfy { $0.activityID == "ended" })

            // Nothing is over yet.
            func retired(endedBy: Double, expiredBy: Double) throws -> [String] {
                try store.readNow {
                    try $0.retiredChannels(endedBy: Fixture.at(endedBy), expiredBy: Fixture.at(expiredBy), after: nil, limit: 10)
                }.map(\.channel.channelID)
            }
            func retired(after: ChannelCursor) throws -> [String] {
                try store.readNow {
                    try $0.retiredChannels(endedBy: Fixture.at(100), expiredBy: Fixture.at(0), after: after, limit: 10)
                }.map(\.channel.channelID)
            }
            #expect(try retired(endedBy: 99, expiredBy: -1) == [])
            // Ended long enough ago; never the app's own channel.
            #expect(try retired(endedBy: 100, expiredBy: -1) == ["c-ended"])
            // Past every window: every activity's, and the one no activity took.
            #expect(try retired(endedBy: 100, expiredBy: 0) == ["c-ended", "c-live", "c-old", "c-orphan"])
            #expect(try store.readNow {
                try $0.retiredChannels(endedBy: Fixture.at(100), expiredBy: Fixture.at(0), after: nil, limit: 1)
            }.first?.appID == "app_1")
            // Past a place in the order: what follows it.
            #expect(try retired(after: ChannelCursor(appID: "app_1", channelID: "c-live")) == ["c-old", "c-orphan"])
            #expect(try retired(after: ChannelCursor(appID: "app_0", channelID: "zzz")) == ["c-ended", "c-live", "c-old", "c-orphan"])
            #expect(try retired(after: ChannelCursor(appID: "app_2", channelID: "")) == [])

            // Started again under its id, an activity leaves its old channels behind.
            try store.writeNow { session throws in
                _ = try session.insertActivity(
                    appID: "app_1", activityID: "ended", activityType: "Match", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: true, now: Fixture.at(200))
            }
            #expect(try store.readNow { try $0.activityChannels(appID: "app_1", activityID: "ended") } == [])
            #expect(try store.readNow { try $0.channel(appID: "app_1", channelID: "c-ended")?.activityID } == nil)
        }
    }

    @Test(arguments: StoreBackend.all)
    func copiesOnAChannelAreActiveWithoutAToken(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                _ = try session.insertActivity(
                    appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
                let targets = ["d1", "d2", "d3"].map { PushTarget(deviceID: $0, token: "t-" + $0, environment: .sandbox) }
                try session.insertPendingCopies(appID: "app_1", activityID: "a1", targets: targets, now: Fixture.t0)
                try session.subscribeCopies(appID: "app_1", activityID: "a1", deviceIDs: ["d1", "d3"])
            }
            let copies = try store.readNow { try $0.copies(appID: "app_1", activityID: "a1") }
            #expect(copies.map(\.deviceID) == ["d1", "d2", "d3"])
            #expect(copies.map(\.subscribed) == [true, false, true])
            #expect(copies.map(\.status) == [.active, .pending, .active])
            #expect(copies.allSatisfy { $0.updateToken == nil })
            // They take no token push.
            #expect(try store.readNow { try $0.updateTargets(appID: "app_1", activityID: "a1") } == [])
        }
    }
}
