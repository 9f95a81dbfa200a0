/// What one node tells the others through the database.
public enum StoreNotice: Sendable, Hashable {
    /// Pushes were queued: a worker waiting for the next due time looks now.
    case pushesQueued
    /// An app's keys, credentials or settings changed: caches of it are stale.
    case appChanged(appID: String)
    /// Notices may have been missed (the listening connection was lost and came
    /// back): everything a notice would have refreshed is refreshed.
    case resync
}
