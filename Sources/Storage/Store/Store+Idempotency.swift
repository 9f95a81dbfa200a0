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

extension StoreSession {
    /// The answer stored for `key`, if it is younger than `since`.
    public func idempotentAnswer(appID: String, key: String, since: Date) throws -> IdempotentAnswer? {
        guard let row = try query(
            "SELECT request_hash, status, body, created_at FROM idempotency_keys WHERE app_id = ? AND key = ? AND created_at >= ?",
            [appID, key, since.unixMilliseconds]).first
        else { return nil }
        return IdempotentAnswer(
            requestHash: row["request_hash"].blob ?? Data(), status: Int(try row.int64("status")),
            body: row["body"].blob ?? Data(), createdAt: try row.date("created_at"))
    }

    /// Stores the answer for `key`, replacing an expired one.
    public func saveIdempotentAnswer(appID: String, key: String, _ answer: IdempotentAnswer) throws {
        try run(
            """
            INSERT INTO idempotency_keys (app_id, key, request_hash, status, body, created_at) VALUES (?, ?, ?, ?, ?, ?)
            ON CONFLICT (app_id, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
                body = excluded.body, created_at = excluded.created_at
            """, [appID, key, answer.requestHash, answer.status, answer.body, answer.createdAt.unixMilliseconds])
    }

    /// Forgets answers older than `before`. Answers how many.
    @discardableResult
    public func purgeIdempotentAnswers(before: Date) throws -> Int {
        try run("DELETE FROM idempotency_keys WHERE created_at < ?", [before.unixMilliseconds])
    }
}
