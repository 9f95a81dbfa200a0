import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: pages of webhooks and their count")
struct WebhookPageContractTests {
    static func webhook(_ id: String, app: String = "app_1", at seconds: Double) -> WebhookRecord {
        WebhookRecord(
            webhookID: id, appID: app, url: "https://hooks.example.com/\(id)", events: ["*"], description: nil,
            secret: "whsec_c2VjcmV0", cursor: 0, createdAt: Fixture.at(seconds), updatedAt: Fixture.at(seconds))
    }

    @Test(arguments: StoreBackend.all)
    func webhooksAreListedInPagesOldestFirstAndCounted(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session in
                try session.insertApp(Fixture.app())
                try session.insertApp(Fixture.app("app_2"))
                #expect(try session.lockedWebhookCount(appID: "app_1") == 0)
                // Two made in the same millisecond are ordered by id.
                for (id, seconds) in [("wh_c", 2.0), ("wh_a", 1.0), ("wh_e", 3.0), ("wh_b", 2.0), ("wh_d", 4.0)] {
                    try session.insertWebhook(Self.webhook(id, at: seconds))
                }
                try session.insertWebhook(Self.webhook("wh_f", app: "app_2", at: 1))
                #expect(try session.lockedWebhookCount(appID: "app_1") == 5)
                #expect(try session.lockedWebhookCount(appID: "app_2") == 1)
                #expect(try session.lockedWebhookCount(appID: "app_3") == 0)
            }
            try store.readNow { session in
                let order = ["wh_a", "wh_b", "wh_c", "wh_e", "wh_d"]
                #expect(try session.webhooks(appID: "app_1", after: nil, limit: 10).map(\.webhookID) == order)
                let first = try session.webhooks(appID: "app_1", after: nil, limit: 2)
                #expect(first.map(\.webhookID) == ["wh_a", "wh_b"])
                let last = try #require(first.last)
                let second = try session.webhooks(
                    appID: "app_1", after: WebhookCursor(createdAt: last.createdAt, webhookID: last.webhookID), limit: 2)
                #expect(second.map(\.webhookID) == ["wh_c", "wh_e"])
                // A cursor whose webhook is gone still knows where it stands.
                let gone = WebhookCursor(createdAt: Fixture.at(2), webhookID: "wh_bb")
                #expect(try session.webhooks(appID: "app_1", after: gone, limit: 10).map(\.webhookID) == ["wh_c", "wh_e", "wh_d"])
                #expect(try session.webhooks(appID: "app_2", after: nil, limit: 10).map(\.webhookID) == ["wh_f"])
            }
        }
    }
}
