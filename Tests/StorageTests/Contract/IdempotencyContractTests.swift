import Foundation
import IsletCore
import Storage
import Testing

@Suite("Store contract: idempotency, transactions and errors")
struct IdempotencyContractTests {
    private func answer(_ status: Int, at date: Date) -> IdempotentAnswer {
        IdempotentAnswer(requestHash: Data("hash \(status)".utf8), status: status, body: Data(#"{"ok":true}"#.utf8), createdAt: date)
    }

    @Test(arguments: StoreBackend.all)
    func answersAreSavedReadWithinTheirWindowRefusedWhenYoungerAndPurged(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.writeNow { session throws in
                try session.insertApp(Fixture.app())
                try session.saveIdempotentAnswer(appID: "app_1", key: "k1", answer(201, at: Fixture.at(10)), replacingBefore: Fixture.t0)
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k1", since: Fixture.at(10)) == answer(201, at: Fixture.at(10)))
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k1", since: Fixture.at(11)) == nil)
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k2", since: Fixture.t0) == nil)
                #expect(try session.idempotentAnswer(appID: "app_2", key: "k1", since: Fixture.t0) == nil)
            }
            // A younger answer is stored: another request with the key got there first.
            let conflict = #expect(throws: StoreError.self) {
                try store.writeNow { session throws in
                    try session.saveIdempotentAnswer(appID: "app_1", key: "k1", answer(409, at: Fixture.at(20)), replacingBefore: Fixture.at(10))
                }
            }
            #expect(conflict?.code == .conflict)
            #expect(try store.readNow { try $0.idempotentAnswer(appID: "app_1", key: "k1", since: Fixture.t0)?.status } == 201)
            // An answer older than the window is replaced.
            try await store.write { session throws in
                try session.saveIdempotentAnswer(appID: "app_1", key: "k1", answer(202, at: Fixture.at(30)), replacingBefore: Fixture.at(11))
                try session.saveIdempotentAnswer(appID: "app_1", key: "k2", answer(200, at: Fixture.at(40)), replacingBefore: Fixture.at(11))
            }
            try store.writeNow { session throws in
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k1", since: Fixture.t0) == answer(202, at: Fixture.at(30)))
                #expect(try session.purgeIdempotentAnswers(before: Fixture.at(35)) == 1)
                #expect(try session.purgeIdempotentAnswers(before: Fixture.at(35)) == 0)
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k1", since: Fixture.t0) == nil)
                #expect(try session.idempotentAnswer(appID: "app_1", key: "k2", since: Fixture.t0)?.status == 200)
            }
        }
    }

    @Test(arguments: StoreBackend.all)
    func aWriteThatThrowsCommitsNothingAndItsErrorPassesThrough(_ backend: StoreBackend) async throws {
        struct Refused: Error, Equatable { let reason: String }
        try await withStore(backend) { store in
            let thrown = await #expect(throws: Refused.self) {
                try await store.write { session throws in
                    try session.insertApp(Fixture.app())
                    throw Refused(reason: "the rules say no")
                }
            }
            #expect(thrown == Refused(reason: "the rules say no"))
            #expect(throws: Refused(reason: "again")) {
                try store.writeNow { session throws in
                    try session.insertApp(Fixture.app())
                    throw Refused(reason: "again")
                }
            }
            #expect(try store.readNow { try $0.apps() }.isEmpty)
            // A read passes its closure's errors through too.
            #expect(throws: Refused(reason: "read")) { try store.readNow { _ in throw Refused(reason: "read") } }
            // A store error caught inside the transaction leaves the rest of it.
            try await store.write { session throws in
                try session.insertApp(Fixture.app())
                do {
                    try session.insertApp(Fixture.app())
                    Issue.record("a taken app id was accepted")
                } catch let error as StoreError {
                    #expect(error.code == .conflict)
                }
                try session.insertApp(Fixture.app("app_2"))
            }
            #expect(try await store.read { try $0.apps().map(\.id) } == ["app_1", "app_2"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func aClosedStoreIsUnavailable(_ backend: StoreBackend) async throws {
        try await withStore(backend) { store in
            try store.readNow { try $0.ping() }
            #expect(try store.readNow { try $0.schemaVersion() } >= 1)
            #expect(!store.location.isEmpty)
            store.close()
            let read = #expect(throws: StoreError.self) { try store.readNow { try $0.ping() } }
            #expect(read?.code == .unavailable)
            let write = #expect(throws: StoreError.self) { try store.writeNow { try $0.insertApp(Fixture.app()) } }
            #expect(write?.code == .unavailable)
            let unsynced = #expect(throws: StoreError.self) { try store.writeNow(durable: false) { try $0.queueDepth() } }
            #expect(unsynced?.code == .unavailable)
            let asyncRead = await #expect(throws: StoreError.self) { try await store.read { try $0.apps() } }
            #expect(asyncRead?.code == .unavailable)
            let asyncWrite = await #expect(throws: StoreError.self) { try await store.write { try $0.insertApp(Fixture.app()) } }
            #expect(asyncWrite?.code == .unavailable)
        }
    }
}
