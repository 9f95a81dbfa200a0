import Foundation
import IsletCore
import Storage
import Testing

/// An app's overview: each send counted once in the bucket of its making, with its
/// windows' counters and the rows of what differed; failures by reason; taps by
/// their own time; another app's and another period's left out.
@Suite("Store contract: an app's overview")
struct OverviewContractTests {
    /// Activity `a1` with copies on d1, d2 and d3 holding update tokens, and two
    /// updates by windows: at 10 s (all sent, d1's receipt) and at 70 s (d2 fails
    /// with BadDeviceToken); a tap at 75 s.
    private func prepare(_ store: any Store) throws {
        try store.writeNow { session in
            try session.insertApp(Fixture.app())
            try session.insertActivity(
                appID: "app_1", activityID: "a1", activityType: "Match", origin: .remote, attributes: nil,
                contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: Fixture.t0)
            try session.insertPendingCopies(
                appID: "app_1", activityID: "a1",
                targets: [Fixture.target("d1", "s1"), Fixture.target("d2", "s2"), Fixture.target("d3", "s3")], now: Fixture.t0)
            for device in ["d1", "d2", "d3"] {
                _ = try session.registerUpdateToken(
                    appID: "app_1", activityID: "a1", deviceID: device, token: "u" + device.dropFirst(),
                    environment: .sandbox, now: Fixture.t0)
            }
            for seconds in [10.0, 70.0] {
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
                if seconds == 70 {
                    let failing = try #require(claimed.first { $0.deviceID == "d2" })
                    _ = try session.recordWindowOutcome(
                        failing, PushOutcome(status: .failed, attempts: 1, apnsStatus: 400, reason: "BadDeviceToken"),
                        by: "node-1", now: Fixture.at(seconds))
                    tally.sent = claimed.count - 1
                    tally.exceptions = 1
                } else {
                    tally.sent = claimed.count
                }
                try session.settleWindow(claimed[0].window!, tally, by: "node-1", now: Fixture.at(seconds))
                if seconds == 10 {
                    _ = try session.recordReceipt(
                        appID: "app_1", activityID: "a1", deviceID: "d1", sendID: id, receivedAt: Fixture.at(11),
                        now: Fixture.at(11))
                }
            }
            _ = try session.recordTap(
                appID: "app_1", activityID: "a1", deviceID: "d1", apnsID: nil, at: Fixture.at(75), sentBy: Fixture.at(75))
        }
    }

    @Test(arguments: StoreBackend.all)
    func eachSendCountsOnceInItsBucketWithItsFailuresByReason(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try prepare(store)
            let overview = try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.t0, to: Fixture.at(180), bucketSeconds: 60)
            }
            #expect(overview.buckets.map(\.start) == [Fixture.t0, Fixture.at(60), Fixture.at(120)])
            let first = overview.buckets[0]
            #expect([first.sends, first.targets, first.delivered, first.failed, first.received, first.taps] == [1, 3, 3, 0, 1, 0])
            let second = overview.buckets[1]
            #expect([second.sends, second.targets, second.delivered, second.failed, second.received, second.taps] == [1, 3, 2, 1, 0, 1])
            #expect(overview.buckets[2] == OverviewBucket(start: Fixture.at(120)))
            #expect(overview.failures == [OverviewFailure(reason: "BadDeviceToken", count: 1)])

            // A period that holds only the second send, and one of another app.
            let later = try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.at(60), to: Fixture.at(120), bucketSeconds: 3_600)
            }
            #expect(later.buckets.count == 1 && later.buckets[0].sends == 1 && later.buckets[0].failed == 1)
            let other = try store.readNow {
                try $0.overview(appID: "app_2", from: Fixture.t0, to: Fixture.at(180), bucketSeconds: 60)
            }
            #expect(other.buckets.allSatisfy { $0.sends == 0 && $0.taps == 0 } && other.failures.isEmpty)
            // An empty or backward period has no bucket; a bucket of 0 s is one of 1 s.
            #expect(try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.at(60), to: Fixture.at(10), bucketSeconds: 60)
            }.buckets.isEmpty)
            #expect(try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.at(10), to: Fixture.at(13), bucketSeconds: 0)
            }.buckets.map(\.sends) == [1, 0, 0])
        }
    }

    @Test(arguments: StoreBackend.all)
    func refusalsDeadTokensAndFailingWebhooksShowInTheirBuckets(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                // Two nodes' counts of the same minute add up; another app's stay apart.
                try session.addRefusals(
                    [RefusalCount(appID: "app_1", minute: Fixture.at(60), count: 3),
                     RefusalCount(appID: "app_2", minute: Fixture.at(60), count: 7)], forgetBefore: Fixture.t0)
                try session.addRefusals(
                    [RefusalCount(appID: "app_1", minute: Fixture.at(60), count: 2),
                     RefusalCount(appID: "app_1", minute: Fixture.t0, count: 1)], forgetBefore: Fixture.t0)
                try session.appendEvents([
                    NewEvent(appID: "app_1", type: .tokenRejected, activityID: nil, occurredAt: Fixture.at(130), data: [:]),
                    NewEvent(appID: "app_1", type: .deviceUnreachable, activityID: nil, occurredAt: Fixture.at(130), data: [:]),
                    NewEvent(appID: "app_2", type: .tokenRejected, activityID: nil, occurredAt: Fixture.at(130), data: [:]),
                ])
                var failing = WebhookPageContractTests.webhook("wh_a", at: 1)
                failing.failingSince = Fixture.at(100)
                try session.insertWebhook(failing)
                var disabled = WebhookPageContractTests.webhook("wh_b", at: 2)
                disabled.enabled = false
                disabled.disabledReason = "failing_for_days"
                try session.insertWebhook(disabled)
                try session.insertWebhook(WebhookPageContractTests.webhook("wh_c", at: 3))
            }
            let overview = try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.t0, to: Fixture.at(180), bucketSeconds: 60)
            }
            #expect(overview.buckets.map(\.refused) == [1, 5, 0])
            #expect(overview.buckets.map(\.deadTokens) == [0, 0, 1])
            #expect(overview.failingWebhooks.map(\.webhookID) == ["wh_a", "wh_b"])
            #expect(overview.failingWebhooks.map(\.enabled) == [true, false])
            #expect(overview.failingWebhooks.first?.failingSince == Fixture.at(100))
            #expect(overview.failingWebhooks.last?.disabledReason == "failing_for_days")
            // Minutes before the cutoff are forgotten at the next add.
            try store.writeNow { try $0.addRefusals([], forgetBefore: Fixture.at(60)) }
            let later = try store.readNow {
                try $0.overview(appID: "app_1", from: Fixture.t0, to: Fixture.at(180), bucketSeconds: 60)
            }
            #expect(later.buckets.map(\.refused) == [0, 5, 0])
        }
    }
}
