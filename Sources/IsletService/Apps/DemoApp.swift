/// The demo app of an embedded APNs: its id and keys (fresh on every start, since
/// only their hashes are stored).
public struct DemoApp: Sendable {
    /// The app id.
    public let appID: String
    /// Its bundle id.
    public let bundleID: String
    /// The server key.
    public let serverKey: String
    /// The device key.
    public let deviceKey: String
    /// Whether this start created it.
    public let created: Bool
}
