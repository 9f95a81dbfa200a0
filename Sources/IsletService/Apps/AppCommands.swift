public import Storage

/// A new app: its name, bundle id, optional APNs credentials and settings.
public struct CreateApp: Sendable {
    /// A display name.
    public var name: String
    /// The iOS bundle id.
    public var bundleID: String
    /// The APNs signing key, if given.
    public var credentials: APNsCredentials?
    /// Whether a start for an unregistered activity type is refused.
    public var strictActivityTypes: Bool

    /// Creates the command.
    public init(name: String, bundleID: String, credentials: APNsCredentials?, strictActivityTypes: Bool) {
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.strictActivityTypes = strictActivityTypes
    }
}

/// A change to an app: `nil` leaves a value alone; `credentials: .some(nil)` removes
/// the APNs credentials.
public struct UpdateApp: Sendable {
    /// The app.
    public var appID: String
    /// A new name.
    public var name: String?
    /// A new bundle id.
    public var bundleID: String?
    /// New credentials (all three fields), or `.some(nil)` to remove them.
    public var credentials: APNsCredentials??
    /// The new strictness.
    public var strictActivityTypes: Bool?
    /// The new `device_secrets` setting.
    public var deviceSecrets: DeviceSecretPolicy?

    /// Creates the command.
    public init(
        appID: String, name: String?, bundleID: String?, credentials: APNsCredentials??, strictActivityTypes: Bool?,
        deviceSecrets: DeviceSecretPolicy? = nil
    ) {
        self.appID = appID
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.strictActivityTypes = strictActivityTypes
        self.deviceSecrets = deviceSecrets
    }
}

/// An app just created, with its two keys (shown once: only their hashes are kept).
public struct CreatedApp: Sendable {
    /// The app as stored.
    public let app: AppRecord
    /// The server key.
    public let serverKey: String
    /// The device key.
    public let deviceKey: String
}

/// An app's new keys.
public struct RotatedKeys: Sendable {
    /// The app.
    public let appID: String
    /// The new server key.
    public let serverKey: String
    /// The new device key.
    public let deviceKey: String
}
