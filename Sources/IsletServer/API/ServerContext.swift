import IsletSync
import Delivery
import Foundation
import HTTPServer
import IsletCore
import IsletCrypto
import IsletLog
import Storage

/// What every route handler shares: the store, the delivery worker, the clock and
/// the rules.
struct ServerContext: Sendable {
    let store: any Store
    let delivery: DeliveryWorker
    let clock: any WallClock
    let lifecycle: ActivityLifecycle
    let logger: Logger
    /// SHA-256 of the admin token.
    let adminTokenHash: Data
    /// How long an `Idempotency-Key` answer is replayed.
    let idempotencyWindow: TimeInterval
    /// Called with credentials an app was given (the embedded simulator trusts them).
    let credentialsChanged: @Sendable (APNsCredentials) -> Void
    /// Counts requests for `/metrics`.
    let requestMetrics: RequestMetrics
    /// Apps by key hash, so that a request's key is usually checked without the
    /// database.
    let appKeys = AppKeyCache()
}

/// Apps by the hash of their keys, for a few seconds: the key check of every app
/// request would otherwise take a turn on the database thread. Every change to an
/// app on this node empties it.
final class AppKeyCache: Sendable {
    private struct Entry {
        let app: AppRecord
        let kind: AppKeyKind
        let expires: ContinuousClock.Instant
    }

    private let entries = Lock<[Data: Entry]>([:])
    private let lifetime: Duration = .seconds(5)

    func lookup(_ hash: Data) -> (app: AppRecord, kind: AppKeyKind)? {
        let now = ContinuousClock.now
        return entries.withLock { entries in
            guard let entry = entries[hash], entry.expires > now else { return nil }
            return (entry.app, entry.kind)
        }
    }

    func store(_ hash: Data, app: AppRecord, kind: AppKeyKind) {
        let expires = ContinuousClock.now + lifetime
        entries.withLock { entries in
            if entries.count > 10_000 { entries.removeAll(keepingCapacity: true) }
            entries[hash] = Entry(app: app, kind: kind, expires: expires)
        }
    }

    func invalidate() {
        entries.withLock { $0.removeAll(keepingCapacity: true) }
    }
}

/// Checks bearer keys. Keys are compared as SHA-256 hashes, in constant time; the
/// store never holds a key itself.
enum Authentication {
    /// The bearer key of `request`, or 401.
    static func bearer(_ request: HTTPRequest) throws(Problem) -> String {
        guard let header = request.headers["Authorization"] else {
            throw Problem(status: 401, detail: "An Authorization: Bearer <key> header is required.")
        }
        let parts = header.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer", !parts[1].trimmingCharacters(in: .whitespaces).isEmpty else {
            throw Problem(status: 401, detail: "The Authorization header must be Bearer <key>.")
        }
        return parts[1].trimmingCharacters(in: .whitespaces)
    }

    static func hash(_ key: String) -> Data { Digest.sha256(Data(key.utf8)) }

    /// Passes only the admin token: an app's key is 403, anything else 401.
    static func requireAdmin(_ request: HTTPRequest, context: ServerContext) async throws {
        let key = try bearer(request)
        let hashed = hash(key)
        guard Digest.constantTimeEquals(hashed, context.adminTokenHash) else {
            if AppKeys.kind(of: key) != nil, try await context.store.read({ try $0.app(keyHash: hashed) }) != nil {
                throw Problem(status: 403, detail: "App keys cannot manage apps; use the admin token.")
            }
            throw Problem(status: 401, detail: "The bearer key is not the admin token.")
        }
    }

    /// The app `appID` when the bearer key is its key of `kind`: 401 for a missing
    /// or unknown key, 403 for a key of the other kind, 404 for another app's key.
    static func requireApp(
        _ request: HTTPRequest, appID: String, kind: AppKeyKind, context: ServerContext
    ) async throws -> AppRecord {
        let key = try bearer(request)
        let hashed = hash(key)
        if Digest.constantTimeEquals(hashed, context.adminTokenHash) {
            throw Problem(status: 403, detail: "The admin token manages apps; this route takes the app's \(kind.rawValue) key.")
        }
        var match = context.appKeys.lookup(hashed)
        if match == nil, let stored = try await context.store.read({ try $0.app(keyHash: hashed) }) {
            context.appKeys.store(hashed, app: stored.app, kind: stored.kind)
            match = stored
        }
        guard let (app, found) = match,
            Digest.constantTimeEquals(found == .server ? app.serverKeyHash : app.deviceKeyHash, hashed)
        else {
            throw Problem(status: 401, detail: "The bearer key is not a key of any app (keys stop working once rotated).")
        }
        guard app.id == appID else {
            throw Problem(status: 404, detail: "There is no app \(appID).")
        }
        guard found == kind else {
            throw Problem(
                status: 403,
                detail: "This route takes the app's \(kind.rawValue) key, not its \(found.rawValue) key.")
        }
        return app
    }
}

/// The app keys: random, prefixed with their kind so that a misplaced key is
/// recognised, and stored only as hashes.
enum AppKeys {
    static let serverPrefix = "islet_sk_"
    static let devicePrefix = "islet_dk_"

    static func generate(_ kind: AppKeyKind) throws -> String {
        let prefix = kind == .server ? serverPrefix : devicePrefix
        return prefix + Base64URL.encode(try SecureRandom.bytes(32))
    }

    static func kind(of key: String) -> AppKeyKind? {
        if key.hasPrefix(serverPrefix) { return .server }
        if key.hasPrefix(devicePrefix) { return .device }
        return nil
    }

    /// A new app id.
    static func appID() throws -> String {
        "app_" + (try SecureRandom.bytes(10)).map { String(format: "%02x", $0) }.joined()
    }
}
