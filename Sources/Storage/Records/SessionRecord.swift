public import Foundation

/// A signed-in dashboard session as stored: only the SHA-256 hash of its token, who
/// it speaks for, the CSRF token its changes must carry, and when it ends.
public struct SessionRecord: Sendable, Hashable {
    /// SHA-256 of the session token (the cookie's value); the token itself is never stored.
    public var tokenHash: Data
    /// Whom the session speaks for.
    public var scope: SessionScope
    /// The app of an app session; `nil` for an admin session.
    public var appID: String?
    /// The hash of the server key an app session was made with: once the app's keys
    /// are rotated it no longer matches, and the session is dead.
    public var keyHash: Data?
    /// The token every change made with the session must carry in `X-CSRF-Token`.
    public var csrfToken: String
    /// When it was made.
    public var createdAt: Date
    /// When it stops working.
    public var expiresAt: Date

    /// Creates a record.
    public init(
        tokenHash: Data, scope: SessionScope, appID: String?, keyHash: Data?, csrfToken: String, createdAt: Date,
        expiresAt: Date
    ) {
        self.tokenHash = tokenHash
        self.scope = scope
        self.appID = appID
        self.keyHash = keyHash
        self.csrfToken = csrfToken
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}

/// Whom a dashboard session speaks for.
public enum SessionScope: String, Sendable, Hashable, CaseIterable {
    /// Made with the admin token: every app.
    case admin
    /// Made with one app's server key: that app alone.
    case app
}
