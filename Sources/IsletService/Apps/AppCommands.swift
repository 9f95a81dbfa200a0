public import IsletCore
public import Storage

/// A new app: its name, bundle id, optional APNs credentials and settings.
public struct CreateApp: Sendable {
    /// A display name.
    public var name: String
    /// The iOS bundle id.
    public var bundleID: String
    /// The APNs signing key, if given.
    public var credentials: APNsCredentials?
    /// Whether a start for an unregistered activity type is refused.
    public var strictActivityTypes: Bool
    /// The FCM service account's JSON, if given (checked by `FCMAccountRules`).
    public var fcmServiceAccount: JSONValue?
    /// Who may follow an activity a device created itself.
    public var localJoin: LocalJoinRule = .anyone
    /// Days the app's history is kept, when shorter than the server's; `nil`: the
    /// server's.
    public var historyRetentionDays: Double?

    /// Creates the command.
    public init(name: String, bundleID: String, credentials: APNsCredentials?, strictActivityTypes: Bool) {
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.strictActivityTypes = strictActivityTypes
    }
}

/// A change to an app: `nil` leaves a value alone; `credentials: .some(nil)` removes
/// the APNs credentials.
public struct UpdateApp: Sendable {
    /// The app.
    public var appID: String
    /// A new name.
    public var name: String?
    /// A new bundle id.
    public var bundleID: String?
    /// New credentials (all three fields), or `.some(nil)` to remove them.
    public var credentials: APNsCredentials??
    /// The new strictness.
    public var strictActivityTypes: Bool?
    /// The new `device_secrets` setting.
    public var deviceSecrets: DeviceSecretPolicy?
    /// The new `local_join` setting.
    public var localJoin: LocalJoinRule?
    /// Changes to the app's budget figures.
    public var budget: BudgetChange?
    /// Changes to the app's rate limits.
    public var rateLimits: RateLimitChange?
    /// A new FCM service account's JSON, or `.some(nil)` to remove it.
    public var fcmServiceAccount: JSONValue??
    /// The app's own history retention in days, or `.some(nil)` to take the
    /// server's again.
    public var historyRetentionDays: Double??

    /// Creates the command.
    public init(
        appID: String, name: String?, bundleID: String?, credentials: APNsCredentials??, strictActivityTypes: Bool?,
        deviceSecrets: DeviceSecretPolicy? = nil
    ) {
        self.appID = appID
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.strictActivityTypes = strictActivityTypes
        self.deviceSecrets = deviceSecrets
    }
}

/// An app just created, with its two keys (shown once: only their hashes are kept).
public struct CreatedApp: Sendable {
    /// The app as stored.
    public let app: AppRecord
    /// The server key.
    public let serverKey: String
    /// The device key.
    public let deviceKey: String
}

/// An app's new keys.
public struct RotatedKeys: Sendable {
    /// The app.
    public let appID: String
    /// The new server key.
    public let serverKey: String
    /// The new device key.
    public let deviceKey: String
}

/// Changes to an app's budget figures: for each, `nil` keeps it, `.some(nil)` takes
/// the server's again, a value sets the app's own.
public struct BudgetChange: Sendable, Hashable {
    /// `priority_10_per_hour`.
    public var priority10PerHour: Int??
    /// `frequent_priority_10_per_hour`.
    public var frequentPriority10PerHour: Int??
    /// `policy`.
    public var policy: BudgetPolicy??
    /// `starts_per_device_per_hour`.
    public var startsPerDevicePerHour: Int??

    /// Creates a change.
    public init(
        priority10PerHour: Int?? = nil, frequentPriority10PerHour: Int?? = nil, policy: BudgetPolicy?? = nil,
        startsPerDevicePerHour: Int?? = nil
    ) {
        self.priority10PerHour = priority10PerHour
        self.frequentPriority10PerHour = frequentPriority10PerHour
        self.policy = policy
        self.startsPerDevicePerHour = startsPerDevicePerHour
    }

    /// Every figure back to the server's.
    public static let restoreDefaults = BudgetChange(
        priority10PerHour: .some(nil), frequentPriority10PerHour: .some(nil), policy: .some(nil),
        startsPerDevicePerHour: .some(nil))

    /// The figures outside ``SendBudget/range``, as the fields at fault
    /// (`budget.priority_10_per_hour`).
    var faults: [ServiceError.FieldError] {
        let range = SendBudget.range
        let figures: [(String, Int??)] = [
            ("priority_10_per_hour", priority10PerHour), ("frequent_priority_10_per_hour", frequentPriority10PerHour),
            ("starts_per_device_per_hour", startsPerDevicePerHour),
        ]
        return figures.compactMap { name, figure in
            guard case .some(.some(let value)) = figure, !range.contains(value) else { return nil }
            return ServiceError.FieldError(
                field: "budget.\(name)", message: "must be a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
    }

    /// `overrides` with this change made.
    func applied(to overrides: BudgetOverrides) -> BudgetOverrides {
        var changed = overrides
        if let value = priority10PerHour { changed.priority10PerHour = value }
        if let value = frequentPriority10PerHour { changed.frequentPriority10PerHour = value }
        if let value = policy { changed.policy = value }
        if let value = startsPerDevicePerHour { changed.startsPerDevicePerHour = value }
        return changed
    }
}

/// Changes to an app's rate limits: for each, `nil` keeps it, `.some(nil)` takes the
/// server's again, a value sets the app's own.
public struct RateLimitChange: Sendable, Hashable {
    /// `sends_per_second`.
    public var sendsPerSecond: Double??
    /// `sends_burst`.
    public var sendsBurst: Int??
    /// `registrations_per_second`.
    public var registrationsPerSecond: Double??
    /// `registrations_burst`.
    public var registrationsBurst: Int??

    /// Creates a change.
    public init(
        sendsPerSecond: Double?? = nil, sendsBurst: Int?? = nil, registrationsPerSecond: Double?? = nil,
        registrationsBurst: Int?? = nil
    ) {
        self.sendsPerSecond = sendsPerSecond
        self.sendsBurst = sendsBurst
        self.registrationsPerSecond = registrationsPerSecond
        self.registrationsBurst = registrationsBurst
    }

    /// Every figure back to the server's.
    public static let restoreDefaults = RateLimitChange(
        sendsPerSecond: .some(nil), sendsBurst: .some(nil), registrationsPerSecond: .some(nil),
        registrationsBurst: .some(nil))

    /// The figures outside ``RateLimit/perSecondRange`` and
    /// ``RateLimit/burstRange``, as the fields at fault
    /// (`rate_limits.sends_per_second`).
    var faults: [ServiceError.FieldError] {
        let rates = RateLimit.perSecondRange
        let bursts = RateLimit.burstRange
        var faults: [ServiceError.FieldError] = []
        for (name, figure) in [("sends_per_second", sendsPerSecond), ("registrations_per_second", registrationsPerSecond)] {
            guard case .some(.some(let value)) = figure, !(value.isFinite && rates.contains(value)) else { continue }
            faults.append(.init(
                field: "rate_limits.\(name)",
                message: "must be a number from \(rates.lowerBound) to \(Int(rates.upperBound))"
                    + " (one request an hour to a million a second)"))
        }
        for (name, figure) in [("sends_burst", sendsBurst), ("registrations_burst", registrationsBurst)] {
            guard case .some(.some(let value)) = figure, !bursts.contains(value) else { continue }
            faults.append(.init(
                field: "rate_limits.\(name)",
                message: "must be a whole number from \(bursts.lowerBound) to \(bursts.upperBound)"))
        }
        return faults
    }

    /// `overrides` with this change made.
    func applied(to overrides: RateLimitOverrides) -> RateLimitOverrides {
        var changed = overrides
        if let value = sendsPerSecond { changed.sendsPerSecond = value }
        if let value = sendsBurst { changed.sendsBurst = value }
        if let value = registrationsPerSecond { changed.registrationsPerSecond = value }
        if let value = registrationsBurst { changed.registrationsBurst = value }
        return changed
    }
}
