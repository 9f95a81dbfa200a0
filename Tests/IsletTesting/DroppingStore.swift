public import Storage
import IsletThreads

/// A store that runs `drop` once it is closed: a test's PostgreSQL schema goes with
/// the store that used it.
public final class DroppingStore: Store {
    private let base: any Store
    private let drop: @Sendable () -> Void

    /// `base`, with `drop` run after it closes.
    public init(_ base: any Store, drop: @escaping @Sendable () -> Void) {
        self.base = base
        self.drop = drop
    }

    public var backend: String { base.backend }
    public var isShared: Bool { base.isShared }
    public var location: String { base.location }

    public func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await base.read(body)
    }

    public func write<T: Sendable>(durable: Bool, _ body: @escaping @Sendable (any StoreSession) throws -> T) async throws -> T {
        try await base.write(durable: durable, body)
    }

    public func readNow<T: Sendable>(_ body: (any StoreSession) throws -> T) throws -> T {
        try base.readNow(body)
    }

    public func writeNow<T: Sendable>(durable: Bool, _ body: (any StoreSession) throws -> T) throws -> T {
        try base.writeNow(durable: durable, body)
    }

    public func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void) {
        base.subscribe(handler)
    }

    public func close() {
        base.close()
        drop()
    }
}

/// Runs `body` with the store `open` makes, opened and closed on threads of their
/// own: opening migrates and closing joins the store's threads, and either, waited
/// for on one of the concurrency pool's few threads, would hold up every other test.
public func withOpenedStore<T>(
    _ open: @escaping @Sendable () throws -> any Store, _ body: (any Store) async throws -> T
) async throws -> T {
    let store = try await runBlocking(open)
    do {
        let result = try await body(store)
        await runOnOwnThread(named: "islet-test-close") { store.close() }
        return result
    } catch {
        await runOnOwnThread(named: "islet-test-close") { store.close() }
        throw error
    }
}
