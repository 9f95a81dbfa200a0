import Foundation
import IsletCore
import Storage
import Testing

/// A lookup: ids, user ids and apns-ids exactly; tokens by their first hex digits,
/// at the edges of a digit's successor (`9` to `a`, `f` to `g`); another app's
/// records never.
@Suite("Store contract: lookup")
struct LookupContractTests {
    @Test(arguments: StoreBackend.all)
    func eachKindIsFoundByWhatNamesItAndNothingElse(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let apns = "9f" + String(repeating: "0", count: 62)
            let next = "a0" + String(repeating: "1", count: 62)
            let start = "f" + String(repeating: "2", count: 63)
            let update = "19" + String(repeating: "3", count: 62)
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d1", Fixture.registration(token: apns, userID: "u1"), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d2", Fixture.registration(token: next, userID: "u1"), now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_1", deviceID: "d3", Fixture.registration(), now: Fixture.t0)
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: "d3", activityType: "Match", token: start, environment: .sandbox, now: Fixture.t0)
                _ = try session.upsertDevice(appID: "app_2", deviceID: "d1", Fixture.registration(token: apns, userID: "u1"), now: Fixture.t0)
                try session.insertActivity(
                    appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
                try session.insertPendingCopies(
                    appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", apns)], now: Fixture.t0)
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: "d1", token: update, environment: .sandbox, now: Fixture.t0)
            }
            func find(_ text: String, app: String = "app_1", limit: Int = 20) throws -> LookupResult {
                try store.readNow { try $0.lookup(appID: app, text: text, limit: limit) }
            }
            #expect(try find("a1").activities.map(\.activityID) == ["a1"])
            #expect(try find("a").activities.isEmpty, "ids are found whole")
            #expect(try find("d2").devices.map(\.matched) == ["device_id"])
            #expect(try find("u1").devices.map(\.deviceID) == ["d1", "d2"])
            #expect(try find("u1", limit: 1).devices.count == 1)
            // Token prefixes: 9f… only (not a0…, the successor of 9), f… and 19….
            #expect(try find("9").devices.map { "\($0.deviceID) \($0.matched)" } == ["d1 apns_token"])
            #expect(try find("9f00").devices.map(\.deviceID) == ["d1"])
            #expect(try find("a").devices.map(\.deviceID) == ["d2"])
            #expect(try find("f22").devices.map { "\($0.deviceID) \($0.matched)" } == ["d3 push_to_start_token"])
            #expect(try find("19").copies == [LookupCopy(activityID: "a1", deviceID: "d1")])
            #expect(try find("1").copies.count == 1 && find("2").copies.isEmpty)
            // Not hex, or past 512 characters: no token is looked for.
            #expect(try find("9g").devices.isEmpty && find("9F").devices.isEmpty)
            #expect(try find(String(repeating: "9", count: 513)).devices.isEmpty)
            // Another app's, and nothing, and a limit of 0.
            #expect(try find("a1", app: "app_2").activities.isEmpty)
            #expect(try find("d1", app: "app_2").devices.map(\.deviceID) == ["d1"])
            #expect(try find("nothing") == LookupResult())
            #expect(try find("", limit: 20) == LookupResult() && find("u1", limit: 0) == LookupResult())
        }
    }
}
