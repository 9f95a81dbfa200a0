import Foundation
import PostgreSQLStorage
import IsletCore

extension Configuration {
    /// Every setting of `islet serve`, in the order help and docs/configuration.md list them.
    /// A new setting is a property of ``Configuration`` (its initial value is the
    /// default) and one entry here: `ConfigurationTests` fails on a property with
    /// no entry (unless only code sets it), and `ConfigurationReferenceTests` on an
    /// entry without its row in docs/configuration.md, printing the table to paste.
    public static let settings: [Setting] = [
        Setting(
            "--host", \.host, .listeningAddress,
            help: "Address the HTTP API listens on: an IPv4 or IPv6 address, or localhost.",
            readme: "Address the HTTP API listens on: an IPv4 or IPv6 address, or `localhost`."),
        Setting(
            "--port", \.port, .port,
            help: "Port the HTTP API listens on; 0 picks a free port.",
            readme: "Port the HTTP API listens on; `0` picks a free port."),
        Setting(
            "--data-dir", \.dataDirectory, .required("a folder path is required"),
            help: "Folder for the database and other state; created if missing."),
        Setting(
            "--database", \.databasePath, .databaseLocation, default: "`<data-dir>/islet.sqlite`",
            help: "SQLite database file (WAL mode; created if missing), or a postgres:// URL (libpq's rules; PGPASSWORD and ~/.pgpass work).",
            readme: "SQLite database file (WAL mode; created if missing, with its folder), or a `postgres://` / `postgresql://` URL (see [Several nodes on PostgreSQL](postgresql.md#several-nodes-on-postgresql)). An error never shows the URL's password."),
        Setting(
            "--database-pool-size", \.databasePoolSize, .count(1...200),
            help: "Connections to PostgreSQL, at most (each used by one thread at a time).",
            readme: "Connections to PostgreSQL, at most ({range}), each used by one thread at a time; one more listens for other nodes' notices."),
        Setting(
            "--node-id", \.nodeID, .nodeID, default: "`<host name>:<port>`",
            help: "This node's id among the nodes sharing one database: the holder of the pushes it claims.",
            readme: "This node's id among the nodes of one database (`<host name>:pid<pid>` by default with `--port 0`): it holds the pushes the node claims, and names its heartbeat, its health answer and its metrics. Give each node its own, and the same one again when a node restarts."),
        Setting(
            "--push-lease-seconds", \.pushLeaseSeconds, .number(1...3_600, of: "seconds"),
            help: "Seconds a node's claim on a push lasts unless renewed; a dead node's pushes go to another after it.",
            readme: "How long a node's claim on a push lasts unless renewed (renewed, with the heartbeat, every third of it). When a node dies, another sends its pushes once the lease runs out."),
        Setting(
            "--renew-lead-minutes", \.renewLeadMinutes, .number(1...240, of: "minutes"),
            help: "Minutes before an activity's update window closes that a timeline with renew starts its successor.",
            readme: "How long before an activity's update window closes a timeline with `renew: true` ends it and starts its successor ({range})."),
        Setting(
            "--start-confirm-minutes", \.startConfirmMinutes, .number(1...1_440, of: "minutes"),
            help: "Minutes a push-to-start APNs accepted may wait for its update token before activity.start_unconfirmed.",
            readme: "Minutes a push-to-start that APNs accepted may wait for the device's update token before `activity.start_unconfirmed` ({range})."),
        Setting(
            "--event-retention-days", \.eventRetentionDays, .number(1...365, of: "days"),
            help: "Days events and their finished webhook deliveries are kept.",
            readme: "Days events (and their finished webhook deliveries) are kept ({range})."),
        Setting(
            "--history-retention-days", \.historyRetentionDays, .historyRetentionDays,
            help: "Days the history of what was sent is kept: ended activities with their copies and taps, settled sends with their pushes (an app may keep its own for less).",
            readme: "Days the history of what was sent is kept, from {range}, fractions allowed: activities that ended, with their copies, audiences, taps and timelines, and sends whose pushes all settled, with those pushes. An app keeps its own for less with `history_retention_days`. Not events, webhook deliveries or idempotency answers, which keep their own. See [Retention](operations.md#retention)."),
        Setting(
            "--webhooks-allow-http", \.webhooksAllowHTTP, .switch,
            help: "Accept plain http webhook URLs (https only by default).",
            readme: "Accept plain `http` webhook URLs (`https` only otherwise)."),
        Setting(
            "--webhooks-allow-private", \.webhooksAllowPrivate, .switch,
            help: "Accept webhook URLs that reach loopback, private or link-local addresses; metadata, unspecified, multicast, broadcast and reserved ones stay refused.",
            readme: "Accept webhook URLs that reach loopback, private (RFC 1918, CGNAT, `fc00::/7`) and link-local addresses. Metadata (`169.254.169.254`, `fd00:ec2::254`, `100.100.100.200`), unspecified, multicast and reserved addresses are refused even so."),
        Setting(
            "--webhook-retry-base-seconds", \.webhookRetryBaseSeconds, .number(0.1...3_600, of: "seconds"),
            help: "Seconds before a failed webhook delivery is tried again; each retry waits twice as long, up to an hour.",
            readme: "Seconds before a failed webhook delivery is tried again; each retry waits twice as long (±20 %), at most an hour, never sooner than the endpoint's `Retry-After`."),
        Setting(
            "--event-stream-keepalive-seconds", \.eventStreamKeepAliveSeconds, .number(0.1...300, of: "seconds"),
            help: "Seconds between the comments that keep an idle event stream open through proxies."),
        Setting(
            "--max-webhooks-per-app", \.maxWebhooksPerApp, .count(1...10_000),
            help: "Webhooks an app may have; creating one more gets 409.",
            readme: "Webhooks an app may have ({range}); creating one more is `409`, naming the cap."),
        Setting(
            "--max-event-streams-per-app", \.maxEventStreamsPerApp, .count(1...100_000),
            help: "Event streams an app may hold open at once on a node; one more gets 429 and Retry-After until one closes.",
            readme: "Event streams an app may hold open at once on a node ({range}); one more is `429` with `Retry-After`, naming the cap, until one closes."),
        Setting(
            "--log-level", \.logLevel, .choice("a log level"),
            help: "Lowest level logged: debug, info, notice, warning or error.",
            readme: "Lowest level logged: `debug`, `info`, `notice`, `warning`, `error`."),
        Setting(
            "--log-format", \.logFormat, .choice("a log format"),
            help: "Log line format: logfmt or json.",
            readme: "`logfmt` or `json`, one line per event."),
        Setting(
            "--max-body-bytes", \.maxBodyBytes, .bytes(1...(64 << 20)),
            help: "Largest request body accepted; larger bodies get 413.",
            readme: "Largest request body; larger ones get 413. The routes that take a timeline or a long list (`PUT …/timeline`, `POST …/activities`, `POST …/activities/{activity_id}/audience`) accept up to \(SettingValue<Int>.spokenSize(Configuration().maxTimelineBodyBytes)), or this value when it is larger."),
        Setting(
            "--max-buffered-body-bytes", \.maxBufferedBodyBytes, .bytes(65_536...(64 << 30)),
            help: "Bytes of request bodies held at once across the server; past it a request with a body gets 503 and Retry-After.",
            readme: "Bytes of request bodies held at once across the server ({default} by default); past it a request with a body is answered `503` with `Retry-After: 1`, without its body."),
        Setting(
            "--max-buffered-body-bytes-per-app", \.maxBufferedBodyBytesPerApp, .bytes(65_536...(64 << 30)),
            help: "Bytes of request bodies held at once for one app; past it that app's requests with a body get 503 and Retry-After.",
            readme: "The same, for the requests of one app ({default} by default): one app cannot take the others' share."),
        Setting(
            "--body-timeout-seconds", \.bodyTimeoutSeconds, .number(0.1...3_600, of: "seconds"),
            help: "Seconds a request body may take to arrive after its headers; a slower one is dropped with 408.",
            readme: "Seconds a request body may take to arrive after its headers ({range}); a slower one is dropped with `408` and its connection closed."),
        Setting(
            "--sign-in-attempts-per-minute", \.signInAttemptsPerMinute, .count(0...100_000),
            help: "Dashboard sign-ins (and refused admin tokens) a client address may try in a minute, then 429; 0 turns the limit off.",
            readme: "Dashboard sign-ins a client address may try in any minute; an admin bearer token refused as unknown counts too. Past it, sign-ins and admin routes from that address are `429` with `Retry-After` until the oldest attempt is a minute old. `0` turns the limit off."),
        Setting(
            "--priority-10-per-hour", \.priority10PerHour, .count(SendBudget.range),
            help: "Priority-10 updates a copy of an activity gets in any hour; past it an update goes at priority 5 (an app may set its own).",
            readme: "Priority-10 updates a copy of an activity gets in any hour ({range}); past it, an update without an alert goes at priority 5 and its push says `priority_downgraded`. Apple documents no figure: see [Budgets](delivery.md#budgets). An app sets its own with `PATCH /v1/apps/{app_id}` `budget`."),
        Setting(
            "--frequent-priority-10-per-hour", \.frequentPriority10PerHour, .count(SendBudget.range),
            help: "The same, on a device that reported frequent_updates: true.",
            readme: "The same, on a device that reported `frequent_updates: true` ({range})."),
        Setting(
            "--starts-per-device-per-hour", \.startsPerDevicePerHour, .count(SendBudget.range),
            help: "Push-to-starts a device gets in any hour; a later one waits in the queue as deferred (an app may set its own).",
            readme: "Push-to-starts a device gets in any hour ({range}); a later one waits in the queue, its push showing `deferred_until`, and goes then unless the activity ended. An app sets its own with `budget.starts_per_device_per_hour`."),
        Setting(
            "--sends-per-second", \.sendsPerSecond, .requestsPerSecond,
            default: "none",
            help: "Send requests (starts, updates, ends, notifications, schedules, timelines) an app may make a second, on average, across every node; more get 429.",
            readme: "Requests of the `sends` family (starts, updates, ends, notifications, schedules, timelines) an app may make a second, on average, across every node ({range}); past it, `429`. See [Rate limits](delivery.md#rate-limits)."),
        Setting(
            "--sends-burst", \.sendsBurst, .count(RateLimit.burstRange), default: "one second's worth",
            help: "Send requests an app may make at once before the rate applies.",
            readme: "Send requests an app may make at once before the rate applies ({range})."),
        Setting(
            "--registrations-per-second", \.registrationsPerSecond, .requestsPerSecond,
            default: "none",
            help: "Device-route requests an app may make a second, on average, across every node; more get 429.",
            readme: "Device-route requests an app may make a second, on average, across every node ({range}); more get 429."),
        Setting(
            "--registrations-burst", \.registrationsBurst, .count(RateLimit.burstRange), default: "one second's worth",
            help: "Device-route requests an app may make at once before the rate applies.",
            readme: "Device-route requests an app may make at once before the rate applies ({range})."),
        Setting(
            "--trust-forwarded-for", \.trustForwardedFor, .switch,
            help: "Take the client address from the last X-Forwarded-For entry (set only behind a proxy that writes it).",
            readme: "Take the client address (for the limit above and the `client` of each request's log line) from the last entry of `X-Forwarded-For`, the one the proxy in front of Islet appended. Set it only behind such a proxy: otherwise any client could name any address."),
        Setting(
            "--http-threads", \.httpThreads, .count(1...256, "a thread count"),
            help: "Threads serving HTTP connections."),
        Setting(
            "--shutdown-grace-seconds", \.shutdownGraceSeconds, .number(0...3_600, of: "seconds"),
            help: "Seconds requests in flight get to finish on shutdown.",
            readme: "Time requests (and then pushes) in flight get to finish on shutdown."),
        Setting(
            "--admin-token", \.adminToken, .adminToken, default: "generated into `<data-dir>/admin-token`",
            help: "Bearer token for the admin routes (/v1/apps); at least 16 characters.",
            readme: "Bearer token for `/v1/apps`; at least 16 characters. Never echoed in errors.", secret: true),
        Setting(
            "--secrets-key", \.secretsKey, .secretsKey,
            default: "generated into `<data-dir>/secrets.key` on SQLite; required on PostgreSQL",
            help: "Key sealing APNs keys and webhook secrets in the database: 32 random bytes in base64 (islet secrets generate); best set in the environment.",
            readme: "The key that seals APNs private keys and webhook secrets in the database: 32 random bytes in base64 (`islet secrets generate`). Prefer the environment or a file: a flag shows in `ps`. Never echoed in errors. See [Secrets at rest](#secrets-at-rest).",
            secret: true),
        Setting(
            "--secrets-key-file", \.secretsKeyFile, .required("a file path is required"), default: "none",
            help: "File holding the secrets key in base64, for when ISLET_SECRETS_KEY does not give it.",
            readme: "A file holding the secrets key in base64, instead of `ISLET_SECRETS_KEY` (not both)."),
        Setting("--apns-production-url", \.apnsProductionURL, .url, help: "APNs production endpoint."),
        Setting("--apns-sandbox-url", \.apnsSandboxURL, .url, help: "APNs sandbox endpoint."),
        Setting(
            "--apns-channels-production-url", \.apnsChannelsProductionURL, .url,
            help: "The channel management API of broadcast channels (iOS 18), production.",
            readme: "The channel management API of broadcast channels (iOS 18), production: Apple serves it on a host of its own."),
        Setting(
            "--apns-channels-sandbox-url", \.apnsChannelsSandboxURL, .url,
            help: "The channel management API of broadcast channels (iOS 18), sandbox."),
        Setting(
            "--apns-broadcast-production-url", \.apnsBroadcastProductionURL, .url, default: "`--apns-production-url`",
            help: "Where broadcasts (iOS 18 channels) go in production.",
            readme: "Where broadcasts (iOS 18 channels) go in production. Apple's pages name both the push host and `https://api-broadcast.push.apple.com`; the push host is the default."),
        Setting(
            "--apns-broadcast-sandbox-url", \.apnsBroadcastSandboxURL, .url, default: "`--apns-sandbox-url`",
            help: "Where broadcasts (iOS 18 channels) go in the sandbox."),
        Setting(
            "--broadcast-threshold", \.broadcastThreshold, .count(0...100_000_000),
            help: "A start with delivery auto uses a broadcast channel when more devices of its audience than this can take one.",
            readme: "A start with `delivery: auto` uses a broadcast channel when more devices of its audience than this ({range}) can take one (iOS 18 or later, or not reported); tokens otherwise."),
        Setting(
            "--apns-ca-file", \.apnsCAFile, .required("a file path is required"), default: "the system's roots",
            help: "PEM file of CA certificates trusted for APNs (for a simulator).",
            readme: "PEM CA certificates trusted for APNs (for a simulator elsewhere)."),
        Setting(
            "--fcm-url", \.fcmURL, .url,
            help: "FCM's HTTP v1 API, where Android devices' data messages go.",
            readme: "FCM's HTTP v1 API, where Android devices' data messages go (`POST {url}/v1/projects/{project}/messages:send`)."),
        Setting(
            "--fcm-ca-file", \.fcmCAFile, .required("a file path is required"), default: "the system's roots",
            help: "PEM file of CA certificates trusted for FCM and the service accounts' token URIs (for a simulator).",
            readme: "PEM CA certificates trusted for FCM and for the service accounts' token URIs (for a simulator elsewhere)."),
        Setting(
            "--fcm-allow-private", \.fcmAllowPrivate, .switch,
            help: "Accept service accounts whose token URI reaches loopback, private or link-local addresses (a simulator elsewhere); metadata, unspecified, multicast, broadcast and reserved ones stay refused.",
            readme: "Accept service accounts whose `token_uri` reaches loopback, private (RFC 1918, CGNAT, `fc00::/7`) and link-local addresses, when saved and at every connection (an FCM simulator elsewhere; `--simulator` allows them too). Metadata, unspecified, multicast and reserved addresses are refused even so."),
        Setting(
            "--simulator", \.simulator, .switch,
            help: "Run the APNs and FCM simulators in-process and send every push to them; creates a demo app.",
            readme: "Run the APNs and FCM simulators in-process, send every push to them, create the demo app (with an iPhone and an Android phone)."),
        Setting(
            "--simulator-port", \.simulatorPort, .port,
            help: "APNs port of the in-process simulator; 0 picks a free port."),
        Setting(
            "--simulator-inspect-port", \.simulatorInspectPort, .port,
            help: "Inspection port of the in-process simulator; 0 picks a free port."),
        Setting(
            "--delivery-max-in-flight", \.deliveryMaxInFlight, .count(1...100_000),
            help: "Pushes handed to APNs and not yet answered, at most."),
        Setting(
            "--update-window-hours", \.updateWindowHours,
            .number(where: { $0 > 0 && $0 <= 24 * 30 }, refusal: "not a number of hours above 0"),
            help: "Hours from an activity's start during which updates are accepted."),
        Setting(
            "--end-window-hours", \.endWindowHours,
            .number(where: { $0 >= 0 && $0 <= 24 * 30 }, refusal: "not a number of hours from 0"),
            help: "Hours after the update window during which an end is still accepted."),
        Setting(
            "--dashboard-session-hours", \.dashboardSessionHours,
            .number(above: 0, atMost: 24 * 30, of: "hours"),
            help: "Hours a dashboard session lasts from its sign-in.",
            readme: "Hours a dashboard session lasts from its sign-in ({range})."),
        Setting(
            "--public-url", \.publicURL, .url, default: "none",
            help: "The URL clients reach Islet at (behind a proxy); https marks the dashboard's cookie Secure.",
            readme: "The URL clients reach Islet at, behind a proxy; an `https://` one marks the dashboard's session cookie `Secure`, and its origin is one a dashboard sign-in may come from (besides the `Host` a request reached Islet at)."),
    ]

    /// How errors name the setting that sets `property`: `--port (ISLET_PORT)`.
    static func label(of property: PartialKeyPath<Configuration>) -> String {
        setting(for: property).label
    }

    /// The setting that sets `property`.
    static func setting(for property: PartialKeyPath<Configuration>) -> Setting {
        guard let setting = settings.first(where: { $0.property == property }) else {
            preconditionFailure("no setting sets \(property)")
        }
        return setting
    }
}

// The values only one setting reads.
extension SettingValue where Value == Double {
    /// Days of history kept: a finite number within ``HistoryRetention/days``, from
    /// an hour to ten years.
    static var historyRetentionDays: Self {
        var value = number(
            where: HistoryRetention.accepts, refusal: "not a number of days from \(HistoryRetention.spokenRange)")
        value.range = HistoryRetention.spokenRange
        return value
    }
}

extension SettingValue where Value == String {
    /// An SQLite file, or a `postgres://` or `postgresql://` URL.
    static var databaseLocation: Self {
        text { text throws(Refusal) in
            guard !text.isEmpty else { throw Refusal("a file path or a postgres:// URL is required") }
            if text.contains("://") && !PostgresURL.isPostgresURL(text) {
                throw Refusal("neither a file path nor a postgres:// or postgresql:// URL")
            }
        }
    }

    /// A node id: 1 to 128 ASCII characters from `!` up (no spaces, no control
    /// characters).
    static var nodeID: Self {
        text { text throws(Refusal) in
            guard (1...128).contains(text.count), text.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline && ($0.asciiValue ?? 0) >= 0x21 }) else {
                throw Refusal("not an id of 1 to 128 printable characters without spaces")
            }
        }
    }

    /// A bearer token of at least 16 characters without spaces.
    static var adminToken: Self {
        text { text throws(Refusal) in
            guard text.count >= 16, !text.contains(where: \.isWhitespace) else {
                throw Refusal("not a token of at least 16 characters without spaces")
            }
        }
    }

    /// 32 bytes in base64, kept without the spaces around it.
    static var secretsKey: Self {
        Self(read: { text throws(Refusal) in
            let key = text.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Data(base64Encoded: key), bytes.count == 32 else {
                throw Refusal("not 32 bytes in base64 (islet secrets generate makes a key)")
            }
            return key
        }, show: { $0 })
    }
}
