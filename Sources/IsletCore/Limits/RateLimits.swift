/// The route families a rate limit covers, each with a bucket of its own per app.
public enum RateFamily: String, Sendable, Hashable, CaseIterable {
    /// Starts, updates, ends, notifications, schedules and timelines.
    case sends
    /// The device routes.
    case registrations
}

/// One family's limit: `perSecond` requests a second on average, `burst` at once.
public struct RateLimit: Sendable, Hashable {
    /// Requests admitted a second, on average.
    public var perSecond: Double
    /// Requests a full bucket admits at once.
    public var burst: Int

    /// Creates a limit.
    public init(perSecond: Double, burst: Int) {
        self.perSecond = perSecond
        self.burst = burst
    }

    /// The burst taken when none is set: one second's worth, at least one.
    public static func defaultBurst(perSecond: Double) -> Int {
        max(1, Int(perSecond.rounded(.up)))
    }
}

/// The server's rate limits for every app, by family (none unless set): the same
/// four figures an app may set, with nothing beneath them.
public typealias RateLimitDefaults = RateLimitOverrides

/// An app's own rate limits; each `nil` takes the server's.
public struct RateLimitOverrides: Sendable, Hashable {
    /// Requests a second of the `sends` family.
    public var sendsPerSecond: Double?
    /// The `sends` family's burst.
    public var sendsBurst: Int?
    /// Requests a second of the `registrations` family.
    public var registrationsPerSecond: Double?
    /// The `registrations` family's burst.
    public var registrationsBurst: Int?

    /// Creates overrides.
    public init(
        sendsPerSecond: Double? = nil, sendsBurst: Int? = nil, registrationsPerSecond: Double? = nil,
        registrationsBurst: Int? = nil
    ) {
        self.sendsPerSecond = sendsPerSecond
        self.sendsBurst = sendsBurst
        self.registrationsPerSecond = registrationsPerSecond
        self.registrationsBurst = registrationsBurst
    }

    /// No figure: no limit (as server defaults), or every figure the server's (as an
    /// app's own).
    public static let none = RateLimitOverrides()

    /// Whether every figure is the server's.
    public var isEmpty: Bool { self == RateLimitOverrides() }

    /// The limit of `family` for this app: its own rate or else the server's (none
    /// when neither is set), with its own burst, else the server's, else one
    /// second's worth.
    public func limit(_ family: RateFamily, defaults: RateLimitDefaults) -> RateLimit? {
        let rate: Double?
        let burst: Int?
        switch family {
        case .sends:
            rate = sendsPerSecond ?? defaults.sendsPerSecond
            burst = sendsBurst ?? defaults.sendsBurst
        case .registrations:
            rate = registrationsPerSecond ?? defaults.registrationsPerSecond
            burst = registrationsBurst ?? defaults.registrationsBurst
        }
        guard let rate, rate > 0 else { return nil }
        return RateLimit(perSecond: rate, burst: burst ?? RateLimit.defaultBurst(perSecond: rate))
    }

    /// The overrides as stored: a JSON object of the figures set.
    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        if let sendsPerSecond { members["sends_per_second"] = .double(sendsPerSecond) }
        if let sendsBurst { members["sends_burst"] = .integer(Int64(sendsBurst)) }
        if let registrationsPerSecond { members["registrations_per_second"] = .double(registrationsPerSecond) }
        if let registrationsBurst { members["registrations_burst"] = .integer(Int64(registrationsBurst)) }
        return .object(members)
    }

    /// The overrides stored as `json`.
    public init(json: JSONValue?) {
        func count(_ key: String) -> Int? { json?[key]?.int64Value.flatMap { Int(exactly: $0) } }
        self.init(
            sendsPerSecond: json?["sends_per_second"]?.doubleValue, sendsBurst: count("sends_burst"),
            registrationsPerSecond: json?["registrations_per_second"]?.doubleValue,
            registrationsBurst: count("registrations_burst"))
    }
}
