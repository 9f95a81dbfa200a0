public import Foundation
public import Storage

extension SQLSession {
    private static let sessionColumns: SQL = "token_hash, scope, app_id, key_hash, csrf_token, created_at, expires_at"

    /// Adds a session; `conflict` when its token hash is taken.
    public func insertSession(_ session: SessionRecord) throws {
        try recoveringFromConflict { try run(
            """
            INSERT INTO dashboard_sessions (\(sql: Self.sessionColumns))
            VALUES (\(session.tokenHash), \(session.scope.rawValue), \(session.appID), \(session.keyHash),
                \(session.csrfToken), \(session.createdAt.unixMilliseconds), \(session.expiresAt.unixMilliseconds))
            """) }
    }

    /// The session whose token hashes to `tokenHash`, expired or not.
    public func session(tokenHash: Data) throws -> SessionRecord? {
        try query("SELECT \(sql: Self.sessionColumns) FROM dashboard_sessions WHERE token_hash = \(tokenHash)")
            .first.map { row in
                SessionRecord(
                    tokenHash: row["token_hash"].blob ?? Data(), scope: try row.enumValue("scope", as: SessionScope.self),
                    appID: row.optionalString("app_id"), keyHash: row["key_hash"].blob,
                    csrfToken: try row.string("csrf_token"), createdAt: try row.date("created_at"),
                    expiresAt: try row.date("expires_at"))
            }
    }

    /// Removes a session. Answers whether there was one.
    @discardableResult
    public func deleteSession(tokenHash: Data) throws -> Bool {
        try run("DELETE FROM dashboard_sessions WHERE token_hash = \(tokenHash)") > 0
    }

    /// Removes every session. Answers how many there were.
    @discardableResult
    public func deleteAllSessions() throws -> Int {
        try run("DELETE FROM dashboard_sessions")
    }

    /// Removes every session that expired at or before `now`. Answers how many.
    @discardableResult
    public func deleteExpiredSessions(now: Date) throws -> Int {
        try run("DELETE FROM dashboard_sessions WHERE expires_at <= \(now.unixMilliseconds)")
    }
}
