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

    /// Creates an answer.
    public init(requestHash: Data, status: Int, body: Data, createdAt: Date) {
        self.requestHash = requestHash
        self.status = status
        self.body = body
        self.createdAt = createdAt
    }
}
