import Foundation
import IsletSync
import Storage

/// Apps by the hash of their keys, for a few seconds: the key check of every app
/// request would otherwise take a turn on the database. Every change to an app, on
/// this node or (told through the database) another, empties it.
final class AppKeyCache: Sendable {
    private struct Entry {
        let app: AppRecord
        let kind: AppKeyKind
        let expires: ContinuousClock.Instant
    }

    private struct State {
        var entries: [Data: Entry] = [:]
        /// Moves on at every invalidation: an app read before one is not cached after it.
        var generation: UInt64 = 0
    }

    private let state = Lock(State())
    private let lifetime: Duration

    /// A cache whose entries last `lifetime` (unless invalidated first).
    init(lifetime: Duration = .seconds(5)) {
        self.lifetime = lifetime
    }

    /// The current generation: read it before reading an app from the store, and
    /// give it to `store`.
    var generation: UInt64 { state.withLock { $0.generation } }

    func lookup(_ hash: Data) -> (app: AppRecord, kind: AppKeyKind)? {
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.entries[hash], entry.expires > now else { return nil }
            return (entry.app, entry.kind)
        }
    }

    /// Caches an app read while the cache was at `generation`; nothing when it was
    /// invalidated since (the app read may be the one that changed).
    func store(_ hash: Data, app: AppRecord, kind: AppKeyKind, readAt generation: UInt64) {
        let expires = ContinuousClock.now + lifetime
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count > 10_000 { state.entries.removeAll(keepingCapacity: true) }
            state.entries[hash] = Entry(app: app, kind: kind, expires: expires)
        }
    }

    func invalidate() {
        state.withLock { state in
            state.entries.removeAll(keepingCapacity: true)
            state.generation &+= 1
        }
    }
}
