import Foundation
import IsletCore
import Storage
import Testing

/// Dashboard sessions: stored by their token's hash, read back whole, removed one by
/// one or all expired at once.
@Suite("Store contract: dashboard sessions")
struct SessionContractTests {
    private func session(_ token: String, scope: SessionScope = .admin, appID: String? = nil, expires: Double) -> SessionRecord {
        SessionRecord(
            tokenHash: Data("hash \(token)".utf8), scope: scope, appID: appID,
            keyHash: appID.map { Data("server \($0)".utf8) }, csrfToken: "csrf-\(token)", createdAt: Fixture.t0,
            expiresAt: Fixture.at(expires))
    }

    @Test(arguments: StoreBackend.all)
    func sessionsAreStoredByTokenHashReadBackAndDeleted(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            let admin = session("a", expires: 3600)
            let app = session("b", scope: .app, appID: "app_1", expires: 3600)
            try await store.write { session throws in
                try session.insertApp(Fixture.app())
                try session.insertSession(admin)
                try session.insertSession(app)
            }
            #expect(try await store.read { try $0.session(tokenHash: admin.tokenHash) } == admin)
            #expect(try await store.read { try $0.session(tokenHash: app.tokenHash) } == app)
            #expect(try await store.read { try $0.session(tokenHash: Data("hash c".utf8)) } == nil)
            // A token hash is taken once.
            let taken = #expect(throws: StoreError.self) { try store.writeNow { try $0.insertSession(admin) } }
            #expect(taken?.code == .conflict)
            #expect(try await store.write { try $0.deleteSession(tokenHash: admin.tokenHash) })
            #expect(try await store.write { try $0.deleteSession(tokenHash: admin.tokenHash) } == false)
            #expect(try await store.read { try $0.session(tokenHash: admin.tokenHash) } == nil)
            #expect(try await store.read { try $0.session(tokenHash: app.tokenHash) } == app)
        }
    }

    @Test(arguments: StoreBackend.all)
    func expiredSessionsAreDeletedTogether(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try await store.write { session throws in
                try session.insertSession(self.session("early", expires: 10))
                try session.insertSession(self.session("on-time", expires: 20))
                try session.insertSession(self.session("late", expires: 30))
            }
            #expect(try await store.write { try $0.deleteExpiredSessions(now: Fixture.at(5)) } == 0)
            #expect(try await store.write { try $0.deleteExpiredSessions(now: Fixture.at(20)) } == 2)
            #expect(try await store.read { try $0.session(tokenHash: Data("hash early".utf8)) } == nil)
            #expect(try await store.read { try $0.session(tokenHash: Data("hash on-time".utf8)) } == nil)
            #expect(try await store.read { try $0.session(tokenHash: Data("hash late".utf8))?.csrfToken } == "csrf-late")
        }
    }
}
