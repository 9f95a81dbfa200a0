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
        var body = row["body"].blob ?? Data()
        var sealed = false
        if let secrets, let text = String(data: body, encoding: .utf8), secrets.isSealed(text) {
            guard let plain = try? secrets.open(text) else {
                throw StoreError(.secretsKeyMismatch, "the stored answer of idempotency key \(key) does not open with the secrets key")
            }
            body = Data(plain.utf8)
            sealed = true
        }
        return IdempotentAnswer(
            requestHash: row["request_hash"].blob ?? Data(), status: Int(try row.int64("status")), body: body,
            createdAt: try row.date("created_at"), sealed: sealed)
    }

    /// Stores the answer for `key`, replacing one older than `since`, in one
    /// statement; `conflict` when a younger answer is stored.
    public func saveIdempotentAnswer(appID: String, key: String, _ answer: IdempotentAnswer, replacingBefore since: Date) throws {
        var body = answer.body
        if answer.sealed, let secrets {
            do {
                body = Data(try secrets.seal(String(decoding: answer.body, as: UTF8.self)).utf8)
            } catch {
                throw StoreError(.unavailable, "cannot seal the answer of idempotency key \(key): \(error)")
            }
        }
        let changed = try run(
            """
            INSERT INTO idempotency_keys (app_id, key, request_hash, status, body, created_at)
            VALUES (\(appID), \(key), \(answer.requestHash), \(answer.status), \(body),
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
