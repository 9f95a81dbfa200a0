import Foundation
import IsletCore
import IsletSync
import Storage

/// Apps by the hash of their keys, for a few seconds: the key check of every app
/// request would otherwise take a turn on the database. Every change to an app, on
/// this node or (told through the database) another, empties it.
final class AppKeyCache: Sendable {
    private struct Entry {
        let app: AppRecord
        let kind: AppKeyKind
        /// When it was read, on the services' clock.
        let readAt: Date
    }

    private struct State {
        var entries: [Data: Entry] = [:]
        /// Moves on at every invalidation: an app read before one is not cached after it.
        var generation: UInt64 = 0
    }

    private let state = Lock(State())
    /// How long an entry lasts, in seconds.
    private let lifetime: TimeInterval
    private let clock: any WallClock

    /// A cache whose entries last `lifetime` of `clock` (unless invalidated first).
    init(lifetime: Duration = .seconds(5), clock: any WallClock) {
        let (seconds, attoseconds) = lifetime.components
        self.lifetime = Double(seconds) + Double(attoseconds) / 1e18
        self.clock = clock
    }

    /// The current generation: read it before reading an app from the store, and
    /// give it to `store`.
    var generation: UInt64 { state.withLock { $0.generation } }

    func lookup(_ hash: Data) -> (app: AppRecord, kind: AppKeyKind)? {
        let now = clock.now()
        return state.withLock { state in
            // A clock stepped back past an entry's reading ends it too.
            guard let entry = state.entries[hash], entry.readAt <= now, now < entry.readAt + lifetime else { return nil }
            return (entry.app, entry.kind)
        }
    }

    /// Caches an app read while the cache was at `generation`; nothing when it was
    /// invalidated since (the app read may be the one that changed).
    func store(_ hash: Data, app: AppRecord, kind: AppKeyKind, readAt generation: UInt64) {
        let readAt = clock.now()
        state.withLock { state in
            guard state.generation == generation else { return }
            if state.entries.count > 10_000 { state.entries.removeAll(keepingCapacity: true) }
            state.entries[hash] = Entry(app: app, kind: kind, readAt: readAt)
        }
    }

    func invalidate() {
        state.withLock { state in
            state.entries.removeAll(keepingCapacity: true)
            state.generation &+= 1
        }
    }
}
