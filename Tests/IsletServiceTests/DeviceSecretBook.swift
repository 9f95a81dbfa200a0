import IsletService
import IsletSync
import Storage

/// The secrets a test's devices were given, kept as an app keeps them: each from
/// the registration that answered it, sent with every later call for the device.
final class DeviceSecretBook: Sendable {
    private let secrets = Lock<[String: String]>([:])

    /// Registers a device, sending the secret kept for it and keeping any new one.
    @discardableResult
    func register(
        _ devices: DeviceService, appID: String, deviceID: String, _ registration: DeviceRegistration
    ) async throws -> DeviceService.Registered {
        let registered = try await devices.register(
            appID: appID, deviceID: deviceID, secret: self[appID, deviceID], registration)
        if let secret = registered.secret { secrets.withLock { $0[appID + "/" + deviceID] = secret } }
        return registered
    }

    /// The secret kept for a device.
    subscript(appID: String, deviceID: String) -> String? {
        secrets.withLock { $0[appID + "/" + deviceID] }
    }
}
