public import Foundation
public import Storage

extension SQLSession {
    /// The bucket of `appID`'s `family`, its row locked on PostgreSQL until the
    /// transaction ends (SQLite's one writer holds it already).
    public func lockedRateBucket(appID: String, family: String) throws -> (tokens: Double, updatedAt: Date)? {
        let lock: SQL = dialect == .postgresql ? " FOR UPDATE" : ""
        guard let row = try query(
            """
            SELECT tokens, updated_at FROM rate_buckets WHERE app_id = \(appID) AND family = \(family)\(sql: lock)
            """).first
        else { return nil }
        guard let tokens = row["tokens"].real ?? row["tokens"].integer.map(Double.init) else {
            throw StoreError(.corrupt, "column tokens is not a number")
        }
        return (tokens, try row.date("updated_at"))
    }

    /// Stores the bucket of `appID`'s `family`.
    public func saveRateBucket(appID: String, family: String, tokens: Double, updatedAt: Date) throws {
        try run(
            """
            INSERT INTO rate_buckets (app_id, family, tokens, updated_at)
            VALUES (\(appID), \(family), \(tokens), \(updatedAt.unixMilliseconds))
            ON CONFLICT (app_id, family) DO UPDATE SET tokens = excluded.tokens, updated_at = excluded.updated_at
            """)
    }

    /// Adds each app's refusals of a minute to its stored count, then forgets the
    /// minutes before `forgetBefore`.
    public func addRefusals(_ counts: [RefusalCount], forgetBefore: Date) throws {
        for count in counts where count.count > 0 {
            try run(
                """
                INSERT INTO rate_refusals (app_id, minute, refused)
                VALUES (\(count.appID), \(count.minute.unixMilliseconds), \(count.count))
                ON CONFLICT (app_id, minute) DO UPDATE SET refused = rate_refusals.refused + excluded.refused
                """)
        }
        try run("DELETE FROM rate_refusals WHERE minute < \(forgetBefore.unixMilliseconds)")
    }
}
