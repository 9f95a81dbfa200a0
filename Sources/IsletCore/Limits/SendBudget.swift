public import Foundation

/// What Islet does with a priority-10 update once the copy's budget is spent.
public enum BudgetPolicy: String, Sendable, Hashable, CaseIterable {
    /// Send it at priority 5 instead, so that it still arrives (when the device's
    /// power allows) and spends none of the device's budget.
    case downgrade
    /// Send it at priority 10 anyway: the device decides, and may hold it back.
    case keep
}

/// The limits Islet keeps to on behalf of the devices: how many priority-10 updates
/// a copy of an activity gets in any hour (more on a device that allowed frequent
/// updates), and how many push-to-starts a device gets in any hour.
///
/// Apple documents no figure for either budget. The defaults are conservative
/// guesses (12 and 60 priority-10 updates an hour, 10 starts), settings a server
/// changes and an app overrides.
public struct SendBudget: Sendable, Hashable {
    /// Priority-10 updates a copy gets in any hour, when its device did not allow
    /// frequent updates (or never said).
    public var priority10PerHour: Int
    /// Priority-10 updates a copy gets in any hour on a device that allowed
    /// frequent updates.
    public var frequentPriority10PerHour: Int
    /// What happens to an update past the budget.
    public var policy: BudgetPolicy
    /// Push-to-starts a device gets in any hour; later ones wait.
    public var startsPerDevicePerHour: Int

    /// The window both budgets count over.
    public static let window: TimeInterval = 3600
    /// The largest figure a budget takes.
    public static let maximum = 100_000
    /// The figures a budget takes: from one an hour to `maximum`.
    public static let range = 1...maximum

    /// The defaults: 12 priority-10 updates an hour (60 with frequent updates),
    /// downgraded past that; 10 starts a device an hour.
    public static let standard = SendBudget(
        priority10PerHour: 12, frequentPriority10PerHour: 60, policy: .downgrade, startsPerDevicePerHour: 10)

    /// Creates a budget.
    public init(priority10PerHour: Int, frequentPriority10PerHour: Int, policy: BudgetPolicy, startsPerDevicePerHour: Int) {
        self.priority10PerHour = priority10PerHour
        self.frequentPriority10PerHour = frequentPriority10PerHour
        self.policy = policy
        self.startsPerDevicePerHour = startsPerDevicePerHour
    }

    /// The priority-10 updates an hour of a copy on a device that allowed frequent
    /// updates (`true`), did not (`false`) or never said (`nil`, taken as not).
    public func priority10Limit(frequentUpdates: Bool?) -> Int {
        frequentUpdates == true ? frequentPriority10PerHour : priority10PerHour
    }

    /// The smaller of the two priority-10 figures: below it, no copy can be over.
    public var smallestPriority10Limit: Int { min(priority10PerHour, frequentPriority10PerHour) }

    /// Whether an update goes at priority 5 instead of 10: a priority-10 update
    /// without an alert, to a copy that has had `used` priority-10 updates in the
    /// last hour, under the `downgrade` policy.
    public func downgrades(used: Int, frequentUpdates: Bool?) -> Bool {
        policy == .downgrade && used >= priority10Limit(frequentUpdates: frequentUpdates)
    }

    /// What is left of a copy's priority-10 budget after `used` updates.
    public func priority10Remaining(used: Int, frequentUpdates: Bool?) -> Int {
        max(0, priority10Limit(frequentUpdates: frequentUpdates) - used)
    }

    /// When a device that was sent starts at `recent` (any order; those of the
    /// last hour matter) may be sent its next one: `now` while fewer than
    /// `startsPerDevicePerHour` fall in the hour before `now`, else an hour after the
    /// oldest of the newest `startsPerDevicePerHour`.
    public func nextStart(after recent: [Date], now: Date) -> Date {
        let limit = startsPerDevicePerHour
        let sorted = recent.sorted()
        guard sorted.count >= limit, limit > 0 else { return now }
        let blocking = sorted[sorted.count - limit]
        return max(now, blocking.addingTimeInterval(Self.window))
    }
}

/// An app's own figures for its budget; each `nil` takes the server's.
public struct BudgetOverrides: Sendable, Hashable {
    /// See ``SendBudget/priority10PerHour``.
    public var priority10PerHour: Int?
    /// See ``SendBudget/frequentPriority10PerHour``.
    public var frequentPriority10PerHour: Int?
    /// See ``SendBudget/policy``.
    public var policy: BudgetPolicy?
    /// See ``SendBudget/startsPerDevicePerHour``.
    public var startsPerDevicePerHour: Int?

    /// Creates overrides.
    public init(
        priority10PerHour: Int? = nil, frequentPriority10PerHour: Int? = nil, policy: BudgetPolicy? = nil,
        startsPerDevicePerHour: Int? = nil
    ) {
        self.priority10PerHour = priority10PerHour
        self.frequentPriority10PerHour = frequentPriority10PerHour
        self.policy = policy
        self.startsPerDevicePerHour = startsPerDevicePerHour
    }

    /// Whether every figure is the server's.
    public var isEmpty: Bool { self == BudgetOverrides() }

    /// `defaults` with these figures in place of its own, each within
    /// ``SendBudget/range`` (a figure stored out of it takes the nearest it holds).
    public func applied(to defaults: SendBudget) -> SendBudget {
        let range = SendBudget.range
        return SendBudget(
            priority10PerHour: range.clamp(priority10PerHour ?? defaults.priority10PerHour),
            frequentPriority10PerHour: range.clamp(frequentPriority10PerHour ?? defaults.frequentPriority10PerHour),
            policy: policy ?? defaults.policy,
            startsPerDevicePerHour: range.clamp(startsPerDevicePerHour ?? defaults.startsPerDevicePerHour))
    }

    /// The overrides as stored: a JSON object of the figures set.
    public var json: JSONValue {
        var members: [String: JSONValue] = [:]
        if let priority10PerHour { members["priority_10_per_hour"] = .integer(Int64(priority10PerHour)) }
        if let frequentPriority10PerHour {
            members["frequent_priority_10_per_hour"] = .integer(Int64(frequentPriority10PerHour))
        }
        if let policy { members["policy"] = .string(policy.rawValue) }
        if let startsPerDevicePerHour { members["starts_per_device_per_hour"] = .integer(Int64(startsPerDevicePerHour)) }
        return .object(members)
    }

    /// The overrides stored as `json` (what is not understood is left to the
    /// server's figure).
    public init(json: JSONValue?) {
        func count(_ key: String) -> Int? { json?[key]?.int64Value.flatMap { Int(exactly: $0) } }
        self.init(
            priority10PerHour: count("priority_10_per_hour"),
            frequentPriority10PerHour: count("frequent_priority_10_per_hour"),
            policy: json?["policy"]?.stringValue.flatMap(BudgetPolicy.init(rawValue:)),
            startsPerDevicePerHour: count("starts_per_device_per_hour"))
    }
}
