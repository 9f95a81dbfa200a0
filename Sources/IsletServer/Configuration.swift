import Delivery
import FCM
public import IsletCore
public import IsletLog

/// Everything `islet serve` can be told, each property's initial value its default.
///
/// The rest of the configuration's story is told in one file each:
/// - `ConfigurationSettings.swift` declares each setting once: its flag (and so its
///   `ISLET_*` variable), the property it sets, its check, its help line and its
///   row of docs/configuration.md; `ConfigurationSetting.swift` holds what such a declaration is made of.
/// - `ConfigurationLoading.swift` reads the environment and then the flags (a flag
///   wins), checking every value before anything starts.
/// - `ConfigurationReference.swift` writes `islet serve --help` and docs/configuration.md's table.
/// - `ConfigurationResolution.swift` turns the values into what a start uses (the
///   paths, the default node id, the folders needed), without touching the machine.
/// - `ConfigurationPreparation.swift` does what touches it: reads the host name,
///   checks and creates the folders.
public struct Configuration: Sendable, Equatable {
    /// Address the HTTP API listens on.
    public var host = "127.0.0.1"
    /// Port the HTTP API listens on (0 picks a free one).
    public var port = 8080
    /// Folder for the database and other state; created when missing.
    public var dataDirectory = "data"
    /// The database: an SQLite file, or a `postgres://` URL; `nil` means
    /// `islet.sqlite` in the data folder.
    public var databasePath: String?
    /// Connections to PostgreSQL, at most.
    public var databasePoolSize = 8
    /// This node's id among those sharing a database; `nil` means the host name and
    /// the API's port.
    public var nodeID: String?
    /// Seconds a node's claim on a push lasts unless renewed.
    public var pushLeaseSeconds: Double = DeliveryConfiguration.defaultLease
    /// Minutes before an activity's update window closes that a timeline with
    /// `renew` starts its successor.
    public var renewLeadMinutes = 15.0
    /// Minutes an update token may take after APNs accepted a push-to-start before
    /// `activity.start_unconfirmed`.
    public var startConfirmMinutes = 10.0
    /// Days events (and their finished webhook deliveries) are kept.
    public var eventRetentionDays = 7.0
    /// Days the history of what was sent is kept: activities that ended (with their
    /// copies, audiences, taps and timelines) and settled sends with their pushes;
    /// an app may keep its own for less.
    public var historyRetentionDays = HistoryRetention.standardDays
    /// Whether webhook URLs may be plain `http`.
    public var webhooksAllowHTTP = false
    /// Whether webhook URLs may reach loopback, private and link-local addresses
    /// (metadata, unspecified, multicast, broadcast and reserved ones are refused
    /// even so).
    public var webhooksAllowPrivate = false
    /// Seconds an app read for its key is kept on this node unless a change (on any
    /// node) drops it first.
    public var appKeyCacheSeconds = 5.0
    /// Seconds before the first retry of a failed webhook delivery (doubling after).
    public var webhookRetryBaseSeconds = 5.0
    /// Seconds between the comments that keep an idle event stream open.
    public var eventStreamKeepAliveSeconds = 15.0
    /// Webhooks an app may have, at most; creating one more is answered 409.
    public var maxWebhooksPerApp = 50
    /// Event streams an app may hold open at once on a node, at most; one more is
    /// answered 429 with `Retry-After` until one closes.
    public var maxEventStreamsPerApp = 100
    /// Lowest log level written.
    public var logLevel: LogLevel = .info
    /// Log line format.
    public var logFormat: LogFormat = .logfmt
    /// Largest accepted request body, in bytes.
    public var maxBodyBytes = 64 * 1024
    /// Largest body of the routes that take a timeline (up to 1,440 entries), in bytes.
    public var maxTimelineBodyBytes = 8 * 1024 * 1024
    /// Bytes of request bodies held at once across the server, at most; past it
    /// a request with a body is answered 503 with `Retry-After`.
    public var maxBufferedBodyBytes = 256 << 20
    /// Bytes of request bodies held at once for one app, at most.
    public var maxBufferedBodyBytesPerApp = 64 << 20
    /// Seconds a request body may take to arrive after its headers; a slower one
    /// is dropped with 408.
    public var bodyTimeoutSeconds = 30.0
    /// Sign-in attempts (and refused admin tokens) a client address may make in a
    /// minute; 0 turns the limit off.
    public var signInAttemptsPerMinute = 10
    /// Where broadcasts go in production; `nil`: `apnsProductionURL`.
    public var apnsBroadcastProductionURL: String?
    /// Where broadcasts go in the sandbox; `nil`: `apnsSandboxURL`.
    public var apnsBroadcastSandboxURL: String?
    /// The channel management API of broadcast channels, production.
    public var apnsChannelsProductionURL = "https://api-manage-broadcast.push.apple.com:2196"
    /// The channel management API of broadcast channels, sandbox.
    public var apnsChannelsSandboxURL = "https://api-manage-broadcast.sandbox.push.apple.com:2195"
    /// Devices able to take a channel above which a start with `delivery: auto`
    /// uses one.
    public var broadcastThreshold = 1_000
    /// Priority-10 updates a copy of an activity gets in any hour (an app may
    /// override it).
    public var priority10PerHour = SendBudget.standard.priority10PerHour
    /// The same, on a device that allowed frequent updates.
    public var frequentPriority10PerHour = SendBudget.standard.frequentPriority10PerHour
    /// Push-to-starts a device gets in any hour; later ones wait.
    public var startsPerDevicePerHour = SendBudget.standard.startsPerDevicePerHour
    /// Requests a second of an app's `sends` family; `nil`: no limit.
    public var sendsPerSecond: Double?
    /// The `sends` family's burst; `nil`: one second's worth.
    public var sendsBurst: Int?
    /// Requests a second of an app's `registrations` family; `nil`: no limit.
    public var registrationsPerSecond: Double?
    /// The `registrations` family's burst; `nil`: one second's worth.
    public var registrationsBurst: Int?

    /// The budgets every app gets unless it sets its own.
    public var budget: SendBudget {
        SendBudget(
            priority10PerHour: priority10PerHour, frequentPriority10PerHour: frequentPriority10PerHour,
            policy: SendBudget.standard.policy, startsPerDevicePerHour: startsPerDevicePerHour)
    }

    /// The rate limits every app gets unless it sets its own.
    public var rateLimits: RateLimitDefaults {
        RateLimitDefaults(
            sendsPerSecond: sendsPerSecond, sendsBurst: sendsBurst, registrationsPerSecond: registrationsPerSecond,
            registrationsBurst: registrationsBurst)
    }
    /// Whether the client address is the last one of `X-Forwarded-For` (set by a
    /// proxy in front of Islet) rather than the connection's peer.
    public var trustForwardedFor = false
    /// Threads serving HTTP connections.
    public var httpThreads = 2
    /// Seconds that requests in flight get to finish on shutdown.
    public var shutdownGraceSeconds = 10.0
    /// The admin token for `/v1/apps`; `nil` reads (or generates once) the one in the
    /// data folder.
    public var adminToken: String?
    /// The key that seals APNs private keys and webhook secrets in the database,
    /// 32 bytes in base64; `nil` reads `secretsKeyFile`, or on SQLite the key kept
    /// in (or generated once into) the data folder.
    public var secretsKey: String?
    /// A file holding the secrets key in base64.
    public var secretsKeyFile: String?
    /// The APNs production endpoint.
    public var apnsProductionURL = APNsEnvironment.production.endpoint
    /// The APNs sandbox endpoint.
    public var apnsSandboxURL = APNsEnvironment.sandbox.endpoint
    /// A PEM file of CA certificates to trust for APNs instead of the system's.
    public var apnsCAFile: String?
    /// FCM's HTTP v1 API.
    public var fcmURL = FCMClientConfiguration.endpoint
    /// A PEM file of CA certificates to trust for FCM and the token URIs instead of
    /// the system's.
    public var fcmCAFile: String?
    /// Whether a service account's token URI may reach loopback, private and
    /// link-local addresses (metadata, unspecified, multicast, broadcast and reserved
    /// ones are refused even so); `simulator` allows them too.
    public var fcmAllowPrivate = false

    /// Whether service accounts' token URIs may reach private addresses: with
    /// `--fcm-allow-private`, or the embedded simulators of `--simulator`.
    var fcmTokenURIsMayBePrivate: Bool { fcmAllowPrivate || simulator }
    /// Runs the APNs simulator in the same process and sends every push to it.
    public var simulator = false
    /// The embedded simulator's APNs port (0 picks a free one).
    public var simulatorPort = 2197
    /// The embedded simulator's inspection port (0 picks a free one).
    public var simulatorInspectPort = 2198
    /// Pushes handed to APNs and not yet answered, at most.
    public var deliveryMaxInFlight = DeliveryConfiguration.defaultMaxInFlight
    /// Hours from an activity's start during which it may be updated.
    public var updateWindowHours = LifecycleWindows.activityKit.update / 3600
    /// Hours after the update window during which it may still be ended.
    public var endWindowHours = LifecycleWindows.activityKit.end / 3600
    /// Hours a dashboard session lasts from its sign-in.
    public var dashboardSessionHours = 12.0
    /// The URL clients reach Islet at, when a proxy in front of it serves another
    /// (`https://islet.example.com`): an `https` one marks the dashboard's session
    /// cookie `Secure`.
    public var publicURL: String?

    /// The defaults.
    public init() {}
}
