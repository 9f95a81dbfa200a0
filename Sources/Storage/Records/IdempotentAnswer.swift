public import Foundation

/// The first answer to a request with an `Idempotency-Key`.
public struct IdempotentAnswer: Sendable, Hashable {
    /// SHA-256 of the request's method, path and body.
    public var requestHash: Data
    /// The status answered.
    public var status: Int
    /// The body answered.
    public var body: Data
    /// When it was answered.
    public var createdAt: Date
    /// Whether the body holds a secret (a device's, shown once): the store seals it
    /// with its secrets key, as it does credentials, and opens it when read back.
    public var sealed: Bool

    /// Creates an answer.
    public init(requestHash: Data, status: Int, body: Data, createdAt: Date, sealed: Bool = false) {
        self.requestHash = requestHash
        self.status = status
        self.body = body
        self.createdAt = createdAt
        self.sealed = sealed
    }
}
