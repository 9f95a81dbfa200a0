public import IsletCore

/// A push's target: a device, one of its tokens, and the token's environment.
public struct PushTarget: Sendable, Hashable {
    /// The device.
    public var deviceID: String
    /// The token.
    public var token: String
    /// The token's environment.
    public var environment: APNsEnvironment

    /// Creates a target.
    public init(deviceID: String, token: String, environment: APNsEnvironment) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
    }
}
