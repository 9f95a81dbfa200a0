/// An activity's identity.
public struct ActivityKey: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The activity.
    public var activityID: String

    /// Creates a key.
    public init(appID: String, activityID: String) {
        self.appID = appID
        self.activityID = activityID
    }
}
