import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: events and webhooks")
struct EventContractTests {
    static func event(_ type: EventType, app: String = "app_1", activity: String? = "a1", at seconds: Double) -> NewEvent {
        NewEvent(appID: app, type: type, activityID: activity, occurredAt: Fixture.at(seconds), data: ["n": .double(seconds)])
    }

    static func webhook(_ id: String, events: [String] = ["*"], cursor: Int64 = 0) -> WebhookRecord {
        WebhookRecord(
            webhookID: id, appID: "app_1", url: "https://hooks.example.com/\(id)", events: events, description: nil,
            secret: "whsec_c2VjcmV0", cursor: cursor, createdAt: Fixture.at(1), updatedAt: Fixture.at(1))
    }

    @Test(arguments: StoreBackend.all)
    func eventsAreWrittenAtCommitAndReadInOrderByAppAndPattern(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.appendEvents([Self.event(.activityStarted, at: 1), Self.event(.pushSent, at: 2)])
                // Written when the transaction commits, not before.
                #expect(try session.latestEventSequence() == 0)
            }
            // A transaction that rolls back writes none.
            #expect(throws: StoreError.self) {
                try store.writeNow { session in
                    try session.appendEvents([Self.event(.pushFailed, at: 3)])
                    throw StoreError(.conflict, "rolled back on purpose")
                }
            }
            try store.writeNow { session in
                try session.appendEvents([
                    Self.event(.activityEnded, at: 4), Self.event(.pushDropped, app: "app_2", activity: nil, at: 5),
                ])
            }
            try store.readNow { session in
                let all = try session.events(appID: nil, after: 0, patterns: [], limit: 10)
                #expect(all.map(\.type) == ["activity.started", "push.sent", "activity.ended", "push.dropped"])
                #expect(all.map(\.sequence) == all.map(\.sequence).sorted())
                #expect(try session.latestEventSequence() == all.last?.sequence)
                let mine = try session.events(appID: "app_1", after: 0, patterns: [], limit: 10)
                #expect(mine.count == 3 && mine[0].data == ["n": .double(1)] && mine[0].occurredAt == Fixture.at(1))
                #expect(mine[0].activityID == "a1")
                let activity = try session.events(appID: "app_1", after: 0, patterns: [EventPattern("activity.*")!], limit: 10)
                #expect(activity.map(\.type) == ["activity.started", "activity.ended"])
                let two = try session.events(
                    appID: "app_1", after: mine[0].sequence, patterns: [EventPattern("push.sent")!, EventPattern("activity.ended")!],
                    limit: 1)
                #expect(two.map(\.type) == ["push.sent"])
                #expect(try session.event(appID: "app_1", sequence: mine[1].sequence)?.type == "push.sent")
                #expect(try session.event(appID: "app_2", sequence: mine[1].sequence) == nil)
            }
            // Retention: older than the cutoff goes.
            #expect(try store.writeNow { try $0.purgeEvents(before: Fixture.at(3), limit: 10) } == 2)
            #expect(try store.readNow { try $0.events(appID: nil, after: 0, patterns: [], limit: 10) }.map(\.type) == ["activity.ended", "push.dropped"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func deliveriesAreClaimedInChainsAndRecorded(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let events = try store.writeNow { session -> [EventRecord] in
                try session.insertApp(Fixture.app())
                try session.insertWebhook(Self.webhook("wh_1"))
                try session.insertWebhook(Self.webhook("wh_2", events: ["push.*"]))
                try session.appendEvents([
                    Self.event(.activityStarted, at: 1), Self.event(.activityUpdated, at: 2),
                    Self.event(.activityStarted, activity: "a2", at: 3), Self.event(.deviceUnreachable, activity: nil, at: 4),
                ])
                return []
            } + (try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 10) })
            let latest = try #require(events.last?.sequence)
            try store.writeNow { session in
                #expect(Set(try session.webhooksBehind(latest).map(\.webhookID)) == ["wh_1", "wh_2"])
                try session.addDeliveries(webhookID: "wh_1", appID: "app_1", events: events, cursor: latest, now: Fixture.at(10))
                try session.addDeliveries(webhookID: "wh_2", appID: "app_1", events: [], cursor: latest, now: Fixture.at(10))
                #expect(try session.webhooksBehind(latest).isEmpty)
                #expect(try session.nextDeliveryTime() == Fixture.at(10))
            }
            // The first a1 delivery fails; the second waits behind it, a2 and the
            // device event go on.
            let claimed = try store.writeNow { session in
                try session.claimDueDeliveries(now: Fixture.at(10), limit: 10, nodeID: "n1", leaseUntil: Fixture.at(70))
            }
            #expect(claimed.map(\.event.type) == ["activity.started", "activity.updated", "activity.started", "device.unreachable"])
            #expect(claimed[0].url == "https://hooks.example.com/wh_1" && claimed[0].secrets == ["whsec_c2VjcmV0"])
            #expect(try store.writeNow { try $0.claimDueDeliveries(now: Fixture.at(10), limit: 10, nodeID: "n2", leaseUntil: Fixture.at(70)) }.isEmpty)
            try store.writeNow { session in
                #expect(try session.recordAttempt(
                    deliverySequence: claimed[0].delivery.sequence,
                    WebhookAttempt(status: .pending, responseStatus: 500, error: "500", durationMilliseconds: 4, nextAttemptAt: Fixture.at(20)),
                    nodeID: "n1", now: Fixture.at(11)))
                try session.releaseDeliveries([claimed[1].delivery.sequence], nodeID: "n1")
                for item in claimed[2...] {
                    try session.recordAttempt(
                        deliverySequence: item.delivery.sequence,
                        WebhookAttempt(status: .succeeded, responseStatus: 200, error: nil, durationMilliseconds: 2, nextAttemptAt: nil),
                        nodeID: "n1", now: Fixture.at(11))
                }
                // Another node's record changes nothing.
                #expect(try !session.recordAttempt(
                    deliverySequence: claimed[2].delivery.sequence,
                    WebhookAttempt(status: .failed, responseStatus: 500, error: "late", durationMilliseconds: 2, nextAttemptAt: nil),
                    nodeID: "n2", now: Fixture.at(12)))
            }
            // Before the retry is due, nothing of a1 is taken.
            #expect(try store.writeNow { try $0.claimDueDeliveries(now: Fixture.at(15), limit: 10, nodeID: "n1", leaseUntil: Fixture.at(75)) }.isEmpty)
            let again = try store.writeNow { try $0.claimDueDeliveries(now: Fixture.at(20), limit: 10, nodeID: "n1", leaseUntil: Fixture.at(80)) }
            #expect(again.map(\.delivery.sequence) == [claimed[0].delivery.sequence, claimed[1].delivery.sequence])
            #expect(again[0].delivery.attempts == 1 && again[1].delivery.attempts == 0)
            // A claim whose lease ran out is taken again.
            let taken = try store.writeNow { try $0.claimDueDeliveries(now: Fixture.at(81), limit: 10, nodeID: "n2", leaseUntil: Fixture.at(140)) }
            #expect(taken.count == 2)
            let page = try store.readNow { try $0.deliveries(appID: "app_1", webhookID: "wh_1", before: nil, limit: 3) }
            #expect(page.map(\.sequence) == page.map(\.sequence).sorted(by: >) && page.count == 3)
            let succeeded = try #require(try store.readNow { try $0.delivery(appID: "app_1", webhookID: "wh_1", sequence: claimed[2].delivery.sequence) })
            #expect(succeeded.status == .succeeded && succeeded.responseStatus == 200 && succeeded.attempts == 1)
            #expect(succeeded.lastAttemptAt == Fixture.at(11) && succeeded.durationMilliseconds == 2)
            // Retry: pending again unless being sent; deleting a webhook drops its deliveries.
            #expect(try store.writeNow { try $0.retryDelivery(appID: "app_1", webhookID: "wh_1", sequence: claimed[2].delivery.sequence, now: Fixture.at(90)) })
            #expect(try !store.writeNow { try $0.retryDelivery(appID: "app_1", webhookID: "wh_1", sequence: claimed[0].delivery.sequence, now: Fixture.at(90)) })
            #expect(try store.writeNow { try $0.failPendingDeliveries(webhookID: "wh_1", reason: "disabled", now: Fixture.at(91)) } == 1)
            #expect(try store.writeNow { try $0.deleteWebhook(appID: "app_1", webhookID: "wh_1") })
            #expect(try store.readNow { try $0.deliveries(appID: "app_1", webhookID: "wh_1", before: nil, limit: 10) }.isEmpty)
            #expect(try !store.writeNow { try $0.deleteWebhook(appID: "app_1", webhookID: "wh_1") })
        }
    }

    @Test(arguments: StoreBackend.all)
    func webhooksAreListedByAppAndTheirSettingsReplaced(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                try session.insertWebhook(Self.webhook("wh_1"))
                try session.insertWebhook(Self.webhook("wh_2", events: ["push.*"]))
                var elsewhere = Self.webhook("wh_3")
                elsewhere.appID = "app_2"
                try session.insertWebhook(elsewhere)
            }
            try store.readNow { session throws in
                #expect(try session.webhooks(appID: "app_1").map(\.webhookID) == ["wh_1", "wh_2"])
                #expect(try session.webhooks(appID: "app_2").map(\.webhookID) == ["wh_3"])
                #expect(try session.webhooks(appID: "app_9").isEmpty)
            }
            var changed = try #require(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_2") })
            changed.url = "https://hooks.example.com/moved"
            changed.events = ["activity.*", "device.unreachable"]
            changed.description = "moved"
            changed.previousSecret = changed.secret
            changed.previousSecretUntil = Fixture.at(500)
            changed.secret = "whsec_bmV3c2VjcmV0"
            changed.enabled = false
            changed.disabledReason = "failing for a day"
            changed.failingSince = Fixture.at(100)
            changed.updatedAt = Fixture.at(200)
            try store.writeNow { try $0.updateWebhook(changed) }
            let read = try #require(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_2") })
            #expect(read == changed)
            // A success stops an enabled webhook's failure clock, once; a disabled
            // webhook's clock stays as it was.
            #expect(try store.writeNow { try $0.clearWebhookFailure(appID: "app_1", webhookID: "wh_2", now: Fixture.at(300)) } == false)
            changed.enabled = true
            try store.writeNow { try $0.updateWebhook(changed) }
            #expect(try store.writeNow { try $0.clearWebhookFailure(appID: "app_2", webhookID: "wh_2", now: Fixture.at(300)) } == false)
            #expect(try store.writeNow { try $0.clearWebhookFailure(appID: "app_1", webhookID: "wh_2", now: Fixture.at(300)) })
            var cleared = changed
            cleared.failingSince = nil
            cleared.updatedAt = Fixture.at(300)
            #expect(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_2") } == cleared)
            #expect(try store.writeNow { try $0.clearWebhookFailure(appID: "app_1", webhookID: "wh_2", now: Fixture.at(400)) } == false)
            #expect(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_2") } == cleared)
            // The other webhooks keep theirs, and another app's id reads nothing.
            #expect(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_1") } == Self.webhook("wh_1"))
            #expect(try store.readNow { try $0.webhook(appID: "app_2", webhookID: "wh_2") } == nil)
        }
    }
}
