/// What the expiry sweep ended.
public struct ExpiredActivities: Sendable, Hashable {
    /// The activities, by app.
    public var activities: [ActivityKey]
    /// Their starts and updates still queued, dropped.
    public var droppedPushes: [DroppedPush]

    /// Creates a result.
    public init(activities: [ActivityKey], droppedPushes: [DroppedPush]) {
        self.activities = activities
        self.droppedPushes = droppedPushes
    }
}
