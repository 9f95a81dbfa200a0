public import Foundation
public import IsletCore

/// A Live Activity on a simulated device, as ActivityKit would hold it.
///
/// Its life follows ActivityKit's rules: it is active (or stale, once its stale date
/// passes) until an end push arrives or it has run for eight hours, when the system
/// ends it; an ended activity stays on the Lock Screen until its dismissal date (four
/// hours after the end unless the end said otherwise) and is then dismissed, and its
/// update token dies with it.
public struct SimulatedActivity: Sendable, Hashable, Codable {
    /// Where the activity is in its life.
    public enum Status: String, Sendable, Hashable, CaseIterable, Codable {
        /// Showing, and taking updates.
        case active
        /// Showing, past its stale date; still taking updates.
        case stale
        /// Still showing its final content, until its dismissal date; takes no
        /// further pushes.
        case ended
        /// Gone from the device; its update token is answered 410 Unregistered.
        case dismissed
    }

    /// How the activity began.
    public enum Origin: String, Sendable, Hashable, CaseIterable, Codable {
        /// A push-to-start push.
        case pushToStart = "push_to_start"
        /// The app started it on the device and registered its update token.
        case local
    }

    /// What ended the activity.
    public enum EndCause: String, Sendable, Hashable, CaseIterable, Codable {
        /// An `end` push.
        case push
        /// The system, eight hours after the start.
        case system
    }

    /// How long an activity may run before the system ends it: eight hours.
    public static let activeWindow = LifecycleWindows.activityKit.update
    /// How long an ended activity stays on the Lock Screen when its end names no
    /// dismissal date: four hours.
    public static let defaultDismissalDelay = LifecycleWindows.activityKit.end

    /// The activity's id (a lowercase UUID).
    public var id: String
    /// How it began.
    public var origin: Origin
    /// The environment of its tokens.
    public var environment: APNsEnvironment
    /// `aps.attributes-type` of the start; `nil` for an activity started locally.
    public var attributesType: String?
    /// `aps.attributes` of the start.
    public var attributes: JSONValue?
    /// The content state now showing.
    public var contentState: JSONValue?
    /// Where the activity is in its life, as of the last time the simulator looked.
    public var status: Status
    /// When it started.
    public var startedAt: Date
    /// When the last update was applied.
    public var updatedAt: Date?
    /// When it ended.
    public var endedAt: Date?
    /// What ended it.
    public var endedBy: EndCause?
    /// After this date the content is stale.
    public var staleDate: Date?
    /// When an ended activity leaves the Lock Screen.
    public var dismissalDate: Date?
    /// The relevance score of the content now showing.
    public var relevanceScore: Double?
    /// `aps.timestamp` of the last applied push, Unix seconds; a later push must be
    /// newer.
    public var lastTimestamp: Int64?
    /// How many update pushes were applied.
    public var updateCount: Int
    /// The push-to-start token that started it.
    public var pushToStartToken: String?
    /// Its update token, when it has one.
    public var updateToken: String?
    /// The broadcast channel it listens on, when it started with one (iOS 18).
    public var channelID: String?
    /// For an activity subscribed through the inspection API, the token naming its
    /// device.
    public var subscriber: String?
    /// The alert of the last push that carried one.
    public var lastAlert: JSONValue?

    init(id: String, origin: Origin, environment: APNsEnvironment, startedAt: Date) {
        self.id = id
        self.origin = origin
        self.environment = environment
        self.status = .active
        self.startedAt = startedAt
        self.updateCount = 0
    }

    /// Whether the activity still takes updates.
    var isRunning: Bool { status == .active || status == .stale }

    /// Brings ``status`` up to `now`: the system end after eight hours, dismissal,
    /// staleness.
    mutating func settle(at now: Date) {
        if isRunning, now >= startedAt.addingTimeInterval(Self.activeWindow) {
            let end = startedAt.addingTimeInterval(Self.activeWindow)
            status = .ended
            endedAt = end
            endedBy = .system
            dismissalDate = end.addingTimeInterval(Self.defaultDismissalDelay)
        }
        if status == .ended, let dismissalDate, now >= dismissalDate {
            status = .dismissed
        }
        if isRunning {
            status = staleDate.map { now >= $0 } == true ? .stale : .active
        }
    }

    enum CodingKeys: String, CodingKey {
        case id, origin, environment, attributes, status
        case attributesType = "attributes_type"
        case contentState = "content_state"
        case startedAt = "started_at"
        case updatedAt = "updated_at"
        case endedAt = "ended_at"
        case endedBy = "ended_by"
        case staleDate = "stale_date"
        case dismissalDate = "dismissal_date"
        case relevanceScore = "relevance_score"
        case lastTimestamp = "last_timestamp"
        case updateCount = "update_count"
        case pushToStartToken = "push_to_start_token"
        case updateToken = "update_token"
        case channelID = "channel_id"
        case subscriber
        case lastAlert = "last_alert"
    }

    /// Reads an activity from its JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        origin = try c.decode(Origin.self, forKey: .origin)
        environment = try c.decode(APNsEnvironment.self, forKey: .environment)
        attributesType = try c.decodeIfPresent(String.self, forKey: .attributesType)
        attributes = try c.decodeIfPresent(JSONValue.self, forKey: .attributes)
        contentState = try c.decodeIfPresent(JSONValue.self, forKey: .contentState)
        status = try c.decode(Status.self, forKey: .status)
        startedAt = try c.decodeDate(forKey: .startedAt)
        updatedAt = try c.decodeDateIfPresent(forKey: .updatedAt)
        endedAt = try c.decodeDateIfPresent(forKey: .endedAt)
        endedBy = try c.decodeIfPresent(EndCause.self, forKey: .endedBy)
        staleDate = try c.decodeDateIfPresent(forKey: .staleDate)
        dismissalDate = try c.decodeDateIfPresent(forKey: .dismissalDate)
        relevanceScore = try c.decodeIfPresent(Double.self, forKey: .relevanceScore)
        lastTimestamp = try c.decodeIfPresent(Int64.self, forKey: .lastTimestamp)
        updateCount = try c.decode(Int.self, forKey: .updateCount)
        pushToStartToken = try c.decodeIfPresent(String.self, forKey: .pushToStartToken)
        updateToken = try c.decodeIfPresent(String.self, forKey: .updateToken)
        channelID = try c.decodeIfPresent(String.self, forKey: .channelID)
        subscriber = try c.decodeIfPresent(String.self, forKey: .subscriber)
        lastAlert = try c.decodeIfPresent(JSONValue.self, forKey: .lastAlert)
    }

    /// Writes the activity as JSON; absent values are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(origin, forKey: .origin)
        try c.encode(environment, forKey: .environment)
        try c.encodeIfPresent(attributesType, forKey: .attributesType)
        try c.encodeIfPresent(attributes, forKey: .attributes)
        try c.encodeIfPresent(contentState, forKey: .contentState)
        try c.encode(status, forKey: .status)
        try c.encodeDate(startedAt, forKey: .startedAt)
        try c.encodeDateIfPresent(updatedAt, forKey: .updatedAt)
        try c.encodeDateIfPresent(endedAt, forKey: .endedAt)
        try c.encodeIfPresent(endedBy, forKey: .endedBy)
        try c.encodeDateIfPresent(staleDate, forKey: .staleDate)
        try c.encodeDateIfPresent(dismissalDate, forKey: .dismissalDate)
        try c.encodeIfPresent(relevanceScore, forKey: .relevanceScore)
        try c.encodeIfPresent(lastTimestamp, forKey: .lastTimestamp)
        try c.encode(updateCount, forKey: .updateCount)
        try c.encodeIfPresent(pushToStartToken, forKey: .pushToStartToken)
        try c.encodeIfPresent(updateToken, forKey: .updateToken)
        try c.encodeIfPresent(channelID, forKey: .channelID)
        try c.encodeIfPresent(subscriber, forKey: .subscriber)
        try c.encodeIfPresent(lastAlert, forKey: .lastAlert)
    }
}
