import Foundation
import IsletKit

// The IsletKit snippets of docs/isletkit.md that need no Apple framework, compiled here
// as they are shown there (ReadmeSnippetTests checks that the page shows each one as it
// is here). ActivityKit's protocol stands in for itself where it does not exist: the
// snippets conform to it, and here that means Codable and Hashable, as
// ActivityAttributes asks of its type and of its ContentState.
#if !canImport(ActivityKit)
typealias ActivityAttributes = Codable & Hashable
#endif

struct DeliveryAttributes: ActivityAttributes, IsletActivityAttributes {
    struct ContentState: Codable, Hashable, IsletReceiptCarrying {
        var status: String
        var eta: Int
        var islet: IsletStamp?
    }

    var order: String
    var isletActivityID: String?

    enum CodingKeys: String, CodingKey {
        case order
        case isletActivityID = "islet_activity_id"
    }
}

func orderLink(_ attributes: DeliveryAttributes) -> URL {
    IsletTapURL.url(URL(string: "deliveries://orders/\(attributes.order)")!, activityID: attributes.isletActivityID ?? "")
}

func open(_ url: URL, islet: (any IsletClient)?) async -> URL {
    guard let islet else { return Islet.handle(url) }
    return await islet.handle(url)
}

func supportLines(_ islet: any IsletClient) async -> [String] {
    let snapshot = await islet.diagnostics()
    return [
        "device \(snapshot.deviceID), registered: \(snapshot.registered)",
        "uploads waiting: \(snapshot.outboxLength)",
        "last error: \(snapshot.lastError ?? "none")",
    ]
}

func resetWhenRefused(_ islet: any IsletClient, newSecret: @escaping () async throws -> String) async {
    for await event in islet.events {
        if case .secretRefused = event, let secret = try? await newSecret() {
            await islet.useDeviceSecret(secret)
        }
    }
}
