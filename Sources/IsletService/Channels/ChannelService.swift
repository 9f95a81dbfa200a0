import Foundation
import IsletSync
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
    typealias Stores = AppStore & ChannelStore & ActivityStore & DeviceStore

    private let environment: ServiceEnvironment
    private let api: (any BroadcastChannelAPI)?
    /// Where the retiring goes on from: past the channels it could not delete on
    /// its last look, so that they never hold up the others.
    private let retireCursor = Lock<ChannelCursor?>(nil)
    /// When `auto` picks a channel.
    let choice: BroadcastChoice

    /// The most channels APNs lets an app have in one environment.
    public static let limit = BroadcastChoice.channelLimit

    /// Creates the service; without `api` (no channel management configured) every
    /// change is refused. `auto` picks a channel for an audience of more than
    /// `broadcastThreshold` devices that can take one.
    public init(environment: ServiceEnvironment, api: (any BroadcastChannelAPI)?, broadcastThreshold: Int = 1_000) {
        self.environment = environment
        self.api = api
        self.choice = BroadcastChoice(threshold: broadcastThreshold)
    }

    // MARK: - Channels for a start

    /// The channels a start with `channel` or `auto` delivery uses: the one it
    /// names, and one Islet creates (at APNs, then recorded as its own) for each
    /// other environment its audience needs. With `auto`, tokens when the audience
    /// is too small for a channel to pay off, or the app is near APNs's limit.
    func plan(for command: StartActivity) async throws(ServiceError) -> ChannelPlan {
        let app = command.app
        let appID = app.id
        let lifecycle = environment.lifecycle
        let now = environment.clock.now()
        let (audience, activityType, channelID, activityID) =
            (command.audience, command.activityType, command.channelID, command.activityID)
        let (targets, given, busy, counts) = try await environment.read {
            (session: any Stores) -> ([PushTarget], ChannelRecord?, String?, [APNsEnvironment: Int]) in
            // A start the transaction would refuse makes no channel first.
            _ = try ActivityService.runningLocal(
                try session.activity(appID: appID, activityID: activityID), lifecycle: lifecycle, now: now)
            let targets = try audience.map {
                try session.startTargets(appID: appID, audience: $0, activityType: activityType)
            } ?? []
            var busy: String?
            let given = try channelID.flatMap { try session.channel(appID: appID, channelID: $0) }
            if let user = given?.activityID, user != activityID, let activity = try session.activity(appID: appID, activityID: user),
                lifecycle.effectiveStatus(activity.status, startedAt: activity.startedAt, now: now) != .ended
            {
                busy = user
            }
            var counts: [APNsEnvironment: Int] = [:]
            for environment in APNsEnvironment.allCases {
                counts[environment] = try session.channelCount(appID: appID, environment: environment)
            }
            return (targets, given, busy, counts)
        }
        if let channelID, given == nil {
            throw ServiceError.invalid(
                "There is no channel \(channelID) of app \(appID).", field: "channel_id", "names no channel of the app")
        }
        if let busy, let channelID {
            throw ServiceError(
                .conflict, "Channel \(channelID) carries activity \(busy), which is running; end it or use another channel.")
        }
        let capable = targets.filter(\.takesChannels)
        var needed = Set(capable.map(\.environment))
        if audience == nil { needed = [given?.environment ?? command.channelEnvironment ?? .production] }
        var channels: [APNsEnvironment: ChannelRecord] = [:]
        if let given { channels[given.environment] = given }
        let missing = needed.subtracting(channels.keys).sorted { $0.rawValue < $1.rawValue }
        var reason: String?
        if command.delivery == .auto {
            guard api != nil else {
                return ChannelPlan(delivery: .tokens, reason: "this server has no channel management API configured")
            }
            let decided = choice.choose(
                capable: capable.count, total: targets.count,
                newChannelsIn: Dictionary(uniqueKeysWithValues: missing.map { ($0, counts[$0] ?? 0) }))
            guard decided.delivery == .channel else {
                let nearLimit = missing.contains { (counts[$0] ?? 0) >= BroadcastChoice.guardCount }
                return ChannelPlan(delivery: .tokens, reason: decided.reason, nearLimit: nearLimit)
            }
            reason = decided.reason
        } else if needed.isEmpty, given == nil {
            throw ServiceError.invalid(
                "None of the \(targets.count) device(s) of the audience can take a channel (iOS 18 or later).",
                field: "delivery", "needs devices on iOS 18 or later")
        }
        var created: [ChannelRecord] = []
        for environment in missing {
            let count = counts[environment] ?? 0
            guard count < Self.limit else {
                await discard(created, app: app)
                throw ServiceError(
                    .conflict,
                    "App \(appID) has \(count) channels in \(environment.rawValue), as many as APNs allows; delete some first.")
            }
            do {
                let channel = try await create(app: app, apnsEnvironment: environment, storesMostRecent: false, managed: true)
                channels[environment] = channel
                created.append(channel)
            } catch {
                await discard(created, app: app)
                throw error
            }
        }
        return ChannelPlan(delivery: .channel, reason: reason, channels: channels, created: created)
    }

    /// Deletes `channels` at APNs and here, best effort: a start they were made for
    /// did not happen. One that cannot be deleted now is left to the retiring
    /// (it belongs to no activity).
    func discard(_ channels: [ChannelRecord], app: AppRecord) async {
        guard let api else { return }
        let appID = app.id
        for channel in channels {
            do {
                try await api.deleteChannel(app: app, environment: channel.environment, apnsChannelID: channel.apnsChannelID)
                _ = try await environment.store.write { (session: any Stores) in
                    try session.deleteChannel(appID: appID, channelID: channel.channelID)
                }
            } catch {
                environment.logger.warning(
                    "cannot delete the channel of a start that failed; it is deleted later", ("app", .string(appID)),
                    ("channel", .string(channel.channelID)), ("error", .string("\(error)")))
            }
        }
    }

    // MARK: - Retiring

    /// Channels the retiring reads at a time.
    static let retirePage = 100

    /// How often the timekeeper looks for channels to delete, on its clock.
    public static let retireInterval: Double = 60

    /// Deletes, at APNs and here, the channels Islet created for activities that are
    /// over: ended, and past the end window in which the device may still show them
    /// (or past every window). Answers how many.
    @discardableResult
    public func retireEnded() async -> Int {
        guard let api else { return 0 }
        let windows = environment.lifecycle.windows
        let now = environment.clock.now()
        let logger = environment.logger
        let after = retireCursor.withLock { $0 }
        let page = Self.retirePage
        let due: [(appID: String, channel: ChannelRecord)]
        do {
            // Once across nodes: another node retiring now skips its turn.
            due = try await environment.store.write { (session: any Stores & NodeCoordination) in
                guard try session.claimPeriodicJob("channel-retire") else { return [] }
                return try session.retiredChannels(
                    endedBy: now.addingTimeInterval(-windows.end), expiredBy: now.addingTimeInterval(-windows.total),
                    after: after, limit: page)
            }
        } catch {
            logger.error("cannot read the channels to delete", ("error", .string("\(error)")))
            return 0
        }
        // A full page goes on after its last channel next time; a short one starts
        // over (what failed is tried again).
        retireCursor.withLock { cursor in
            cursor = due.count == page ? due.last.map { ChannelCursor(appID: $0.appID, channelID: $0.channel.channelID) } : nil
        }
        var retired = 0
        for (appID, channel) in due {
            do {
                guard let app = try await environment.store.read({ (session: any Stores) in try session.app(id: appID) })
                else { continue }
                try await api.deleteChannel(app: app, environment: channel.environment, apnsChannelID: channel.apnsChannelID)
                _ = try await environment.store.write { (session: any Stores) in
                    try session.deleteChannel(appID: appID, channelID: channel.channelID)
                }
                retired += 1
            } catch {
                logger.warning(
                    "cannot delete an ended activity's channel; trying again later", ("app", .string(appID)),
                    ("channel", .string(channel.channelID)), ("error", .string("\(error)")))
            }
        }
        if retired > 0 { logger.info("channels of ended activities deleted", ("count", .int(retired))) }
        return retired
    }

    // MARK: - The API's channels

    /// Creates a channel at APNs in `apnsEnvironment`, then records it.
    public func create(
        app: AppRecord, apnsEnvironment: APNsEnvironment, storesMostRecent: Bool
    ) async throws(ServiceError) -> ChannelRecord {
        try await create(app: app, apnsEnvironment: apnsEnvironment, storesMostRecent: storesMostRecent, managed: false)
    }

    private func create(
        app: AppRecord, apnsEnvironment: APNsEnvironment, storesMostRecent: Bool, managed: Bool
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
        var channel = ChannelRecord(
            channelID: pathID, apnsChannelID: apnsID, environment: apnsEnvironment, storesMostRecent: storesMostRecent,
            activityID: nil, createdAt: environment.clock.now())
        channel.managed = managed
        let appID = app.id
        let recorded = channel
        try await environment.write { (session: any Stores) in try session.insertChannel(appID: appID, recorded) }
        return recorded
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

/// The channels a start uses, made ready before its transaction (a channel is
/// created at APNs, which no transaction waits on).
struct ChannelPlan: Sendable {
    /// How the activity's updates go.
    var delivery: ActivityDelivery
    /// Why, when Islet chose.
    var reason: String?
    /// Its channel in each environment.
    var channels: [APNsEnvironment: ChannelRecord] = [:]
    /// `auto` went on tokens because the app is near APNs's channel limit.
    var nearLimit = false
    /// The channels Islet created for this start (deleted again if it fails).
    var created: [ChannelRecord] = []
}
