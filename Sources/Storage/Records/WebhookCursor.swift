public import Foundation

/// Where a page of an app's webhooks (oldest first) resumes: after the webhook
/// created at `createdAt` with id `webhookID`.
public struct WebhookCursor: Sendable, Hashable {
    /// The last listed webhook's creation time (to the millisecond, as stored).
    public var createdAt: Date
    /// Its id.
    public var webhookID: String

    /// A cursor after the webhook created at `createdAt` with id `webhookID`.
    public init(createdAt: Date, webhookID: String) {
        self.createdAt = createdAt
        self.webhookID = webhookID
    }
}
