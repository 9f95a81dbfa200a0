import Foundation
import IsletCore
import Storage
import Testing

/// A push-to-start send, by windows: its copies name it (no row per device), its
/// windows read each copy's push-to-start token of the type, and what reads a
/// device's starts (start spacing, unconfirmed starts) finds them by the copies.
@Suite("Store contract: starts by windows")
struct StartWindowContractTests {
    private static let devices = ["d1", "d2", "d3", "d4"]

    /// An app whose four devices hold push-to-start tokens for `Match` (`s1`…), and
    /// a start of `a1` made at `seconds` as one send; answers the send's id and the
    /// copies it reaches. `deferred` devices' starts wait, as rows, until an hour on.
    private func start(_ store: any Store, at seconds: Double = 1, deferred: Set<String> = []) throws -> (Int64, Int) {
        try store.writeNow { session throws -> (Int64, Int) in
            try session.insertApp(Fixture.app())
            for device in Self.devices {
                _ = try session.upsertDevice(appID: "app_1", deviceID: device, Fixture.registration(), now: Fixture.t0)
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: device, activityType: "Match", token: "s" + device.dropFirst(),
                    environment: .sandbox, now: Fixture.t0)
            }
            let now = Fixture.at(seconds)
            try session.insertActivity(
                appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                contentState: nil, lastTimestamp: nil, endAt: nil, replacing: true, now: now)
            let targets = Self.devices.map { device in
                var target = Fixture.target(device, "s" + device.dropFirst())
                if deferred.contains(device) { target.deferredUntil = Fixture.at(seconds + 3600) }
                return target
            }
            let sendID = try session.insertSend(appID: "app_1", activityID: "a1", content: Fixture.content(.start), now: now)
            try session.insertPendingCopies(
                appID: "app_1", activityID: "a1", targets: targets, startSendID: sendID, now: now)
            let held = targets.filter { $0.deferredUntil != nil }
            if !held.isEmpty {
                try session.enqueuePushes(
                    sendID: sendID, appID: "app_1", activityID: "a1", activityType: "Match", event: .start,
                    tokenKind: .pushToStart, targets: held, now: now, mintID: { UUID().uuidString })
            }
            let reached = try session.queueToCopies(
                sendID: sendID, appID: "app_1", activityID: "a1", activityType: "Match", kind: .pushToStart, now: now)
            return (sendID, reached)
        }
    }

    private func claim(_ store: any Store, at seconds: Double, limit: Int) throws -> [ClaimedPush] {
        try store.writeNow(durable: false) { session throws in
            var cache: [Int64: SendContent] = [:]
            return try session.claimDuePushes(
                now: Fixture.at(seconds), limit: limit, lease: PushLease(nodeID: "node-1", until: Fixture.at(seconds + 30)),
                sends: &cache)
        }
    }

    private func settle(_ store: any Store, _ claimed: [ClaimedPush], at seconds: Double) throws {
        let window = try #require(claimed.first?.window)
        var tally = WindowTally(size: claimed.count)
        tally.answered = claimed.count
        tally.sent = claimed.count
        #expect(try store.writeNow { try $0.settleWindow(window, tally, by: "node-1", now: Fixture.at(seconds)) })
    }

    @Test(arguments: StoreBackend.all)
    func aStartReachesTheCopiesItMadeByTheirStartTokens(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let (sendID, reached) = try start(store, deferred: ["d4"])
            // d4 waits as a row of its own; the windows reach the other three.
            #expect(reached == 3)
            #expect(try store.readNow { try $0.queueDepth() } == 4)
            // A token taken back since the start was made leaves its copy out, told
            // as dropped; a rotated one is the one the push goes to.
            try store.writeNow { session throws in
                #expect(try session.deleteStartToken(appID: "app_1", deviceID: "d2", activityType: "Match"))
                _ = try session.upsertStartToken(
                    appID: "app_1", deviceID: "d3", activityType: "Match", token: "s3-new", environment: .production,
                    now: Fixture.at(2))
            }
            let claimed = try claim(store, at: 2, limit: 10)
            #expect(claimed.map(\.deviceID) == ["d1", "d3"])
            #expect(claimed.map(\.token) == ["s1", "s3-new"])
            #expect(claimed.map(\.environment) == [.sandbox, .production])
            #expect(claimed.allSatisfy { $0.tokenKind == .pushToStart && $0.content.event == .start })
            #expect(claimed.map(\.apnsID) == claimed.map { APNsMessageID.derived(sendID: sendID, deviceID: $0.deviceID) })
            try settle(store, claimed, at: 3)

            let items = try store.readNow { try $0.pushes(appID: "app_1", activityID: "a1", since: Fixture.t0) }
            #expect(items.map(\.deviceID) == Self.devices)
            #expect(items.map(\.status) == [.sent, .dropped, .sent, .queued])
            #expect(items[1].reason == "StartTokenRemoved")
            #expect(items[3].deferredUntil == Fixture.at(3601))
            #expect(items.allSatisfy { $0.event == .start && $0.tokenKind == .pushToStart })
        }
    }

    @Test(arguments: StoreBackend.all)
    func startSpacingCountsTheStartsOfWindowsOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            _ = try start(store, at: 10, deferred: ["d4"])
            let times = try store.readNow {
                try $0.startTimes(appID: "app_1", deviceIDs: Self.devices, since: Fixture.t0)
            }
            // Queued starts count from when they were made; the deferred one from
            // when it goes, once.
            #expect(times == [
                "d1": [Fixture.at(10)], "d2": [Fixture.at(10)], "d3": [Fixture.at(10)], "d4": [Fixture.at(3610)],
            ])
            #expect(try store.readNow { try $0.startTimes(appID: "app_1", deviceIDs: ["d1"], since: Fixture.at(10)) }.isEmpty)

            // A failed start does not count; one the ended activity never reached
            // does not either.
            let claimed = try claim(store, at: 11, limit: 1)
            #expect(claimed.map(\.deviceID) == ["d1"])
            #expect(try store.writeNow {
                try $0.recordWindowOutcome(
                    claimed[0], PushOutcome(status: .failed, attempts: 1, apnsStatus: 400, reason: "BadDeviceToken"),
                    by: "node-1", now: Fixture.at(12))
            })
            var tally = WindowTally(size: 1)
            tally.answered = 1
            tally.exceptions = 1
            #expect(try store.writeNow { try $0.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(12)) })
            let dropped = try store.writeNow { session throws in
                try session.dropOpenSends(
                    appID: "app_1", activityID: "a1", events: [.start], reason: "ActivityEnded", now: Fixture.at(13))
            }
            #expect(dropped == 2)
            let after = try store.readNow { try $0.startTimes(appID: "app_1", deviceIDs: Self.devices, since: Fixture.t0) }
            #expect(after == ["d4": [Fixture.at(3610)]])
        }
    }

    @Test(arguments: StoreBackend.all)
    func aStartOfAWindowNeverConfirmedIsReportedOnce(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let (sendID, _) = try start(store)
            let first = try claim(store, at: 2, limit: 2)
            try settle(store, first, at: 5)
            // A copy whose window is in flight, or not yet handed out, is not.
            let second = try claim(store, at: 6, limit: 1)
            #expect(second.map(\.deviceID) == ["d3"])
            // d2 answered with its update token.
            try store.writeNow { session throws in
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: "d2", token: "u2", environment: .sandbox, now: Fixture.at(7))
            }
            #expect(try store.writeNow {
                try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(4), now: Fixture.at(8), limit: 10)
            }.isEmpty)
            let reported = try store.writeNow {
                try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(6), now: Fixture.at(8), limit: 10)
            }
            #expect(reported.map(\.deviceID) == ["d1"])
            #expect(reported.first?.apnsID == APNsMessageID.derived(sendID: sendID, deviceID: "d1"))
            #expect(reported.first?.sentAt == Fixture.at(5))
            #expect(try store.writeNow {
                try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(60), now: Fixture.at(60), limit: 10)
            }.isEmpty)
            // Once d3's window settled, d3 is reported; d4 waits for its own.
            try settle(store, second, at: 61)
            let later = try store.writeNow {
                try $0.claimUnconfirmedStarts(sentBefore: Fixture.at(70), now: Fixture.at(70), limit: 10)
            }
            #expect(later.map(\.deviceID) == ["d3"])
        }
    }
}
