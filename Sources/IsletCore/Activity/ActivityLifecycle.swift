public import Foundation

/// Where an activity is in its life: started, updated at least once, or ended.
/// Ended is final.
public enum ActivityStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// Started (remotely or on the device), never updated.
    case started
    /// Updated at least once.
    case updated
    /// Ended by the backend or by the clock. Never updated again. (A device ending
    /// its own copy ends only that copy.)
    case ended
}

/// Where one device's copy of an activity is.
public enum CopyStatus: String, Sendable, Hashable, CaseIterable, Codable {
    /// A push-to-start went out; the device has not registered an update token yet.
    case pending
    /// The device holds the activity and Islet holds its update token.
    case active
    /// The device ended it, the backend ended it, or APNs refused its update token.
    case ended
}

/// Why an activity or a device's copy of it ended.
public enum EndCause: String, Sendable, Hashable, CaseIterable, Codable {
    /// The backend ended it through the API.
    case server
    /// The device reported that it ended it.
    case device
    /// The lifecycle window ran out.
    case expired
    /// The end time set with the start (or a later update) came.
    case scheduled
    /// APNs refused the update token.
    case tokenRejected = "token_rejected"
    /// Its timeline ran past the 8 hours: Islet ended it and started its successor.
    case renewed
    /// Devices had created it themselves, and the backend's start took its id.
    case replaced
}

/// How long an activity may be updated and ended. ActivityKit keeps an activity
/// active for 8 hours and on the Lock Screen for up to 4 more; pushes outside those
/// windows change nothing on the device.
public struct LifecycleWindows: Sendable, Hashable {
    /// From the start, how long updates are accepted.
    public var update: TimeInterval
    /// After the update window, how long an end is still accepted.
    public var end: TimeInterval

    /// ActivityKit's own: 8 hours active, then up to 4 more on the Lock Screen. The
    /// simulator's devices keep to them, and the server's windows default to them.
    public static let activityKit = LifecycleWindows(update: 8 * 3600, end: 4 * 3600)

    /// Creates windows; the defaults are ActivityKit's (`activityKit`).
    public init(update: TimeInterval = Self.activityKit.update, end: TimeInterval = Self.activityKit.end) {
        self.update = update
        self.end = end
    }

    /// From the start, how long anything is accepted.
    public var total: TimeInterval { update + end }
}

/// The lifecycle rules: what may happen to an activity, given its status, when it
/// started and the time now. Pure, so that every window is tested without waiting.
public struct ActivityLifecycle: Sendable, Hashable {
    /// What the backend wants to do.
    public enum Action: Sendable, Hashable {
        /// Send an update.
        case update
        /// End it.
        case end
        /// Register (or rotate) a device's update token for it.
        case registerToken
    }

    /// The answer to an action.
    public enum Verdict: Sendable, Hashable {
        /// Go ahead.
        case allowed
        /// The activity has ended; nothing may change it again.
        case ended
        /// The update window has passed (the end window has not).
        case pastUpdateWindow(since: Date)
        /// Every window has passed: the activity has ended by the clock.
        case expired(at: Date)
    }

    /// The windows applied.
    public let windows: LifecycleWindows

    /// Creates the rules for `windows`.
    public init(windows: LifecycleWindows = LifecycleWindows()) {
        self.windows = windows
    }

    /// When an activity that started at `startedAt` stops taking updates.
    public func updateDeadline(startedAt: Date) -> Date { startedAt.addingTimeInterval(windows.update) }

    /// When an activity that started at `startedAt` ends by the clock.
    public func expiry(startedAt: Date) -> Date { startedAt.addingTimeInterval(windows.total) }

    /// The status as of `now`: an activity past every window reads as ended.
    public func effectiveStatus(_ status: ActivityStatus, startedAt: Date, now: Date) -> ActivityStatus {
        status != .ended && now >= expiry(startedAt: startedAt) ? .ended : status
    }

    /// Whether `action` may happen now.
    public func check(_ action: Action, status: ActivityStatus, startedAt: Date, now: Date) -> Verdict {
        if status == .ended { return .ended }
        let expiry = expiry(startedAt: startedAt)
        if now >= expiry { return .expired(at: expiry) }
        switch action {
        case .end:
            return .allowed
        case .update, .registerToken:
            let deadline = updateDeadline(startedAt: startedAt)
            return now >= deadline ? .pastUpdateWindow(since: deadline) : .allowed
        }
    }
}
