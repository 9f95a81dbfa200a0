import Foundation
import IsletCore
import IsletCrypto
import IsletLog
public import Storage

/// Apps and their keys: create, read, change and rotate, and the check of every
/// bearer key (the admin token, or an app's server or device key). Keys are
/// compared as SHA-256 hashes, in constant time; the store never holds a key.
public final class AppService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = AppStore

    private let environment: ServiceEnvironment
    /// The SHA-256 hash of the admin token; an admin session is bound to it.
    let adminTokenHash: Data
    private let keys: AppKeyCache
    /// Which token URIs a service account may name.
    private let tokenURIs: FCMTokenURIPolicy

    /// Creates the service; `adminToken` is the token that manages apps, an app
    /// read for its key is kept `keyCacheLifetime` (5 s) unless a change drops it,
    /// and a service account's token URI is checked by `tokenURIs`.
    public init(
        environment: ServiceEnvironment, adminToken: String, keyCacheLifetime: Duration = .seconds(5),
        tokenURIs: FCMTokenURIPolicy = FCMTokenURIPolicy()
    ) {
        self.environment = environment
        self.keys = AppKeyCache(lifetime: keyCacheLifetime, clock: environment.clock)
        self.adminTokenHash = AppKeys.hash(adminToken)
        self.tokenURIs = tokenURIs
    }

    /// An app changed on another node (its keys rotated, its credentials replaced):
    /// what this node cached of apps is dropped, so that an old key stops working
    /// here at once.
    public func appChangedElsewhere() {
        keys.invalidate()
    }

    // MARK: - Apps

    /// Creates an app with fresh keys.
    public func create(_ command: CreateApp) async throws(ServiceError) -> CreatedApp {
        try Self.check(command.credentials)
        try checkHistoryRetention(command.historyRetentionDays)
        let fcm = try command.fcmServiceAccount.map { (json) throws(ServiceError) in try FCMAccountRules.credentials(from: json) }
        if let fcm { try await FCMAccountRules.checkTokenURI(fcm, policy: tokenURIs) }
        let serverKey: String
        let deviceKey: String
        var app: AppRecord
        do {
            serverKey = try AppKeys.generate(.server)
            deviceKey = try AppKeys.generate(.device)
            let now = environment.clock.now()
            app = AppRecord(
                id: try AppKeys.appID(), name: command.name, bundleID: command.bundleID,
                credentials: command.credentials, serverKeyHash: AppKeys.hash(serverKey),
                deviceKeyHash: AppKeys.hash(deviceKey), createdAt: now, updatedAt: now)
        } catch {
            throw environment.domainError(error)
        }
        app.strictActivityTypes = command.strictActivityTypes
        app.deviceSecrets = .required
        app.localJoin = command.localJoin
        app.historyRetentionDays = command.historyRetentionDays
        app.fcm = fcm
        let created = app
        try await environment.write { (session: any Stores) in try session.insertApp(created) }
        if app.credentials != nil || app.fcm != nil { environment.credentialsChanged(app) }
        environment.logger.notice("app created", ("app", .string(app.id)), ("bundle_id", .string(app.bundleID)))
        return CreatedApp(app: app, serverKey: serverKey, deviceKey: deviceKey)
    }

    /// Credentials are taken only with a key Islet can sign with: the `.p8` key's
    /// PEM text, a P-256 private key whose halves belong together.
    static func check(_ credentials: APNsCredentials?) throws(ServiceError) {
        guard let credentials else { return }
        do {
            _ = try P256.SigningKey(pemRepresentation: credentials.privateKeyPEM)
        } catch {
            let message = "must be the .p8 key's PEM text (a P-256 private key): \(error)"
            throw .invalid(
                "The field apns.private_key is invalid: \(ServiceError.sentence(message))", field: "apns.private_key", message)
        }
    }

    /// An app's own history retention is a number of days within
    /// ``HistoryRetention/days``, and no longer than the server's: a longer one is
    /// refused, not cut short, so that an app never believes it keeps what it
    /// does not.
    func checkHistoryRetention(_ days: Double?) throws(ServiceError) {
        guard let days else { return }
        let field = "history_retention_days"
        guard HistoryRetention.accepts(days) else {
            let message = "must be a number of days from \(HistoryRetention.spokenRange)"
            throw .invalid("The field \(field) is invalid: \(ServiceError.sentence(message))", field: field, message)
        }
        let server = environment.historyRetentionDays
        guard days <= server else {
            let message = "must be at most the server's retention, \(HistoryRetention.spoken(server)) \(server == 1 ? "day" : "days")"
            throw .invalid("The field \(field) is invalid: \(ServiceError.sentence(message))", field: field, message)
        }
    }

    /// Every app, oldest first.
    public func list() async throws(ServiceError) -> [AppRecord] {
        try await environment.read { (session: any Stores) in try session.apps() }
    }

    /// The app `id`, or `notFound`.
    public func app(id: String) async throws(ServiceError) -> AppRecord {
        guard let app = try await environment.read({ (session: any Stores) in
            try session.app(id: id)
        }) else { throw Self.noApp(id) }
        return app
    }

    /// Changes an app's name, bundle id, credentials or settings. Read and written in
    /// one transaction, leaving the key hashes alone: a rotation running meanwhile is
    /// never undone.
    public func update(_ command: UpdateApp) async throws(ServiceError) -> AppRecord {
        if let credentials = command.credentials { try Self.check(credentials) }
        if let days = command.historyRetentionDays { try checkHistoryRetention(days) }
        let faults = (command.budget?.faults ?? []) + (command.rateLimits?.faults ?? [])
        if !faults.isEmpty {
            let detail = faults.count == 1
                ? "The field \(faults[0].field) is invalid: \(ServiceError.sentence(faults[0].message))"
                : "\(faults.count) fields are invalid: \(faults.map(\.field).joined(separator: ", "))."
            throw ServiceError(.invalid, detail, fields: faults)
        }
        var fcm: FCMCredentials??
        if let given = command.fcmServiceAccount {
            let checked = try given.map { (json) throws(ServiceError) in try FCMAccountRules.credentials(from: json) }
            if let checked { try await FCMAccountRules.checkTokenURI(checked, policy: tokenURIs) }
            fcm = .some(checked)
        }
        let newFCM = fcm
        let now = environment.clock.now()
        let updated = try await environment.write { (session: any Stores) -> AppRecord in
            guard var app = try session.app(id: command.appID) else { throw Self.noApp(command.appID) }
            if let name = command.name { app.name = name }
            if let strict = command.strictActivityTypes { app.strictActivityTypes = strict }
            if let policy = command.deviceSecrets { app.deviceSecrets = policy }
            if let rule = command.localJoin { app.localJoin = rule }
            if let days = command.historyRetentionDays { app.historyRetentionDays = days }
            if let change = command.budget { app.budget = change.applied(to: app.budget) }
            if let change = command.rateLimits { app.rateLimits = change.applied(to: app.rateLimits) }
            if let bundleID = command.bundleID { app.bundleID = bundleID }
            if let credentials = command.credentials { app.credentials = credentials }
            if let fcm = newFCM { app.fcm = fcm }
            app.updatedAt = max(now, app.updatedAt.addingTimeInterval(0.001))
            try session.updateAppSettings(app)
            return app
        }
        keys.invalidate()
        if (updated.credentials != nil && command.credentials != nil) || (updated.fcm != nil && newFCM != nil) {
            environment.credentialsChanged(updated)
        }
        return updated
    }

    /// Replaces both keys; the old ones stop working at once.
    public func rotateKeys(appID: String) async throws(ServiceError) -> RotatedKeys {
        let serverKey: String
        let deviceKey: String
        do {
            serverKey = try AppKeys.generate(.server)
            deviceKey = try AppKeys.generate(.device)
        } catch {
            throw environment.domainError(error)
        }
        let now = environment.clock.now()
        let rotated = try await environment.write { (session: any Stores) -> Bool in
            try session.replaceKeys(
                appID: appID, serverKeyHash: AppKeys.hash(serverKey), deviceKeyHash: AppKeys.hash(deviceKey), now: now)
        }
        keys.invalidate()
        guard rotated else { throw Self.noApp(appID) }
        environment.logger.notice("app keys rotated", ("app", .string(appID)))
        return RotatedKeys(appID: appID, serverKey: serverKey, deviceKey: deviceKey)
    }

    /// Creates the demo app (`name`, `bundleID`, a fresh signing key), or gives the
    /// existing one fresh keys. Run once at start-up, on the calling thread.
    /// `fcm`, when given, becomes the demo app's service account (an embedded FCM's,
    /// fresh on every start).
    public func prepareDemo(name: String, bundleID: String, fcm: FCMCredentials? = nil) throws -> DemoApp {
        let serverKey = try AppKeys.generate(.server)
        let deviceKey = try AppKeys.generate(.device)
        let now = environment.clock.now()
        let store = environment.store
        let existing = try store.readNow { (session: any Stores) in
            try session.apps()
        }.first { $0.bundleID == bundleID && $0.name == name }
        if var app = existing {
            app.serverKeyHash = AppKeys.hash(serverKey)
            app.deviceKeyHash = AppKeys.hash(deviceKey)
            if let fcm { app.fcm = fcm }
            app.updatedAt = max(now, app.updatedAt.addingTimeInterval(0.001))
            let rotated = app
            try store.writeNow { (session: any Stores) in try session.updateApp(rotated) }
            return DemoApp(appID: app.id, bundleID: bundleID, serverKey: serverKey, deviceKey: deviceKey, created: false)
        }
        let signingKey = try P256.SigningKey.generate()
        var app = AppRecord(
            id: try AppKeys.appID(), name: name, bundleID: bundleID,
            credentials: APNsCredentials(teamID: "DEMOTEAM01", keyID: "DEMOKEY001", privateKeyPEM: signingKey.pemRepresentation),
            serverKeyHash: AppKeys.hash(serverKey), deviceKeyHash: AppKeys.hash(deviceKey),
            createdAt: now, updatedAt: now)
        app.deviceSecrets = .required
        app.fcm = fcm
        let created = app
        try store.writeNow { (session: any Stores) in try session.insertApp(created) }
        return DemoApp(appID: app.id, bundleID: bundleID, serverKey: serverKey, deviceKey: deviceKey, created: true)
    }

    // MARK: - Keys

    /// Passes only the admin token: an app's key is `forbidden`, anything else
    /// `unauthenticated`. A token refused as unknown from `address` counts against
    /// its sign-in attempts (`signIns`); an address past its attempts is refused
    /// (`limited`) before the token is looked at.
    public func requireAdmin(key: String, from address: String? = nil, signIns: SignInLimiter? = nil) async throws(ServiceError) {
        if let address, let signIns { try signIns.check(address) }
        let hashed = AppKeys.hash(key)
        guard Digest.constantTimeEquals(hashed, adminTokenHash) else {
            if AppKeys.kind(of: key) != nil, try await environment.read({ (session: any Stores) in
                try session.app(keyHash: hashed)
            }) != nil {
                throw ServiceError(.forbidden, "App keys cannot manage apps; use the admin token.")
            }
            // A guess at the admin token (an app's own key on the wrong route is not).
            if let address, let signIns { signIns.failed(address) }
            throw ServiceError(.unauthenticated, "The bearer key is not the admin token.")
        }
    }

    /// The app `appID` when `key` is its key of `kind`: `unauthenticated` for an
    /// unknown key, `forbidden` for the admin token or a key of the other kind,
    /// `notFound` for another app's key.
    public func requireApp(key: String, appID: String, kind: AppKeyKind) async throws(ServiceError) -> AppRecord {
        let hashed = AppKeys.hash(key)
        if Digest.constantTimeEquals(hashed, adminTokenHash) {
            throw ServiceError(.forbidden, "The admin token manages apps; this route takes the app's \(kind.rawValue) key.")
        }
        var match = keys.lookup(hashed)
        let generation = keys.generation
        if match == nil, let stored = try await environment.read({ (session: any Stores) in
            try session.app(keyHash: hashed)
        }) {
            keys.store(hashed, app: stored.app, kind: stored.kind, readAt: generation)
            match = stored
        }
        guard let (app, found) = match,
            Digest.constantTimeEquals(found == .server ? app.serverKeyHash : app.deviceKeyHash, hashed)
        else {
            throw ServiceError(.unauthenticated, "The bearer key is not a key of any app (keys stop working once rotated).")
        }
        guard app.id == appID else { throw Self.noApp(appID) }
        guard found == kind else {
            throw ServiceError(.forbidden, "This route takes the app's \(kind.rawValue) key, not its \(found.rawValue) key.")
        }
        return app
    }

    /// The app `appID` when `key` is its key of `kind` and this node has it cached
    /// (no wait, no database read); nil when it does not know (the key may still
    /// be good: `requireApp` tells).
    public func knownApp(key: String, appID: String, kind: AppKeyKind) -> AppRecord? {
        let hashed = AppKeys.hash(key)
        guard let (app, found) = keys.lookup(hashed), found == kind, app.id == appID,
            Digest.constantTimeEquals(found == .server ? app.serverKeyHash : app.deviceKeyHash, hashed)
        else { return nil }
        return app
    }

    /// Whose key `key` is: the admin token, or an app's server or device key;
    /// `unauthenticated` for any other (a rotated key included). Read from the
    /// store, never from the cache: a sign-in must see a rotation at once.
    public func identify(key: String) async throws(ServiceError) -> KeyOwner {
        let hashed = AppKeys.hash(key)
        if Digest.constantTimeEquals(hashed, adminTokenHash) { return .admin }
        guard let stored = try await environment.read({ (session: any Stores) in try session.app(keyHash: hashed) }),
            Digest.constantTimeEquals(stored.kind == .server ? stored.app.serverKeyHash : stored.app.deviceKeyHash, hashed)
        else {
            throw ServiceError(.unauthenticated, "The token is neither the admin token nor a key of any app (keys stop working once rotated).")
        }
        return .app(stored.app, stored.kind)
    }

    static func noApp(_ appID: String) -> ServiceError {
        ServiceError(.notFound, "There is no app \(appID).")
    }
}
