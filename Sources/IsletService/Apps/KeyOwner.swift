public import Storage

/// Whose key a bearer token is.
public enum KeyOwner: Sendable, Hashable {
    /// The admin token.
    case admin
    /// One of the app's keys, of `kind`.
    case app(AppRecord, AppKeyKind)
}
