/// What a schedule item does when its time comes.
public enum ScheduleKind: String, Sendable, Hashable, CaseIterable, Codable {
    /// A push-to-start to an audience (resolved when it fires).
    case start
    /// An update to every device holding the activity.
    case update
    /// An end on every device holding the activity.
    case end
    /// An ordinary alert to an audience (resolved when it fires).
    case notification
    /// One entry of an activity's timeline: an update.
    case timelineEntry = "timeline_entry"
}

/// Where a schedule item is. Only `scheduled` ever changes, once.
public enum ScheduleStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting for its time.
    case scheduled
    /// Fired: its pushes were queued.
    case sent
    /// Cancelled before it fired.
    case cancelled
    /// Its time came and nothing was sent (the reason says why).
    case dropped
}

/// Why a schedule item was dropped or cancelled, as the API names it.
public enum ScheduleReason {
    /// The activity had ended (or was gone) when an update or end came due.
    public static let activityEnded = "activity_ended"
    /// A start or alert found no device to send to.
    public static let noTargets = "no_targets"
    /// A start found the activity id running.
    public static let activityRunning = "activity_running"
    /// An update came due after the activity's update window closed.
    public static let pastUpdateWindow = "past_update_window"
    /// The app had no APNs credentials when it came due.
    public static let noCredentials = "no_credentials"
    /// A newer timeline entry was due too: only the newest is sent.
    public static let superseded = "superseded"
    /// A newer timeline replaced the entry.
    public static let replaced = "replaced"
    /// The entry's activity could not be renewed past its 8 hours.
    public static let notRenewed = "not_renewed"
    /// The start it followed was dropped or cancelled.
    public static let startDropped = "start_dropped"
    /// Cancelled through the API.
    public static let cancelled = "cancelled"
    /// Refused by a rule when it came due (the detail says which).
    public static let refused = "refused"
}
