public import Foundation
public import IsletCore

/// What a device route checks its caller against, read with the device locked for
/// the rest of the transaction: whether the device is registered (its environment),
/// the hash of its secret and its user id, and its app's `device_secrets` and
/// `local_join` settings.
public struct DeviceAccess: Sendable, Hashable {
    /// The app's setting (`off` when there is no such app).
    public var policy: DeviceSecretPolicy
    /// The device's environment, or nil when there is no such device.
    public var environment: APNsEnvironment?
    /// SHA-256 of the device's secret; nil when it has none (registered before
    /// secrets existed) or does not exist.
    public var secretHash: Data?
    /// The device's platform (`ios`, `android`); `nil` when there is no device.
    public var platform: String?
    /// Whether a request for the device ever carried its current secret (a device
    /// that has used its secret keeps it).
    public var secretPresented: Bool
    /// The device's user id.
    public var userID: String?
    /// The app's `local_join` (`anyone` when there is no such app).
    public var localJoin: LocalJoinRule

    /// Whether the device is registered.
    public var deviceExists: Bool { environment != nil }

    /// Creates the answer.
    public init(
        policy: DeviceSecretPolicy, environment: APNsEnvironment?, secretHash: Data?, platform: String? = nil,
        secretPresented: Bool = false, userID: String? = nil, localJoin: LocalJoinRule = .anyone
    ) {
        self.userID = userID
        self.localJoin = localJoin
        self.policy = policy
        self.environment = environment
        self.secretHash = secretHash
        self.platform = platform
        self.secretPresented = secretPresented
    }
}
