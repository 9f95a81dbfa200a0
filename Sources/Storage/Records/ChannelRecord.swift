public import Foundation
public import IsletCore

/// An iOS 18 broadcast channel an app made through Islet.
public struct ChannelRecord: Sendable, Hashable {
    /// Apple's id in base64url without padding (RFC 4648 §5): what paths take.
    public var channelID: String
    /// Apple's id as Apple gave it (standard base64): what every push carries.
    public var apnsChannelID: String
    /// The environment the channel lives in.
    public var environment: APNsEnvironment
    /// Whether APNs keeps the channel's most recent message for late subscribers.
    public var storesMostRecent: Bool
    /// The activity using it, if any.
    public var activityID: String?
    /// When it was created.
    public var createdAt: Date
    /// Whether Islet created it for an activity (and deletes it once that activity
    /// is over), rather than the app through the API.
    public var managed = false

    /// Creates a record.
    public init(
        channelID: String, apnsChannelID: String, environment: APNsEnvironment, storesMostRecent: Bool,
        activityID: String?, createdAt: Date
    ) {
        self.channelID = channelID
        self.apnsChannelID = apnsChannelID
        self.environment = environment
        self.storesMostRecent = storesMostRecent
        self.activityID = activityID
        self.createdAt = createdAt
    }

    /// `apnsChannelID` (standard base64) in base64url without padding; `nil` when it
    /// is not base64.
    public static func pathID(_ apnsChannelID: String) -> String? {
        guard Data(base64Encoded: apnsChannelID) != nil else { return nil }
        return apnsChannelID.replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}

/// A place in the order of channels (app, then channel id).
public struct ChannelCursor: Sendable, Hashable {
    /// The app.
    public var appID: String
    /// The channel.
    public var channelID: String

    /// Creates a cursor.
    public init(appID: String, channelID: String) {
        self.appID = appID
        self.channelID = channelID
    }
}
