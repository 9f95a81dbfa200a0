public import Foundation
public import IsletCore

/// A push's target: a device, one of its tokens, and the token's environment; and
/// how the limits Islet keeps to change its push.
public struct PushTarget: Sendable, Hashable {
    /// The device.
    public var deviceID: String
    /// The token.
    public var token: String
    /// The token's environment.
    public var environment: APNsEnvironment
    /// Whether the push goes at priority 5 instead of its send's 10: its copy's
    /// priority-10 budget is spent.
    public var priorityDowngraded = false
    /// When the push may go, if later than now: its device has had all the starts
    /// it may have in an hour.
    public var deferredUntil: Date?
    /// Whether the device can subscribe to a broadcast channel (iOS 18 or later, or
    /// it never said); meaningful for a start's targets.
    public var takesChannels = true

    /// Creates a target.
    public init(deviceID: String, token: String, environment: APNsEnvironment) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
    }
}

/// A copy's use of its priority-10 budget: the priority-10 updates it was sent in
/// the window counted, and whether its device allowed frequent updates (`nil` when
/// it never said).
public struct BudgetUsage: Sendable, Hashable {
    /// Priority-10 updates sent to the copy in the window (none that went at
    /// priority 5, was dropped or failed).
    public var used: Int
    /// The device's `frequent_updates`.
    public var frequentUpdates: Bool?

    /// Creates a usage.
    public init(used: Int, frequentUpdates: Bool?) {
        self.used = used
        self.frequentUpdates = frequentUpdates
    }
}
