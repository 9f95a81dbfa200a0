import Foundation
public import IsletCore
public import IsletLog

/// Everything `islet serve` can be told, with defaults. Filled from `ISLET_*`
/// environment variables and then command-line flags (a flag wins), and validated
/// before anything starts.
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
    public var pushLeaseSeconds = 30.0
    /// Minutes before an activity's update window closes that a timeline with
    /// `renew` starts its successor.
    public var renewLeadMinutes = 15.0
    /// Minutes an update token may take after APNs accepted a push-to-start before
    /// `activity.start_unconfirmed`.
    public var startConfirmMinutes = 10.0
    /// Days events (and their finished webhook deliveries) are kept.
    public var eventRetentionDays = 7.0
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
    public var apnsProductionURL = "https://api.push.apple.com"
    /// The APNs sandbox endpoint.
    public var apnsSandboxURL = "https://api.sandbox.push.apple.com"
    /// A PEM file of CA certificates to trust for APNs instead of the system's.
    public var apnsCAFile: String?
    /// Runs the APNs simulator in the same process and sends every push to it.
    public var simulator = false
    /// The embedded simulator's APNs port (0 picks a free one).
    public var simulatorPort = 2197
    /// The embedded simulator's inspection port (0 picks a free one).
    public var simulatorInspectPort = 2198
    /// Pushes handed to APNs and not yet answered, at most.
    public var deliveryMaxInFlight = 2_000
    /// Hours from an activity's start during which it may be updated.
    public var updateWindowHours = 8.0
    /// Hours after the update window during which it may still be ended.
    public var endWindowHours = 4.0
    /// Hours a dashboard session lasts from its sign-in.
    public var dashboardSessionHours = 12.0
    /// The URL clients reach Islet at, when a proxy in front of it serves another
    /// (`https://islet.example.com`): an `https` one marks the dashboard's session
    /// cookie `Secure`.
    public var publicURL: String?

    /// The defaults.
    public init() {}

    /// The database actually used: the SQLite file, or the PostgreSQL URL.
    public var resolvedDatabasePath: String {
        databasePath ?? (dataDirectory as NSString).appendingPathComponent("islet.sqlite")
    }

    /// The PostgreSQL URL, when the database is one.
    public var postgresURL: String? {
        guard let databasePath, Self.isPostgresURL(databasePath) else { return nil }
        return databasePath
    }

    /// Whether `value` names a PostgreSQL database (`postgres://` or
    /// `postgresql://`) rather than an SQLite file.
    public static func isPostgresURL(_ value: String) -> Bool {
        let lowered = value.lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// This node's id: the one given, else the host name and the API's port (the
    /// process id when the port is picked at start).
    public var resolvedNodeID: String {
        if let nodeID { return nodeID }
        // The kernel's host name, without asking a name server for a longer one.
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count - 1) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "islet"
        return port == 0 ? "\(host):pid\(getpid())" : "\(host):\(port)"
    }

    /// One setting: its flag, its environment variable, its default and how a value
    /// is read into a configuration.
    public struct Setting: Sendable {
        /// The flag, as `--port`.
        public let flag: String
        /// The environment variable, as `ISLET_PORT`.
        public let environment: String
        /// The default, as text for help and docs.
        public let defaultText: String
        /// What the setting does.
        public let help: String
        /// Whether the flag may stand alone (`--simulator` meaning true).
        public var isSwitch = false
        /// Reads `value` into the configuration, or answers why it is refused.
        let apply: @Sendable (inout Configuration, String) -> String?

        init(
            flag: String, environment: String, defaultText: String, help: String, isSwitch: Bool = false,
            apply: @escaping @Sendable (inout Configuration, String) -> String?
        ) {
            self.flag = flag
            self.environment = environment
            self.defaultText = defaultText
            self.help = help
            self.isSwitch = isSwitch
            self.apply = apply
        }
    }

    /// The value of a switch: true or false in the usual spellings, else nil.
    static func switchValue(_ value: String) -> Bool? {
        switch value.lowercased() {
        case "true", "1", "yes", "on": true
        case "false", "0", "no", "off": false
        default: nil
        }
    }

    /// Every setting, in the order help and docs list them.
    public static let settings: [Setting] = [
        Setting(flag: "--host", environment: "ISLET_HOST", defaultText: "127.0.0.1",
                help: "Address the HTTP API listens on: an IPv4 or IPv6 address, or localhost.") { config, value in
            guard !value.isEmpty else { return "an address is required" }
            guard isListeningAddress(value) else {
                return "not an IP address (such as 127.0.0.1, 0.0.0.0 or ::1) or localhost"
            }
            config.host = value
            return nil
        },
        Setting(flag: "--port", environment: "ISLET_PORT", defaultText: "8080",
                help: "Port the HTTP API listens on; 0 picks a free port.") { config, value in
            guard let port = port(value) else { return "not a port number (0-65535)" }
            config.port = port
            return nil
        },
        Setting(flag: "--data-dir", environment: "ISLET_DATA_DIR", defaultText: "data",
                help: "Folder for the database and other state; created if missing.") { config, value in
            guard !value.isEmpty else { return "a folder path is required" }
            config.dataDirectory = value
            return nil
        },
        Setting(flag: "--database", environment: "ISLET_DATABASE", defaultText: "<data-dir>/islet.sqlite",
                help: "SQLite database file (WAL mode; created if missing), or a postgres:// URL (libpq's rules; PGPASSWORD and ~/.pgpass work).") { config, value in
            guard !value.isEmpty else { return "a file path or a postgres:// URL is required" }
            if value.contains("://") && !isPostgresURL(value) {
                return "neither a file path nor a postgres:// or postgresql:// URL"
            }
            config.databasePath = value
            return nil
        },
        Setting(flag: "--database-pool-size", environment: "ISLET_DATABASE_POOL_SIZE", defaultText: "8",
                help: "Connections to PostgreSQL, at most (each used by one thread at a time).") { config, value in
            guard let count = Int(value), (1...200).contains(count) else { return "not a count from 1 to 200" }
            config.databasePoolSize = count
            return nil
        },
        Setting(flag: "--node-id", environment: "ISLET_NODE_ID", defaultText: "<host name>:<port>",
                help: "This node's id among the nodes sharing one database: the holder of the pushes it claims.") { config, value in
            guard (1...128).contains(value.count), value.allSatisfy({ $0.isASCII && !$0.isWhitespace && !$0.isNewline && $0.asciiValue! >= 0x21 }) else {
                return "not an id of 1 to 128 printable characters without spaces"
            }
            config.nodeID = value
            return nil
        },
        Setting(flag: "--push-lease-seconds", environment: "ISLET_PUSH_LEASE_SECONDS", defaultText: "30",
                help: "Seconds a node's claim on a push lasts unless renewed; a dead node's pushes go to another after it.") { config, value in
            guard let seconds = Double(value), seconds.isFinite, (1...3_600).contains(seconds) else {
                return "not a number of seconds from 1 to 3600"
            }
            config.pushLeaseSeconds = seconds
            return nil
        },
        Setting(flag: "--renew-lead-minutes", environment: "ISLET_RENEW_LEAD_MINUTES", defaultText: "15",
                help: "Minutes before an activity's update window closes that a timeline with renew starts its successor.") { config, value in
            guard let minutes = Double(value), minutes.isFinite, (1...240).contains(minutes) else {
                return "not a number of minutes from 1 to 240"
            }
            config.renewLeadMinutes = minutes
            return nil
        },
        Setting(flag: "--start-confirm-minutes", environment: "ISLET_START_CONFIRM_MINUTES", defaultText: "10",
                help: "Minutes a push-to-start APNs accepted may wait for its update token before activity.start_unconfirmed.") { config, value in
            guard let minutes = Double(value), minutes.isFinite, (1...1_440).contains(minutes) else {
                return "not a number of minutes from 1 to 1440"
            }
            config.startConfirmMinutes = minutes
            return nil
        },
        Setting(flag: "--event-retention-days", environment: "ISLET_EVENT_RETENTION_DAYS", defaultText: "7",
                help: "Days events and their finished webhook deliveries are kept.") { config, value in
            guard let days = Double(value), days.isFinite, (1...365).contains(days) else {
                return "not a number of days from 1 to 365"
            }
            config.eventRetentionDays = days
            return nil
        },
        Setting(flag: "--webhooks-allow-http", environment: "ISLET_WEBHOOKS_ALLOW_HTTP", defaultText: "false",
                help: "Accept plain http webhook URLs (https only by default).", isSwitch: true) { config, value in
            guard let flag = Self.switchValue(value) else { return "not true or false" }
            config.webhooksAllowHTTP = flag
            return nil
        },
        Setting(flag: "--webhooks-allow-private", environment: "ISLET_WEBHOOKS_ALLOW_PRIVATE", defaultText: "false",
                help: "Accept webhook URLs that reach loopback, private or link-local addresses; metadata, unspecified, multicast, broadcast and reserved ones stay refused.", isSwitch: true) { config, value in
            guard let flag = Self.switchValue(value) else { return "not true or false" }
            config.webhooksAllowPrivate = flag
            return nil
        },
        Setting(flag: "--webhook-retry-base-seconds", environment: "ISLET_WEBHOOK_RETRY_BASE_SECONDS", defaultText: "5",
                help: "Seconds before a failed webhook delivery is tried again; each retry waits twice as long, up to an hour.") { config, value in
            guard let seconds = Double(value), seconds.isFinite, (0.1...3_600).contains(seconds) else {
                return "not a number of seconds from 0.1 to 3600"
            }
            config.webhookRetryBaseSeconds = seconds
            return nil
        },
        Setting(flag: "--event-stream-keepalive-seconds", environment: "ISLET_EVENT_STREAM_KEEPALIVE_SECONDS", defaultText: "15",
                help: "Seconds between the comments that keep an idle event stream open through proxies.") { config, value in
            guard let seconds = Double(value), seconds.isFinite, (0.1...300).contains(seconds) else {
                return "not a number of seconds from 0.1 to 300"
            }
            config.eventStreamKeepAliveSeconds = seconds
            return nil
        },
        Setting(flag: "--max-webhooks-per-app", environment: "ISLET_MAX_WEBHOOKS_PER_APP", defaultText: "50",
                help: "Webhooks an app may have; creating one more gets 409.") { config, value in
            guard let count = Int(value), (1...10_000).contains(count) else { return "not a count from 1 to 10000" }
            config.maxWebhooksPerApp = count
            return nil
        },
        Setting(flag: "--max-event-streams-per-app", environment: "ISLET_MAX_EVENT_STREAMS_PER_APP", defaultText: "100",
                help: "Event streams an app may hold open at once on a node; one more gets 429 and Retry-After until one closes.") { config, value in
            guard let count = Int(value), (1...100_000).contains(count) else { return "not a count from 1 to 100000" }
            config.maxEventStreamsPerApp = count
            return nil
        },
        Setting(flag: "--log-level", environment: "ISLET_LOG_LEVEL", defaultText: "info",
                help: "Lowest level logged: debug, info, notice, warning or error.") { config, value in
            guard let level = LogLevel(rawValue: value.lowercased()) else {
                return "not a log level (one of \(LogLevel.allCases.map(\.rawValue).joined(separator: ", ")))"
            }
            config.logLevel = level
            return nil
        },
        Setting(flag: "--log-format", environment: "ISLET_LOG_FORMAT", defaultText: "logfmt",
                help: "Log line format: logfmt or json.") { config, value in
            guard let format = LogFormat(rawValue: value.lowercased()) else {
                return "not a log format (one of \(LogFormat.allCases.map(\.rawValue).joined(separator: ", ")))"
            }
            config.logFormat = format
            return nil
        },
        Setting(flag: "--max-body-bytes", environment: "ISLET_MAX_BODY_BYTES", defaultText: "65536",
                help: "Largest request body accepted; larger bodies get 413.") { config, value in
            guard let bytes = Int(value), (1...(64 << 20)).contains(bytes) else { return "not a size from 1 to 67108864 bytes" }
            config.maxBodyBytes = bytes
            return nil
        },
        Setting(flag: "--max-buffered-body-bytes", environment: "ISLET_MAX_BUFFERED_BODY_BYTES", defaultText: "268435456",
                help: "Bytes of request bodies held at once across the server; past it a request with a body gets 503 and Retry-After.") { config, value in
            guard let bytes = Int(value), (65_536...(64 << 30)).contains(bytes) else { return "not a size from 65536 to 68719476736 bytes" }
            config.maxBufferedBodyBytes = bytes
            return nil
        },
        Setting(flag: "--max-buffered-body-bytes-per-app", environment: "ISLET_MAX_BUFFERED_BODY_BYTES_PER_APP", defaultText: "67108864",
                help: "Bytes of request bodies held at once for one app; past it that app's requests with a body get 503 and Retry-After.") { config, value in
            guard let bytes = Int(value), (65_536...(64 << 30)).contains(bytes) else { return "not a size from 65536 to 68719476736 bytes" }
            config.maxBufferedBodyBytesPerApp = bytes
            return nil
        },
        Setting(flag: "--body-timeout-seconds", environment: "ISLET_BODY_TIMEOUT_SECONDS", defaultText: "30",
                help: "Seconds a request body may take to arrive after its headers; a slower one is dropped with 408.") { config, value in
            guard let seconds = Double(value), seconds.isFinite, (0.1...3_600).contains(seconds) else {
                return "not a number of seconds from 0.1 to 3600"
            }
            config.bodyTimeoutSeconds = seconds
            return nil
        },
        Setting(flag: "--sign-in-attempts-per-minute", environment: "ISLET_SIGN_IN_ATTEMPTS_PER_MINUTE", defaultText: "10",
                help: "Dashboard sign-ins (and refused admin tokens) a client address may try in a minute, then 429; 0 turns the limit off.") { config, value in
            guard let attempts = Int(value), (0...100_000).contains(attempts) else { return "not a count from 0 to 100000" }
            config.signInAttemptsPerMinute = attempts
            return nil
        },
        Setting(flag: "--trust-forwarded-for", environment: "ISLET_TRUST_FORWARDED_FOR", defaultText: "false",
                help: "Take the client address from the last X-Forwarded-For entry (set only behind a proxy that writes it).", isSwitch: true) { config, value in
            guard let flag = Self.switchValue(value) else { return "not true or false" }
            config.trustForwardedFor = flag
            return nil
        },
        Setting(flag: "--http-threads", environment: "ISLET_HTTP_THREADS", defaultText: "2",
                help: "Threads serving HTTP connections.") { config, value in
            guard let threads = Int(value), (1...256).contains(threads) else { return "not a thread count from 1 to 256" }
            config.httpThreads = threads
            return nil
        },
        Setting(flag: "--shutdown-grace-seconds", environment: "ISLET_SHUTDOWN_GRACE_SECONDS", defaultText: "10",
                help: "Seconds requests in flight get to finish on shutdown.") { config, value in
            guard let seconds = Double(value), seconds.isFinite, (0...3_600).contains(seconds) else {
                return "not a number of seconds from 0 to 3600"
            }
            config.shutdownGraceSeconds = seconds
            return nil
        },
        Setting(flag: "--admin-token", environment: "ISLET_ADMIN_TOKEN", defaultText: "generated into <data-dir>/admin-token",
                help: "Bearer token for the admin routes (/v1/apps); at least 16 characters.") { config, value in
            guard value.count >= 16, !value.contains(where: \.isWhitespace) else {
                return "not a token of at least 16 characters without spaces"
            }
            config.adminToken = value
            return nil
        },
        Setting(flag: "--secrets-key", environment: "ISLET_SECRETS_KEY",
                defaultText: "generated into <data-dir>/secrets.key on SQLite; required on PostgreSQL",
                help: "Key sealing APNs keys and webhook secrets in the database: 32 random bytes in base64 (islet secrets generate); best set in the environment.") { config, value in
            let text = value.trimmingCharacters(in: .whitespacesAndNewlines)
            guard let bytes = Data(base64Encoded: text), bytes.count == 32 else {
                return "not 32 bytes in base64 (islet secrets generate makes a key)"
            }
            config.secretsKey = text
            return nil
        },
        Setting(flag: "--secrets-key-file", environment: "ISLET_SECRETS_KEY_FILE", defaultText: "none",
                help: "File holding the secrets key in base64, for when ISLET_SECRETS_KEY does not give it.") { config, value in
            guard !value.isEmpty else { return "a file path is required" }
            config.secretsKeyFile = value
            return nil
        },
        Setting(flag: "--apns-production-url", environment: "ISLET_APNS_PRODUCTION_URL", defaultText: "https://api.push.apple.com",
                help: "APNs production endpoint.") { config, value in
            guard let problem = urlProblem(value) else {
                config.apnsProductionURL = value
                return nil
            }
            return problem
        },
        Setting(flag: "--apns-sandbox-url", environment: "ISLET_APNS_SANDBOX_URL", defaultText: "https://api.sandbox.push.apple.com",
                help: "APNs sandbox endpoint.") { config, value in
            guard let problem = urlProblem(value) else {
                config.apnsSandboxURL = value
                return nil
            }
            return problem
        },
        Setting(flag: "--apns-ca-file", environment: "ISLET_APNS_CA_FILE", defaultText: "the system's roots",
                help: "PEM file of CA certificates trusted for APNs (for a simulator).") { config, value in
            guard !value.isEmpty else { return "a file path is required" }
            config.apnsCAFile = value
            return nil
        },
        Setting(flag: "--simulator", environment: "ISLET_SIMULATOR", defaultText: "false",
                help: "Run the APNs simulator in-process and send every push to it; creates a demo app.",
                isSwitch: true) { config, value in
            guard let flag = Self.switchValue(value) else { return "not true or false" }
            config.simulator = flag
            return nil
        },
        Setting(flag: "--simulator-port", environment: "ISLET_SIMULATOR_PORT", defaultText: "2197",
                help: "APNs port of the in-process simulator; 0 picks a free port.") { config, value in
            guard let port = port(value) else { return "not a port number (0-65535)" }
            config.simulatorPort = port
            return nil
        },
        Setting(flag: "--simulator-inspect-port", environment: "ISLET_SIMULATOR_INSPECT_PORT", defaultText: "2198",
                help: "Inspection port of the in-process simulator; 0 picks a free port.") { config, value in
            guard let port = port(value) else { return "not a port number (0-65535)" }
            config.simulatorInspectPort = port
            return nil
        },
        Setting(flag: "--delivery-max-in-flight", environment: "ISLET_DELIVERY_MAX_IN_FLIGHT", defaultText: "2000",
                help: "Pushes handed to APNs and not yet answered, at most.") { config, value in
            guard let count = Int(value), (1...100_000).contains(count) else { return "not a count from 1 to 100000" }
            config.deliveryMaxInFlight = count
            return nil
        },
        Setting(flag: "--update-window-hours", environment: "ISLET_UPDATE_WINDOW_HOURS", defaultText: "8",
                help: "Hours from an activity's start during which updates are accepted.") { config, value in
            guard let hours = Double(value), hours.isFinite, hours > 0, hours <= 24 * 30 else {
                return "not a number of hours above 0"
            }
            config.updateWindowHours = hours
            return nil
        },
        Setting(flag: "--end-window-hours", environment: "ISLET_END_WINDOW_HOURS", defaultText: "4",
                help: "Hours after the update window during which an end is still accepted.") { config, value in
            guard let hours = Double(value), hours.isFinite, hours >= 0, hours <= 24 * 30 else {
                return "not a number of hours from 0"
            }
            config.endWindowHours = hours
            return nil
        },
        Setting(flag: "--dashboard-session-hours", environment: "ISLET_DASHBOARD_SESSION_HOURS", defaultText: "12",
                help: "Hours a dashboard session lasts from its sign-in.") { config, value in
            guard let hours = Double(value), hours.isFinite, hours > 0, hours <= 24 * 30 else {
                return "not a number of hours above 0 (at most 720)"
            }
            config.dashboardSessionHours = hours
            return nil
        },
        Setting(flag: "--public-url", environment: "ISLET_PUBLIC_URL", defaultText: "none",
                help: "The URL clients reach Islet at (behind a proxy); https marks the dashboard's cookie Secure.") { config, value in
            guard let problem = urlProblem(value) else {
                config.publicURL = value
                return nil
            }
            return problem
        },
    ]

    /// A value as an error may show it: a URL's password hidden.
    static func shownValue(_ value: String) -> String {
        redactingPassword(value)
    }

    /// `text` with the password of a URL in it (`scheme://user:password@host`, or a
    /// `password=` parameter) replaced by `***`.
    public static func redactingPassword(_ text: String) -> String {
        var result = text
        if let scheme = result.range(of: "://") {
            let rest = result[scheme.upperBound...]
            // As libpq reads it: the user part ends at the first "/" only (a "?" may
            // stand in a password).
            let authority = rest[..<(rest.firstIndex(of: "/") ?? rest.endIndex)]
            if let at = authority.lastIndex(of: "@"), let colon = authority[..<at].firstIndex(of: ":") {
                result.replaceSubrange(rest.index(after: colon)..<at, with: "***")
            }
        }
        if let range = result.range(of: "password=", options: .caseInsensitive) {
            let end = result[range.upperBound...].firstIndex(where: { $0 == "&" || $0 == " " }) ?? result.endIndex
            result.replaceSubrange(range.upperBound..<end, with: "***")
        }
        return result
    }

    /// An IPv4 or IPv6 address literal, or `localhost`: what the API can bind
    /// without asking a name server.
    static func isListeningAddress(_ value: String) -> Bool {
        if value == "localhost" { return true }
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, value, &v4) == 1 || inet_pton(AF_INET6, value, &v6) == 1
    }

    private static func port(_ value: String) -> Int? {
        guard let port = Int(value), (0...65_535).contains(port) else { return nil }
        return port
    }

    private static func urlProblem(_ value: String) -> String? {
        guard let url = URL(string: value), let scheme = url.scheme, ["https", "http"].contains(scheme), url.host != nil else {
            return "not an https:// URL with a host"
        }
        return nil
    }

    /// The lifecycle windows configured.
    public var lifecycleWindows: LifecycleWindows {
        LifecycleWindows(update: updateWindowHours * 3600, end: endWindowHours * 3600)
    }

    /// Whether the public URL is `https`: the dashboard's cookie is then `Secure`
    /// whatever the request says.
    public var publicURLIsHTTPS: Bool {
        publicURL?.lowercased().hasPrefix("https://") ?? false
    }

    /// Where a generated admin token is kept.
    public var adminTokenPath: String {
        (dataDirectory as NSString).appendingPathComponent("admin-token")
    }

    /// Where the secrets key of an SQLite database is kept when none is given.
    public var secretsKeyPath: String {
        (dataDirectory as NSString).appendingPathComponent("secrets.key")
    }

    /// The settings whose values are never shown, even in the error refusing them.
    static let secretFlags: Set<String> = ["--admin-token", "--secrets-key"]

    /// Reads the environment's `ISLET_*` variables, then `arguments` (flags of the
    /// form `--name value` or `--name=value`), over the defaults. Answers the
    /// configuration and warnings (such as unknown `ISLET_*` variables).
    public static func load(
        arguments: [String],
        environment: [String: String]
    ) throws(ConfigurationError) -> (configuration: Configuration, warnings: [String]) {
        var config = Configuration()
        var warnings: [String] = []
        let known = Set(settings.map(\.environment))
        for name in environment.keys.sorted() where name.hasPrefix("ISLET_") && !known.contains(name) {
            warnings.append("ignoring unknown environment variable \(name)")
        }
        // Flags first, read but not yet applied: a setting a flag gives is never
        // read from the environment, so a bad value there that a flag overrides is
        // no error.
        var flags: [(setting: Setting, value: String)] = []
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            guard argument.hasPrefix("--") else {
                throw ConfigurationError(.unknownOption, setting: argument, message: "expected a flag such as --port; see --help")
            }
            let name: String
            var value: String?
            if let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                value = String(argument[argument.index(after: equals)...])
            } else {
                name = argument
            }
            guard let setting = settings.first(where: { $0.flag == name }) else {
                throw ConfigurationError(.unknownOption, setting: name, message: "no such setting; see --help")
            }
            if value == nil && setting.isSwitch {
                value = "true"
            } else if value == nil {
                guard index < arguments.count else {
                    throw ConfigurationError(.missingValue, setting: "\(setting.flag) (\(setting.environment))", message: "a value is required")
                }
                value = arguments[index]
                index += 1
            }
            flags.append((setting, value!))
        }
        let given = Set(flags.map(\.setting.flag))
        for setting in settings where !given.contains(setting.flag) {
            guard let value = environment[setting.environment] else { continue }
            if let problem = setting.apply(&config, value) {
                let shown = secretFlags.contains(setting.flag)
                    ? "the value of \(setting.environment)" : "the value of \(setting.environment), \(quoted(shownValue(value))),"
                throw ConfigurationError(
                    .invalidValue, setting: "\(setting.flag) (\(setting.environment))", message: "\(shown) is \(problem)")
            }
        }
        for (setting, value) in flags {
            if let problem = setting.apply(&config, value) {
                let shown = secretFlags.contains(setting.flag) ? "the value given to \(setting.flag)" : quoted(shownValue(value))
                throw ConfigurationError(
                    .invalidValue, setting: "\(setting.flag) (\(setting.environment))", message: "\(shown) is \(problem)")
            }
        }
        return (config, warnings)
    }

    /// Checks what the values point at, then makes the folders they need: the data
    /// folder (created, and writable) and the database's folder (created), and the
    /// database path is not a folder. Answers the folders it created, deepest first,
    /// so that a start that fails later can remove them again; when it fails itself,
    /// it removes what it created.
    @discardableResult
    public func prepareFilesystem() throws(ConfigurationError) -> [String] {
        let files = FileManager.default
        var isDirectory: ObjCBool = false
        if files.fileExists(atPath: dataDirectory, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw ConfigurationError(.unusable, setting: "--data-dir (ISLET_DATA_DIR)", message: "\(dataDirectory) exists and is not a folder")
        }
        let database = resolvedDatabasePath
        if postgresURL == nil, files.fileExists(atPath: database, isDirectory: &isDirectory), isDirectory.boolValue {
            throw ConfigurationError(.unusable, setting: "--database (ISLET_DATABASE)", message: "\(database) is a folder, not a database file")
        }
        var created: [String] = []
        do throws(ConfigurationError) {
            created += try Self.makeFolder(dataDirectory, setting: "--data-dir (ISLET_DATA_DIR)")
            guard files.isWritableFile(atPath: dataDirectory) else {
                throw ConfigurationError(.unusable, setting: "--data-dir (ISLET_DATA_DIR)", message: "\(dataDirectory) is not writable")
            }
            let parent = (database as NSString).deletingLastPathComponent
            if postgresURL == nil, !parent.isEmpty {
                created = try Self.makeFolder(parent, setting: "--database (ISLET_DATABASE)") + created
            }
        } catch {
            Self.removeFolders(created)
            throw error
        }
        return created
    }

    /// Creates `path` and its missing parents; answers those it created, deepest first.
    private static func makeFolder(_ path: String, setting: String) throws(ConfigurationError) -> [String] {
        let files = FileManager.default
        var missing: [String] = []
        var isDirectory: ObjCBool = false
        var current = (path as NSString).standardizingPath
        while !current.isEmpty && current != "/" && !files.fileExists(atPath: current, isDirectory: &isDirectory) {
            missing.append(current)
            current = (current as NSString).deletingLastPathComponent
        }
        if !current.isEmpty, files.fileExists(atPath: current, isDirectory: &isDirectory), !isDirectory.boolValue {
            throw ConfigurationError(.unusable, setting: setting, message: "cannot create \(path): \(current) is not a folder")
        }
        guard !missing.isEmpty else { return [] }
        do {
            // Readable by Islet's user only: it holds the database and the keys.
            try files.createDirectory(atPath: path, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        } catch {
            removeFolders(missing)
            throw ConfigurationError(.unusable, setting: setting, message: "cannot create \(path): \(Configuration.reason(error))")
        }
        return missing
    }

    /// Removes folders a failed start created, deepest first, each only if it is
    /// still empty.
    public static func removeFolders(_ folders: [String]) {
        for folder in folders { _ = rmdir(folder) }
    }

    /// The usage text for `islet serve --help`, listing every setting.
    public static var helpText: String {
        var lines = ["Usage: islet serve [options]", "", "Options (each also an environment variable):"]
        for setting in settings {
            // A flag longer than the column keeps its whole name, and a space.
            let name = "  \(setting.flag)\(setting.isSwitch ? "" : " VALUE")"
            lines.append(name.padding(toLength: max(34, name.count + 1), withPad: " ", startingAt: 0)
                + "\(setting.help) [\(setting.environment), default \(setting.defaultText)]")
        }
        return lines.joined(separator: "\n")
    }

    private static func quoted(_ value: String) -> String { "\"\(value)\"" }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSUnderlyingErrorKey] as? NSError,
            underlying.domain == NSPOSIXErrorDomain, let code = POSIXErrorCode(rawValue: Int32(underlying.code))
        {
            return String(describing: POSIXError(code).localizedDescription)
        }
        return nsError.localizedDescription
    }
}
