public import Foundation
public import Storage

/// Every domain service, built once on one environment: what the HTTP routes call,
/// and what acts without a request (scheduled ends, the history's purge).
public struct Services: Sendable {
    /// The environment they share.
    public let environment: ServiceEnvironment
    /// Apps and keys.
    public let apps: AppService
    /// Devices and their tokens.
    public let devices: DeviceService
    /// Registered activity types.
    public let activityTypes: ActivityTypeService
    /// Activities.
    public let activities: ActivityService
    /// Ordinary alerts.
    public let notifications: NotificationService
    /// The nodes sharing the database.
    public let nodes: NodeService
    /// Sends held for their time.
    public let schedules: ScheduleService
    /// Activities' timelines.
    public let timelines: TimelineService
    /// The outbox read back.
    public let events: EventService
    /// Webhook endpoints and their deliveries.
    public let webhooks: WebhookService
    /// The dashboard's sessions.
    public let sessions: SessionService
    /// Sign-in attempts per client address (dashboard sign-ins, refused admin tokens).
    public let signIns: SignInLimiter
    /// Each app's rate limits.
    public let rateLimits: RateLimiter
    /// Broadcast channels.
    public let channels: ChannelService
    /// The history's retention.
    public let history: HistoryService

    /// Builds the services; `adminToken` is the token that manages apps, a
    /// dashboard session lasts `sessionLifetime` seconds, and a client address may
    /// try `signInAttemptsPerMinute` sign-ins a minute (0: no limit). A start with
    /// `delivery: auto` uses a channel for more than `broadcastThreshold` devices;
    /// a service account's token URI is checked by `fcmTokenURIs`; old history is
    /// purged as `history` says.
    public init(
        environment: ServiceEnvironment, adminToken: String, events: EventSettings = EventSettings(),
        webhooks: WebhookPolicy = WebhookPolicy(), sessionLifetime: TimeInterval = 12 * 3600,
        keyCacheLifetime: Duration = .seconds(5), signInAttemptsPerMinute: Int = 10,
        channelAPI: (any BroadcastChannelAPI)? = nil, broadcastThreshold: Int = 1_000,
        fcmTokenURIs: FCMTokenURIPolicy = FCMTokenURIPolicy(), history: HistorySettings = HistorySettings()
    ) {
        self.environment = environment
        apps = AppService(
            environment: environment, adminToken: adminToken, keyCacheLifetime: keyCacheLifetime, tokenURIs: fcmTokenURIs)
        devices = DeviceService(environment: environment)
        activityTypes = ActivityTypeService(environment: environment)
        channels = ChannelService(environment: environment, api: channelAPI, broadcastThreshold: broadcastThreshold)
        activities = ActivityService(environment: environment, channels: channels)
        notifications = NotificationService(environment: environment)
        nodes = NodeService(environment: environment)
        schedules = ScheduleService(environment: environment)
        timelines = TimelineService(environment: environment)
        self.events = EventService(environment: environment, settings: events)
        self.webhooks = WebhookService(environment: environment, policy: webhooks)
        signIns = SignInLimiter(attemptsPerMinute: signInAttemptsPerMinute, clock: environment.clock)
        rateLimits = RateLimiter(environment: environment)
        sessions = SessionService(environment: environment, apps: apps, lifetime: sessionLifetime, signIns: signIns)
        self.history = HistoryService(environment: environment, settings: history)
    }

    /// The store they use.
    public var store: any Store { environment.store }
}
