import Foundation

/// Where IsletKit stands with an activity, or with an activity type's
/// push-to-start token.
public enum IsletStatus: Sendable, Hashable {
    /// IsletKit does not follow it (an activity without an Islet id, a type not
    /// tracked).
    case notTracked
    /// Its token is on its way (in the outbox).
    case pending
    /// The server holds its token (or, for an activity on a channel, needs none).
    case registered
    /// The server refused it for good; the reason is the server's.
    case failed(String)
}

/// What IsletKit did or met, as it happens.
public enum IsletEvent: Sendable, Hashable {
    /// The device is registered (again), as `deviceID`.
    case registered(deviceID: String)
    /// An upload was accepted.
    case uploaded(IsletUpload)
    /// An upload was refused for good (it is dropped), with the server's reason.
    case refused(IsletUpload, reason: String)
    /// An upload failed in a way that passes (network, server busy); it is tried again.
    case retrying(IsletUpload, reason: String, attempt: Int)
    /// The server refused the device's secret: uploads wait until the app hands a
    /// new one (from its backend's reset) to `useDeviceSecret`.
    case secretRefused
    /// Duplicates of one Islet activity were ended on the device.
    case duplicateEnded(activityID: String, localID: String)
}

/// One upload, as the events and the outbox name it.
public struct IsletUpload: Sendable, Hashable, Codable {
    public enum Kind: String, Sendable, Hashable, Codable {
        case registration, pushToStartToken, pushToStartRemoval, updateToken, end, tap, receipt
    }
    public var kind: Kind
    /// The activity type (push-to-start) or activity id it is for, if any.
    public var subject: String?
}

/// A snapshot for a support screen.
public struct IsletDiagnostics: Sendable, Hashable {
    public var deviceID: String
    public var registered: Bool
    public var hasSecret: Bool
    public var secretRefused: Bool
    /// The activity types followed, and whether the server holds each one's
    /// push-to-start token.
    public var pushToStartTypes: [String: Bool]
    /// The Islet activities whose update token the server holds.
    public var activitiesWithToken: [String]
    public var outboxLength: Int
    public var lastError: String?
}
