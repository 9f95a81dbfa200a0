public import Foundation

/// The `apns-expiration` header: how long APNs keeps a push for a device that cannot
/// be reached right now.
public enum PushExpiration: Sendable, Hashable {
    /// Try to deliver once and then discard (the header value 0).
    case onceOnly
    /// Keep trying until this date (sent as Unix seconds).
    case at(Date)
}
