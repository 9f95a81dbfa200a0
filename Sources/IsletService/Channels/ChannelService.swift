import Foundation
public import IsletCore
public import Storage

/// The channel management API of iOS 18 broadcast channels, as the services need
/// it: the server wires Apple's (or a simulator's) behind it.
public protocol BroadcastChannelAPI: Sendable {
    /// Creates a channel for `app` in `environment`; answers Apple's id.
    func createChannel(app: AppRecord, environment: APNsEnvironment, storesMostRecent: Bool) async throws(ChannelAPIError) -> String
    /// Deletes the channel `apnsChannelID` of `app` (one APNs no longer has is gone
    /// already).
    func deleteChannel(app: AppRecord, environment: APNsEnvironment, apnsChannelID: String) async throws(ChannelAPIError)
}

/// What the channel management API answered a request it did not honour, or why
/// no answer came.
public struct ChannelAPIError: Error, Sendable, Hashable {
    /// The HTTP status; `nil` when no answer came.
    public let status: Int?
    /// APNs's `reason`, when it gave one.
    public let reason: String?
    /// What happened, in one sentence.
    public let message: String

    /// Creates an error.
    public init(status: Int?, reason: String?, message: String) {
        self.status = status
        self.reason = reason
        self.message = message
    }
}

/// An app's iOS 18 broadcast channels: created at APNs first and recorded once APNs
/// answered, listed, read, and deleted at APNs too (never while a running activity
/// uses one).
public struct ChannelService: Sendable {
    typealias Stores = AppStore & ChannelStore & ActivityStore

    private let environment: ServiceEnvironment
    private let api: (any BroadcastChannelAPI)?

    /// The most channels APNs lets an app have in one environment.
    public static let limit = 10_000

    /// Creates the service; without `api` (no channel management configured) every
    /// change is refused.
    public init(environment: ServiceEnvironment, api: (any BroadcastChannelAPI)?) {
        self.environment = environment
        self.api = api
    }

    /// Creates a channel at APNs in `apnsEnvironment`, then records it.
    public func create(
        app: AppRecord, apnsEnvironment: APNsEnvironment, storesMostRecent: Bool
    ) async throws(ServiceError) -> ChannelRecord {
        try SendRules.requireCredentials(app)
        let api = try requireAPI()
        let count = try await environment.read { (session: any Stores) in
            try session.channelCount(appID: app.id, environment: apnsEnvironment)
        }
        guard count < Self.limit else {
            throw ServiceError(
                .conflict,
                "App \(app.id) has \(count) channels in \(apnsEnvironment.rawValue), as many as APNs allows; delete some first.")
        }
        let apnsID: String
        do {
            apnsID = try await api.createChannel(app: app, environment: apnsEnvironment, storesMostRecent: storesMostRecent)
        } catch {
            throw Self.refusal(error, doing: "create the channel")
        }
        guard let pathID = ChannelRecord.pathID(apnsID) else {
            throw ServiceError(.failed, "APNs answered a channel id that is not base64.")
        }
        let channel = ChannelRecord(
            channelID: pathID, apnsChannelID: apnsID, environment: apnsEnvironment, storesMostRecent: storesMostRecent,
            activityID: nil, createdAt: environment.clock.now())
        let appID = app.id
        try await environment.write { (session: any Stores) in try session.insertChannel(appID: appID, channel) }
        return channel
    }

    /// A page of the app's channels, in the order of their ids.
    public func list(appID: String, after: String?, limit: Int) async throws(ServiceError) -> [ChannelRecord] {
        try await environment.read { (session: any Stores) in
            try session.channels(appID: appID, afterChannelID: after, limit: limit)
        }
    }

    /// The channel `channelID`, or `notFound`.
    public func show(appID: String, channelID: String) async throws(ServiceError) -> ChannelRecord {
        guard let channel = try await environment.read({ (session: any Stores) in
            try session.channel(appID: appID, channelID: channelID)
        }) else { throw Self.noChannel(channelID) }
        return channel
    }

    /// Deletes a channel at APNs, then forgets it; `conflict` while a running
    /// activity uses it.
    public func delete(app: AppRecord, channelID: String) async throws(ServiceError) {
        let appID = app.id
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let (channel, running) = try await environment.read { (session: any Stores) -> (ChannelRecord?, Bool) in
            guard let channel = try session.channel(appID: appID, channelID: channelID) else { return (nil, false) }
            guard let activityID = channel.activityID, let activity = try session.activity(appID: appID, activityID: activityID)
            else { return (channel, false) }
            return (channel, lifecycle.effectiveStatus(activity.status, startedAt: activity.startedAt, now: now) != .ended)
        }
        guard let channel else { throw Self.noChannel(channelID) }
        if running, let activityID = channel.activityID {
            throw ServiceError(
                .conflict, "Channel \(channelID) carries activity \(activityID), which is running; end it first.")
        }
        let api = try requireAPI()
        do {
            try await api.deleteChannel(app: app, environment: channel.environment, apnsChannelID: channel.apnsChannelID)
        } catch {
            throw Self.refusal(error, doing: "delete the channel")
        }
        _ = try await environment.write { (session: any Stores) in try session.deleteChannel(appID: appID, channelID: channelID) }
    }

    private func requireAPI() throws(ServiceError) -> any BroadcastChannelAPI {
        guard let api else {
            throw ServiceError(.unavailable, "This server has no channel management API configured.")
        }
        return api
    }

    private static func noChannel(_ channelID: String) -> ServiceError {
        ServiceError(.notFound, "There is no channel \(channelID).")
    }

    /// APNs's refusal, naming its reason: the app's own state (its channels, its
    /// capability, its credentials) is a conflict; APNs unreachable or failing is
    /// unavailable.
    static func refusal(_ error: ChannelAPIError, doing what: String) -> ServiceError {
        let named = error.reason.map { " (\($0))" } ?? ""
        guard let status = error.status, status < 500 else {
            return ServiceError(.unavailable, "APNs could not \(what): \(error.message).", retryAfter: 30)
        }
        return ServiceError(.conflict, "APNs refused to \(what)\(named): \(error.message).", reason: error.reason)
    }
}
