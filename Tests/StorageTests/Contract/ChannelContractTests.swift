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
}
