/// Which pushes marked in flight go back to the queue.
public enum InFlightPolicy: Sendable, Hashable {
    /// Every push marked in flight: right when this process is the only one that
    /// ever claims pushes from the database (SQLite, one node), so that any push
    /// still marked was left by an earlier run of it.
    case requeueAll
    /// The pushes node `nodeID` holds: when it starts (an earlier run of it left
    /// them) and when it stops (it hands them back).
    case heldBy(nodeID: String)
    /// The pushes whose lease ran out: their node stopped renewing it (it died, or
    /// lost the database for longer than a lease).
    case leaseExpired
}
