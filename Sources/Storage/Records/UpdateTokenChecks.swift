public import IsletCore

/// What a device's update token for an activity is checked against.
public struct UpdateTokenChecks: Sendable {
    /// The device (locked, shared) and its secret, and the app's setting.
    public var device: DeviceAccess
    /// The device's environment, or nil when there is no such device.
    public var environment: APNsEnvironment? { device.environment }
    /// The kinds other than an update token under which the token is registered.
    public var otherKinds: Set<PushTokenKind>
    /// The activity, locked, or nil when Islet has not seen it.
    public var activity: ActivityRecord?

    /// The three answers.
    public init(device: DeviceAccess, otherKinds: Set<PushTokenKind>, activity: ActivityRecord?) {
        self.device = device
        self.otherKinds = otherKinds
        self.activity = activity
    }
}
