import Foundation
import IsletCore
import Storage
import Testing

/// Receipts: one row per send and device, counted on the send once, the copy
/// keeping the newest it showed, shown on the pushes, gone with the send.
@Suite("Store contract: receipts")
struct ReceiptContractTests {
    /// An app with activity `a1` whose copies on d1 and d2 hold update tokens, and
    /// two updates to them (at 1 s and 2 s), by windows, settled; answers their ids.
    private func prepare(_ store: any Store) throws -> (Int64, Int64) {
        try store.writeNow { session throws -> (Int64, Int64) in
            try session.insertApp(Fixture.app())
            try session.insertActivity(
                appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
            try session.insertPendingCopies(
                appID: "app_1", activityID: "a1", targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2")],
                now: Fixture.t0)
            for device in ["d1", "d2"] {
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: device, token: "u" + device.dropFirst(),
                    environment: .sandbox, now: Fixture.t0)
            }
            var ids: [Int64] = []
            for seconds in [1.0, 2.0] {
                let id = try session.insertSend(appID: "app_1", activityID: "a1", content: Fixture.content(), now: Fixture.at(seconds))
                try session.queueToCopies(
                    sendID: id, appID: "app_1", activityID: "a1", activityType: "Match", kind: .liveActivityUpdate,
                    now: Fixture.at(seconds))
                var cache: [Int64: SendContent] = [:]
                let claimed = try session.claimDuePushes(
                    now: Fixture.at(seconds), limit: 10, lease: PushLease(nodeID: "node-1", until: Fixture.at(seconds + 30)),
                    sends: &cache)
                var tally = WindowTally(size: claimed.count)
                tally.answered = claimed.count
                tally.sent = claimed.count
                try session.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(seconds))
                ids.append(id)
            }
            return (ids[0], ids[1])
        }
    }

    private func receipt(_ store: any Store, _ sendID: Int64, _ device: String = "d1", at seconds: Double) throws -> StoredReceipt? {
        try store.writeNow { session in
            try session.recordReceipt(
                appID: "app_1", activityID: "a1", deviceID: device, sendID: sendID, receivedAt: Fixture.at(seconds),
                now: Fixture.at(seconds + 1))
        }
    }

    @Test(arguments: StoreBackend.all)
    func aReceiptIsCountedOnceAndTheCopyKeepsTheNewest(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let (first, second) = try prepare(store)
            // No send of the activity has the id.
            #expect(try receipt(store, second + 100, at: 3) == nil)
            #expect(try receipt(store, second, at: 3) == StoredReceipt(receivedAt: Fixture.at(3), counted: true))
            // Again, later: as stored, not counted.
            #expect(try receipt(store, second, at: 9) == StoredReceipt(receivedAt: Fixture.at(3), counted: false))
            // The older send's receipt, late: counted; the copy keeps the newer.
            #expect(try receipt(store, first, at: 4)?.counted == true)
            #expect(try receipt(store, second, "d2", at: 5)?.counted == true)
            let copy = try store.readNow { try $0.copy(appID: "app_1", activityID: "a1", deviceID: "d1") }
            #expect(copy?.lastReceivedSendID == second && copy?.lastReceivedAt == Fixture.at(3))

            let summaries = try store.readNow { try $0.sendSummaries(appID: "app_1", activityID: "a1", limit: 10) }
            #expect(summaries.map(\.sendID) == [second, first])
            #expect(summaries.map(\.received) == [2, 1])
            #expect(summaries.map(\.targets) == [2, 2] && summaries.map(\.sent) == [2, 2])
            #expect(summaries.allSatisfy { $0.state == "completed" && $0.event == .update && $0.tokenKind == .liveActivityUpdate })
            #expect(try store.readNow { try $0.sendSummaries(appID: "app_1", activityID: "a1", limit: 1) }.count == 1)

            let items = try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
            let received = items.map { "\($0.sendID == first ? "first" : "second") \($0.deviceID) \($0.receivedAt.map { "\($0.timeIntervalSince(Fixture.t0))" } ?? "-")" }
            #expect(received == ["first d1 4.0", "first d2 -", "second d1 3.0", "second d2 5.0"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func receiptsGoWithTheirSendAfterTheRetention(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let (first, second) = try prepare(store)
            _ = try receipt(store, first, at: 3)
            _ = try receipt(store, first, "d2", at: 3)
            _ = try receipt(store, second, at: 3)
            // A batch of two takes two receipts, and no send while one is left.
            let small = try store.writeNow { try $0.purgeSettledSends(appID: "app_1", before: Fixture.at(60), limit: 2) }
            #expect(small.receipts == 2 && small.sends == 0, "\(small)")
            let rest = try store.writeNow { try $0.purgeSettledSends(appID: "app_1", before: Fixture.at(60), limit: 100) }
            #expect(rest.receipts == 1 && rest.sends == 2, "\(rest)")
            #expect(try store.readNow { try $0.sendSummaries(appID: "app_1", activityID: "a1", limit: 10) }.isEmpty)
        }
    }
}
