import Foundation
import IsletCore
import IsletTesting
import SQLiteStorage
import Storage
import Testing

/// A claim of webhook deliveries costs the same however many deliveries the webhook
/// has recorded before: measured in SQLite's virtual-machine steps (its own count of
/// a statement's work, the same on a busy machine as on an idle one), not in time.
/// A claim first hands back deliveries whose lease ran out, then picks the due ones
/// that no earlier open delivery of their key holds back; either, done without its
/// index, reads every delivery the webhook ever had.
@Suite("SQLite: a queue's statements do not grow with its history")
struct QueueStatementCostTests {
    @Test func aWebhookClaimCostsTheSameAfterAThousandFinishedDeliveries() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("islet.sqlite").path
            try await withOpenedStore({ try SQLiteStore(path: path) }) { opened in
                let store = try #require(opened as? SQLiteStore)
                try store.writeNow { session in
                    try session.insertApp(Fixture.app())
                    try session.insertWebhook(WebhookRecord(
                        webhookID: "wh_1", appID: "app_1", url: "https://hooks.example.com/wh_1", events: ["*"],
                        description: nil, secret: "whsec_c2VjcmV0", cursor: 0, createdAt: Fixture.at(1),
                        updatedAt: Fixture.at(1)))
                }
                var clock = 10.0

                /// Adds `count` deliveries of activity a1's events and settles them
                /// (claimed, then recorded as sent); answers the steps the claim took,
                /// its transaction alone on the writer's connection.
                @discardableResult
                func settle(_ count: Int) throws -> Int {
                    try store.writeNow { session in
                        try session.appendEvents((0..<count).map { _ in
                            NewEvent(appID: "app_1", type: .pushSent, activityID: "a1", occurredAt: Fixture.at(clock), data: [:])
                        })
                    }
                    try store.writeNow { session in
                        let latest = try session.latestEventSequence()
                        let cursor = try #require(try session.webhook(appID: "app_1", webhookID: "wh_1")).cursor
                        let events = try session.events(appID: "app_1", after: cursor, patterns: [], limit: count)
                        try session.addDeliveries(webhookID: "wh_1", appID: "app_1", events: events, cursor: latest, now: Fixture.at(clock))
                    }
                    _ = try store.database.withConnection { $0.virtualMachineSteps() }
                    let claimed = try store.writeNow { session in
                        try session.claimDueDeliveries(
                            now: Fixture.at(clock), limit: count, nodeID: "n1", leaseUntil: Fixture.at(clock + 60))
                    }
                    let steps = try store.database.withConnection { $0.virtualMachineSteps() }
                    #expect(claimed.count == count)
                    try store.writeNow { session in
                        for item in claimed {
                            try session.recordAttempt(
                                deliverySequence: item.delivery.sequence,
                                WebhookAttempt(status: .succeeded, responseStatus: 200, error: nil, durationMilliseconds: 1, nextAttemptAt: nil),
                                nodeID: "n1", now: Fixture.at(clock))
                        }
                    }
                    clock += 1
                    return steps
                }

                try settle(10)
                let before = try settle(10)
                try settle(2_000)
                let after = try settle(10)
                // Either statement without its index reads the 2,000 finished
                // deliveries, several steps a row.
                #expect(before > 0)
                #expect(after < before * 2, "a claim took \(before) steps after 10 deliveries, \(after) after 2,010")
            }
        }
    }
}
