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

    /// The rates a limit takes: from one request an hour to a million a second.
    /// Within them a bucket's times (a full bucket's window is at most
    /// `burstRange.upperBound` hours) and counts are small whole numbers.
    public static let perSecondRange: ClosedRange<Double> = (1.0 / 3_600)...1_000_000
    /// The bursts a limit takes.
    public static let burstRange: ClosedRange<Int> = 1...10_000_000

    /// The burst taken when none is set: one second's worth, at least one (and at
    /// most `burstRange`'s largest, whatever the rate).
    public static func defaultBurst(perSecond: Double) -> Int {
        burstRange.clamp(Int(saturating: perSecond.rounded(.up)))
    }

    /// The limit with each figure brought within its range: a figure stored out of
    /// range (by an older version, or by hand) takes the nearest one the range
    /// holds. NaN, which no JSON holds, takes the slowest rate.
    public var bounded: RateLimit {
        RateLimit(
            perSecond: perSecond.isNaN ? Self.perSecondRange.lowerBound : Self.perSecondRange.clamp(perSecond),
            burst: Self.burstRange.clamp(burst))
    }
}

extension ClosedRange {
    /// `value`, or the bound nearest to it when it lies outside.
    public func clamp(_ value: Bound) -> Bound {
        Swift.min(Swift.max(value, lowerBound), upperBound)
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
    /// when neither is set, or when it is not above 0), with its own burst, else
    /// the server's, else one second's worth; each figure within its range
    /// (``RateLimit/bounded``), whatever was stored.
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
        return RateLimit(perSecond: rate, burst: burst ?? RateLimit.defaultBurst(perSecond: rate)).bounded
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
