public import Foundation
import IsletCore
import IsletCrypto
import IsletLog
public import Storage

/// The dashboard's sessions and their rules: who may sign in (the admin token, or
/// an app's server key for that app alone), how long a session lasts, what it may
/// call, and the CSRF token every change made with it must carry. Sessions live in
/// the database as the SHA-256 hash of their token, so that every node knows them.
/// A session is bound to the hash of what signed it in: an app session dies when the
/// app's keys are rotated, an admin session when the admin token changes.
public final class SessionService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = AppStore & SessionStore

    private let environment: ServiceEnvironment
    private let apps: AppService
    /// How long a session lasts from its sign-in.
    public let lifetime: TimeInterval
    /// Sign-in attempts per client address.
    private let signIns: SignInLimiter?

    /// Creates the service; sessions last `lifetime` seconds, and sign-ins are
    /// counted per client address by `signIns` (nil: not limited).
    public init(environment: ServiceEnvironment, apps: AppService, lifetime: TimeInterval, signIns: SignInLimiter? = nil) {
        self.environment = environment
        self.apps = apps
        self.lifetime = lifetime
        self.signIns = signIns
    }

    /// Signs in with `key`: the admin token makes an admin session, an app's server
    /// key a session for that app alone; a device key is `forbidden`, anything else
    /// `unauthenticated`. Sessions that have expired are removed in the same
    /// transaction. Answers the new session's token (the cookie's value, 32 random
    /// bytes, shown only here) and what is stored of it. Every attempt counts
    /// against the sign-ins of `address` (the client's); past them it is `limited`
    /// before the key is looked at.
    public func signIn(key: String, from address: String? = nil) async throws(ServiceError) -> SignedIn {
        if let address, let signIns { try signIns.attempt(address) }
        let owner = try await apps.identify(key: key)
        let scope: SessionScope
        var appID: String?
        var keyHash: Data?
        switch owner {
        case .admin:
            scope = .admin
            keyHash = apps.adminTokenHash
        case .app(let app, .server):
            scope = .app
            appID = app.id
            keyHash = app.serverKeyHash
        case .app:
            throw ServiceError(.forbidden, "A device key cannot sign in to the dashboard; use the admin token or the app's server key.")
        }
        let token: String
        let csrf: String
        do {
            token = Base64URL.encode(try SecureRandom.bytes(32))
            csrf = Base64URL.encode(try SecureRandom.bytes(32))
        } catch {
            throw environment.domainError(error)
        }
        let now = environment.clock.now()
        let record = SessionRecord(
            tokenHash: Self.hash(token), scope: scope, appID: appID, keyHash: keyHash, csrfToken: csrf, createdAt: now,
            expiresAt: now.addingTimeInterval(lifetime))
        try await environment.write { (session: any Stores) in
            try session.deleteExpiredSessions(now: now)
            try session.insertSession(record)
        }
        environment.logger.notice(
            "dashboard sign-in", ("scope", .string(scope.rawValue)), ("app", .string(appID ?? "")))
        return SignedIn(token: token, session: record)
    }

    /// The live session whose token is `token`: `unauthenticated` when there is none,
    /// when it has expired, when it is an admin session signed in with another admin
    /// token than this node's, or when it is an app session whose app's keys were
    /// rotated (or whose app is gone) since it was made.
    public func session(token: String) async throws(ServiceError) -> SessionRecord {
        let hash = Self.hash(token)
        let now = environment.clock.now()
        let found = try await environment.read { (session: any Stores) -> (SessionRecord?, AppRecord?) in
            guard let record = try session.session(tokenHash: hash) else { return (nil, nil) }
            return (record, try record.appID.map { try session.app(id: $0) } ?? nil)
        }
        guard let record = found.0 else {
            throw ServiceError(.unauthenticated, "There is no such dashboard session; sign in again.")
        }
        guard record.expiresAt > now else {
            throw ServiceError(.unauthenticated, "The dashboard session has expired; sign in again.")
        }
        switch record.scope {
        case .admin:
            guard let keyHash = record.keyHash, Digest.constantTimeEquals(apps.adminTokenHash, keyHash) else {
                throw ServiceError(.unauthenticated, "The admin token changed since this session signed in; sign in again.")
            }
        case .app:
            guard let app = found.1, let keyHash = record.keyHash, Digest.constantTimeEquals(app.serverKeyHash, keyHash) else {
                throw ServiceError(.unauthenticated, "The app's keys were rotated since this session signed in; sign in again.")
            }
        }
        return record
    }

    /// Signs out: the session whose token is `token` is deleted (nothing when there
    /// is none). A live session signs out only with its CSRF token (`csrf`), so that
    /// another site cannot sign a user out; an expired or unknown one is simply
    /// forgotten.
    public func signOut(token: String, csrf: String?) async throws(ServiceError) {
        do {
            let live = try await session(token: token)
            try requireCSRF(live, method: "DELETE", token: csrf)
        } catch where error.code == .unauthenticated {
            // No live session: nothing to protect.
        }
        let hash = Self.hash(token)
        _ = try await environment.write { (session: any Stores) in try session.deleteSession(tokenHash: hash) }
    }

    /// Ends every dashboard session, admin and app alike (after a leaked token, say).
    /// Answers how many there were.
    public func endAll() async throws(ServiceError) -> Int {
        let ended = try await environment.write { (session: any Stores) in try session.deleteAllSessions() }
        environment.logger.notice("dashboard sessions ended", ("count", .int(ended)))
        return ended
    }

    /// Passes a request made with `session` when it changes nothing (`GET`, `HEAD`)
    /// or carries the session's CSRF token; otherwise `forbidden`, naming the
    /// `X-CSRF-Token` header.
    public func requireCSRF(_ session: SessionRecord, method: String, token: String?) throws(ServiceError) {
        if method == "GET" || method == "HEAD" { return }
        guard let token, !token.isEmpty else {
            throw ServiceError(
                .forbidden, "A change made with a dashboard session must carry the X-CSRF-Token header (the session's csrf_token).",
                fields: [.init(field: Self.csrfHeader, message: "is required")])
        }
        guard Digest.constantTimeEquals(Data(token.utf8), Data(session.csrfToken.utf8)) else {
            throw ServiceError(
                .forbidden, "The X-CSRF-Token header is not this dashboard session's csrf_token.",
                fields: [.init(field: Self.csrfHeader, message: "is not the session's csrf_token")])
        }
    }

    /// What `session` may call: an admin session the admin routes and the server
    /// routes of every app; an app session only its own app's server routes
    /// (another app is `notFound`, as for its key). Answers the app of a server
    /// route.
    public func authorize(_ session: SessionRecord, for access: SessionAccess) async throws(ServiceError) -> SessionCaller {
        switch (access, session.scope) {
        case (.admin, .admin):
            return .admin
        case (.admin, .app):
            throw ServiceError(.forbidden, "An app's dashboard session cannot manage apps; sign in with the admin token.")
        case (.server(let appID), .admin):
            return .app(try await apps.app(id: appID))
        case (.server(let appID), .app):
            guard session.appID == appID else { throw AppService.noApp(appID) }
            return .app(try await apps.app(id: appID))
        }
    }

    /// Passes a sign-in whose `Origin` (when the browser sent one) is one of
    /// `own`, the origins the server is reached at; a form posted from another
    /// site is `forbidden`, so that no page can sign its visitor in to an account
    /// of its choosing (login CSRF). Origins compare without case and without a
    /// trailing slash.
    public static func requireOwnOrigin(_ origin: String?, own: [String]) throws(ServiceError) {
        guard let origin else { return }
        let normal = { (text: String) in text.lowercased().hasSuffix("/") ? String(text.lowercased().dropLast()) : text.lowercased() }
        guard own.map(normal).contains(normal(origin)) else {
            throw ServiceError(
                .forbidden, "A sign-in must come from the dashboard's own origin, not \(origin.prefix(200)).",
                fields: [.init(field: "Origin", message: "is not this server's origin")])
        }
    }

    /// The header a change's CSRF token travels in.
    public static let csrfHeader = "X-CSRF-Token"

    /// What the store keeps of a session token.
    static func hash(_ token: String) -> Data { Digest.sha256(Data(token.utf8)) }
}

/// A new session: its token, shown once, and its record.
public struct SignedIn: Sendable {
    /// The session token (the cookie's value); the store keeps only its hash.
    public let token: String
    /// What is stored.
    public let session: SessionRecord
}

/// What a route a session calls needs.
public enum SessionAccess: Sendable, Hashable {
    /// The admin token's routes.
    case admin
    /// The server-key routes of the app `appID`.
    case server(appID: String)
}

/// Whom a session's request acts as.
public enum SessionCaller: Sendable {
    /// The admin.
    case admin
    /// The app, as its server key would.
    case app(AppRecord)
}
