/// An app's `device_secrets` setting: whether every device route for a registered
/// device must carry that device's secret.
public enum DeviceSecretPolicy: String, Sendable, Hashable, CaseIterable {
    /// Every later route for a device needs its secret (the default of apps created
    /// since secrets exist).
    case required
    /// Secrets are issued but not checked (apps that existed before, until they move).
    case off
}
