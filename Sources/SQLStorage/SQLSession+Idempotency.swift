public import Foundation
public import Storage

extension SQLSession {
    /// The answer stored for `key`, if it is younger than `since`.
    public func idempotentAnswer(appID: String, key: String, since: Date) throws -> IdempotentAnswer? {
        guard let row = try query(
            """
            SELECT request_hash, status, body, created_at FROM idempotency_keys
            WHERE app_id = \(appID) AND key = \(key) AND created_at >= \(since.unixMilliseconds)
            """).first
        else { return nil }
        return IdempotentAnswer(
            requestHash: row["request_hash"].blob ?? Data(), status: Int(try row.int64("status")),
            body: row["body"].blob ?? Data(), createdAt: try row.date("created_at"))
    }

    /// Stores the answer for `key`, replacing one older than `since`, in one
    /// statement; `conflict` when a younger answer is stored.
    public func saveIdempotentAnswer(appID: String, key: String, _ answer: IdempotentAnswer, replacingBefore since: Date) throws {
        let changed = try run(
            """
            INSERT INTO idempotency_keys (app_id, key, request_hash, status, body, created_at)
            VALUES (\(appID), \(key), \(answer.requestHash), \(answer.status), \(answer.body),
                \(answer.createdAt.unixMilliseconds))
            ON CONFLICT (app_id, key) DO UPDATE SET request_hash = excluded.request_hash, status = excluded.status,
                body = excluded.body, created_at = excluded.created_at
            WHERE idempotency_keys.created_at < \(since.unixMilliseconds)
            """)
        guard changed > 0 else {
            throw StoreError(.conflict, "idempotency key \(key) already has an answer")
        }
    }

    /// Forgets answers older than `before`. Answers how many.
    @discardableResult
    public func purgeIdempotentAnswers(before: Date) throws -> Int {
        try run("DELETE FROM idempotency_keys WHERE created_at < \(before.unixMilliseconds)")
    }
}
