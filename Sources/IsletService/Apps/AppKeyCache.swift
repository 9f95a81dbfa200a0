import Foundation
import IsletSync
import Storage

/// Apps by the hash of their keys, for a few seconds: the key check of every app
/// request would otherwise take a turn on the database. Every change to an app on
/// this node empties it.
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
