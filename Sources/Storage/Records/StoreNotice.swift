/// What one node tells the others through the database.
public enum StoreNotice: Sendable, Hashable {
    /// Pushes were queued: a worker waiting for the next due time looks now.
    case pushesQueued
    /// An app's keys, credentials or settings changed: caches of it are stale.
    case appChanged(appID: String)
    /// An event stream of an app is open on the node that sends this (sent again
    /// while it stays open): the other nodes write an event per push sent for the
    /// app, as for their own streams.
    case eventsWanted(appID: String)
    /// Timed work was added or moved (a schedule item, an activity's end time, a
    /// timeline's renewal): a timekeeper sleeping until its next due item looks
    /// again.
    case timersChanged
    /// Notices may have been missed (the listening connection was lost and came
    /// back): everything a notice would have refreshed is refreshed.
    case resync
}
