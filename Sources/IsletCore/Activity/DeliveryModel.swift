/// What a push does: one of ActivityKit's three events, or an ordinary alert.
public enum PushEvent: String, Sendable, Hashable, CaseIterable, Codable {
    /// A push-to-start.
    case start
    /// A Live Activity update.
    case update
    /// A Live Activity end.
    case end
    /// An ordinary alert notification to the app.
    case alert
}

/// Where one push is, as the API reports it.
public enum PushStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Waiting to be sent, being sent, or waiting for a retry.
    case queued
    /// APNs accepted it.
    case sent
    /// APNs refused it, or every retry failed.
    case failed
    /// Not sent, and never will be: a newer push replaced it, or its target went away.
    case dropped
}

/// The three audiences a send can address: an app's own user ids, its device ids,
/// or device tags.
public enum Audience: Sendable, Hashable {
    /// Every device carrying one of these user ids.
    case userIDs([String])
    /// These devices.
    case deviceIDs([String])
    /// Every device carrying one of these tags.
    case tags([String])

    /// The JSON field that names this audience.
    public var field: String {
        switch self {
        case .userIDs: "user_ids"
        case .deviceIDs: "device_ids"
        case .tags: "tags"
        }
    }

    /// The values addressed.
    public var values: [String] {
        switch self {
        case .userIDs(let values), .deviceIDs(let values), .tags(let values): values
        }
    }
}
