/// What the simulated device did with a push.
public enum DeviceOutcome: String, Sendable, Hashable, CaseIterable, Codable {
    /// A Live Activity started.
    case started
    /// A Live Activity's content changed.
    case updated
    /// A Live Activity ended.
    case ended
    /// APNs accepted the push, but the device ignored it; the record's note says why.
    case dropped
    /// APNs accepted the push, but the device held it back: its budget (of
    /// priority-10 updates, or of starts) is spent; the record's note says which.
    case throttled
    /// APNs refused the push (any status but 200), so no device saw it.
    case rejected
    /// An alert was shown.
    case alertShown = "alert_shown"
    /// A push with nothing to show (background, VoIP, widgets, …) reached the app.
    case delivered
    /// APNs accepted a broadcast and handed it to the channel's subscribers; what
    /// each did with it is in the record's `deliveries`.
    case broadcast
}
