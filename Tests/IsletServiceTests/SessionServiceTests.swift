import Foundation
import IsletCore
import IsletLog
import IsletService
import IsletTesting
import Storage
import Testing

/// The dashboard's session rules, on a real store and a clock that moves only when
/// told: who signs in, how long a session lasts, the CSRF check, what a session may
/// call, and a key rotation that ends an app's sessions.
@Suite("Dashboard sessions")
struct SessionServiceTests {
    static let adminToken = "islet_admin_session_tests_0123456789"

    struct Rig {
        let services: Services
        let clock: ManualWallClock
        let store: any Store
    }

    func withRig(hours: Double = 12, _ body: (Rig) async throws -> Void) async throws {
        try await withSuiteStore { store in
            let clock = ManualWallClock()
            let environment = ServiceEnvironment(
                store: store, clock: clock, lifecycle: ActivityLifecycle(),
                logger: Logger(level: .error, format: .logfmt, sink: MemoryLogSink()), idempotencyWindow: 3600)
            let services = Services(environment: environment, adminToken: Self.adminToken, sessionLifetime: hours * 3600)
            try await body(Rig(services: services, clock: clock, store: store))
        }
    }

    func code(_ body: () async throws -> Void) async -> ServiceError.Code? {
        do {
            try await body()
            return nil
        } catch let error as ServiceError {
            return error.code
        } catch {
            Issue.record("not a domain error: \(error)")
            return nil
        }
    }

    func app(_ rig: Rig, _ name: String = "Shop") async throws -> CreatedApp {
        try await rig.services.apps.create(CreateApp(name: name, bundleID: "com.example.\(name.lowercased())", credentials: nil, strictActivityTypes: false))
    }

    @Test func theAdminTokenAndAServerKeySignInOtherTokensDoNot() async throws {
        try await withRig { rig in
            let sessions = rig.services.sessions
            let shop = try await app(rig)
            let admin = try await sessions.signIn(key: Self.adminToken)
            #expect(admin.session.scope == .admin && admin.session.appID == nil)
            #expect(admin.session.expiresAt == rig.clock.now().addingTimeInterval(12 * 3600))
            // 32 random bytes, base64url: 43 characters; only its hash is stored.
            #expect(admin.token.count == 43)
            #expect(try rig.store.readNow { try $0.session(tokenHash: Data(admin.token.utf8)) } == nil)
            #expect(try await sessions.session(token: admin.token) == admin.session)

            let app = try await sessions.signIn(key: shop.serverKey)
            #expect(app.session.scope == .app && app.session.appID == shop.app.id)
            #expect(app.token != admin.token && app.session.csrfToken != admin.session.csrfToken)
            #expect(await code { _ = try await sessions.signIn(key: shop.deviceKey) } == .forbidden)
            #expect(await code { _ = try await sessions.signIn(key: "islet_sk_not-a-key") } == .unauthenticated)
            #expect(await code { _ = try await sessions.session(token: "no-such-session") } == .unauthenticated)
        }
    }

    @Test func aSessionExpiresOnTheInjectedClockAndExpiredOnesArePurged() async throws {
        try await withRig(hours: 2) { rig in
            let sessions = rig.services.sessions
            let first = try await sessions.signIn(key: Self.adminToken)
            rig.clock.advance(by: 2 * 3600 - 1)
            #expect(try await sessions.session(token: first.token).scope == .admin)
            rig.clock.advance(by: 1)
            #expect(await code { _ = try await sessions.session(token: first.token) } == .unauthenticated)
            // The next sign-in removes what expired.
            #expect(try rig.store.readNow { try $0.session(tokenHash: first.session.tokenHash) } != nil)
            _ = try await sessions.signIn(key: Self.adminToken)
            #expect(try rig.store.readNow { try $0.session(tokenHash: first.session.tokenHash) } == nil)
        }
    }

    @Test func changesNeedTheSessionsCSRFToken() async throws {
        try await withRig { rig in
            let sessions = rig.services.sessions
            let session = try await sessions.signIn(key: Self.adminToken).session
            try sessions.requireCSRF(session, method: "GET", token: nil)
            try sessions.requireCSRF(session, method: "HEAD", token: nil)
            try sessions.requireCSRF(session, method: "POST", token: session.csrfToken)
            for method in ["POST", "PUT", "PATCH", "DELETE"] {
                for token in [nil, "", "wrong", session.csrfToken + "x"] as [String?] {
                    let error = #expect(throws: ServiceError.self) { try sessions.requireCSRF(session, method: method, token: token) }
                    #expect(error?.code == .forbidden)
                    #expect(error?.fields?.first?.field == "X-CSRF-Token")
                    #expect(error?.detail.contains("X-CSRF-Token") == true)
                }
            }
        }
    }

    @Test func anAdminSessionReachesEveryAppAnAppSessionOnlyItsOwn() async throws {
        try await withRig { rig in
            let sessions = rig.services.sessions
            let shop = try await app(rig, "Shop")
            let other = try await app(rig, "Other")
            let admin = try await sessions.signIn(key: Self.adminToken).session
            let app = try await sessions.signIn(key: shop.serverKey).session
            guard case .admin = try await sessions.authorize(admin, for: .admin) else { Issue.record("admin refused"); return }
            for id in [shop.app.id, other.app.id] {
                guard case .app(let found) = try await sessions.authorize(admin, for: .server(appID: id)) else {
                    Issue.record("admin session refused on \(id)")
                    return
                }
                #expect(found.id == id)
            }
            guard case .app(let own) = try await sessions.authorize(app, for: .server(appID: shop.app.id)) else {
                Issue.record("app session refused on its own app")
                return
            }
            #expect(own.id == shop.app.id)
            #expect(await code { _ = try await sessions.authorize(app, for: .server(appID: other.app.id)) } == .notFound)
            #expect(await code { _ = try await sessions.authorize(app, for: .admin) } == .forbidden)
            #expect(await code { _ = try await sessions.authorize(admin, for: .server(appID: "app_00000000000000000000")) } == .notFound)
        }
    }

    @Test func rotatingAnAppsKeysEndsItsSessionsButNotTheAdmins() async throws {
        try await withRig { rig in
            let sessions = rig.services.sessions
            let shop = try await app(rig)
            let admin = try await sessions.signIn(key: Self.adminToken)
            let app = try await sessions.signIn(key: shop.serverKey)
            #expect(try await sessions.session(token: app.token).appID == shop.app.id)
            let rotated = try await rig.services.apps.rotateKeys(appID: shop.app.id)
            #expect(await code { _ = try await sessions.session(token: app.token) } == .unauthenticated)
            #expect(try await sessions.session(token: admin.token).scope == .admin)
            // The old key signs in no more; the new one does.
            #expect(await code { _ = try await sessions.signIn(key: shop.serverKey) } == .unauthenticated)
            let again = try await sessions.signIn(key: rotated.serverKey)
            #expect(try await sessions.session(token: again.token).appID == shop.app.id)
        }
    }

    @Test func signingOutDeletesTheSession() async throws {
        try await withRig { rig in
            let sessions = rig.services.sessions
            let signedIn = try await sessions.signIn(key: Self.adminToken)
            // A live session signs out only with its CSRF token.
            #expect(await code { try await sessions.signOut(token: signedIn.token, csrf: nil) } == .forbidden)
            #expect(await code { try await sessions.signOut(token: signedIn.token, csrf: "wrong") } == .forbidden)
            #expect(try await sessions.session(token: signedIn.token).scope == .admin)
            try await sessions.signOut(token: signedIn.token, csrf: signedIn.session.csrfToken)
            #expect(await code { _ = try await sessions.session(token: signedIn.token) } == .unauthenticated)
            #expect(try rig.store.readNow { try $0.session(tokenHash: signedIn.session.tokenHash) } == nil)
            // Signing out twice is no error, and needs no CSRF token once it is gone.
            try await sessions.signOut(token: signedIn.token, csrf: nil)
        }
    }
}
