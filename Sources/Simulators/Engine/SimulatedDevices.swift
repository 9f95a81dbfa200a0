import Foundation
import IsletCore

/// The devices behind the simulated APNs: which tokens exist, of which kind, and
/// the Live Activities they hold. ActivityKit's rules live here: what a device does
/// with a push APNs accepted.
struct SimulatedDevices {
    private(set) var tokens: [String: RegisteredToken] = [:]
    private(set) var activities: [String: SimulatedActivity] = [:]
    /// The app's activity types, by `attributes-type`: content the device could not
    /// decode into them is dropped.
    var schemas: [String: ActivityTypeSchema] = [:]
    private(set) var activityOrder: [String] = []
    let environment: APNsEnvironment
    /// When each activity applied its priority-10 updates of the last hour, by
    /// activity id.
    private var priority10Applied: [String: [Date]] = [:]
    /// When each push-to-start token started activities in the last hour.
    private var startsTaken: [String: [Date]] = [:]
    /// The activities of devices that allowed frequent updates.
    private var frequentActivities: Set<String> = []
    /// The broadcast channels, which starts subscribe to and broadcasts go through.
    var channels = SimulatedChannels()

    /// The budgets iOS keeps to; `nil`: none.
    struct Budgets {
        var priority10PerHour: Int?
        var frequentPriority10PerHour: Int?
        var startsPerHour: Int?
    }

    /// The window both budgets count over.
    static let budgetWindow: TimeInterval = 3600

    init(environment: APNsEnvironment) { self.environment = environment }

    /// What the device did with one push.
    struct Delivery {
        var outcome: DeviceOutcome
        var note: String?
        var activityID: String?
        /// What the simulator knows the token to be after the push.
        var tokenKind: PushTokenKind?
    }

    /// A date at or above this many seconds since 1970 is taken for milliseconds
    /// (1e11 seconds is the year 5138).
    static let millisecondThreshold: Double = 1e11

    // MARK: - APNs-level token checks

    /// The refusal APNs answers for this token's state, if any: 400 BadDeviceToken
    /// for a token of the other environment, 400 DeviceTokenNotForTopic for a token
    /// of the wrong kind, 410 Unregistered for the update token of a dismissed
    /// activity. A token the simulator has never seen passes. `entry` is the token's
    /// entry in ``tokens``.
    mutating func refusal(for entry: RegisteredToken?, pushType: APNsPushType, now: Date) -> Refusal? {
        guard let entry else { return nil }
        if entry.environment != environment {
            return Refusal(
                .badDeviceToken,
                "the token belongs to the \(entry.environment.rawValue) environment; this is \(environment.rawValue)")
        }
        if !entry.kind.accepts(pushType) {
            let what = entry.kind == .device ? "a device token" : "a Live Activity token (\(entry.kind.rawValue))"
            return Refusal(.deviceTokenNotForTopic, "\(pushType.aPush) cannot go to \(what)")
        }
        if entry.kind == .liveActivityUpdate, let id = entry.activityID, let index = activities.index(forKey: id) {
            activities.values[index].settle(at: now)
            if activities.values[index].status == .dismissed, let gone = activities.values[index].dismissalDate {
                return Refusal(
                    .unregistered,
                    "the activity was dismissed; its update token died with it",
                    timestampMilliseconds: Int64((gone.timeIntervalSince1970 * 1000).rounded()))
            }
        }
        return nil
    }


    // MARK: - Registration

    /// Registers `token` explicitly. An update token stands for an activity the app
    /// started on the device: the simulator creates that activity.
    mutating func register(
        _ token: String, kind: PushTokenKind, environment: APNsEnvironment, frequentUpdates: Bool? = nil, now: Date,
        random: inout some RandomNumberGenerator
    ) throws(SimulatorError) -> RegisteredToken {
        if var existing = tokens[token] {
            guard existing.kind == kind else {
                throw SimulatorError(
                    .tokenKindConflict, "the token is already known as \(existing.kind.rawValue); kinds are never crossed")
            }
            existing.environment = environment
            if let frequentUpdates {
                existing.frequentUpdates = frequentUpdates
                if let id = existing.activityID { setFrequent(id, frequentUpdates) }
            }
            tokens[token] = existing
            return existing
        }
        var entry = RegisteredToken(
            token: token, kind: kind, environment: environment, origin: .registered, registeredAt: now, activityID: nil)
        entry.frequentUpdates = frequentUpdates
        if kind == .liveActivityUpdate {
            var activity = SimulatedActivity(
                id: APNsMessageID.make(using: &random), origin: .local, environment: environment, startedAt: now)
            activity.updateToken = token
            insert(activity)
            entry.activityID = activity.id
            setFrequent(activity.id, frequentUpdates == true)
        }
        tokens[token] = entry
        return entry
    }

    private mutating func setFrequent(_ activityID: String, _ frequent: Bool) {
        if frequent { frequentActivities.insert(activityID) } else { frequentActivities.remove(activityID) }
    }

    /// The times of `log` within the hour before `now`.
    private static func recent(_ log: [Date]?, now: Date) -> [Date] {
        (log ?? []).filter { now.timeIntervalSince($0) < budgetWindow }
    }

    private mutating func insert(_ activity: SimulatedActivity) {
        activities[activity.id] = activity
        activityOrder.append(activity.id)
    }

    /// Every activity, in the order they started, brought up to `now`.
    mutating func allActivities(at now: Date) -> [SimulatedActivity] {
        activityOrder.map { id in
            activities[id]!.settle(at: now)
            return activities[id]!
        }
    }

    /// The activity `id`, brought up to `now`.
    mutating func activity(id: String, at now: Date) -> SimulatedActivity? {
        activities[id]?.settle(at: now)
        return activities[id]
    }

    // MARK: - Delivery

    /// What the device does with a push APNs accepted. `entry` is the token's entry
    /// in ``tokens`` before the push.
    mutating func deliver(
        to token: String, known entry: RegisteredToken?, pushType: APNsPushType, priority: APNsPriority? = nil,
        topic: String? = nil, aps: APSFields, budgets: Budgets = Budgets(), now: Date,
        random: inout some RandomNumberGenerator
    ) -> Delivery {
        if let throttled = throttle(
            token: token, known: entry, pushType: pushType, priority: priority, aps: aps, budgets: budgets, now: now)
        {
            return throttled
        }
        var delivery = receive(to: token, known: entry, pushType: pushType, topic: topic, aps: aps, now: now, random: &random)
        if pushType == .liveactivity, let id = delivery.activityID {
            if delivery.outcome == .started {
                startsTaken[token, default: []].append(now)
                if entry?.frequentUpdates == true { frequentActivities.insert(id) }
            } else if delivery.outcome == .updated, priority ?? .immediate == .immediate {
                priority10Applied[id, default: []].append(now)
            }
        }
        // A push adds tokens only when its own was unknown (it is then first seen)
        // or when it started an activity (which may mint an update token).
        delivery.tokenKind = entry == nil || delivery.outcome == .started ? tokens[token]?.kind : entry?.kind
        return delivery
    }

    /// The device holding a push back because a budget is spent, as iOS does: a
    /// start past the token's starts of the hour, or a priority-10 update past the
    /// activity's priority-10 updates of the hour. Neither changes anything.
    private mutating func throttle(
        token: String, known entry: RegisteredToken?, pushType: APNsPushType, priority: APNsPriority?, aps: APSFields,
        budgets: Budgets, now: Date
    ) -> Delivery? {
        guard pushType == .liveactivity, let event = aps.event?.stringValue else { return nil }
        if event == "start", entry?.kind ?? .pushToStart == .pushToStart, let budget = budgets.startsPerHour {
            let taken = Self.recent(startsTaken[token], now: now)
            startsTaken[token] = taken
            if taken.count >= budget {
                return Delivery(
                    outcome: .throttled,
                    note: "Push-to-start budget exceeded: \(taken.count) starts in the last hour (budget \(budget)); the device refused the start")
            }
        }
        if event == "update", priority ?? .immediate == .immediate, entry?.kind == .liveActivityUpdate,
            let id = entry?.activityID
        {
            let frequent = frequentActivities.contains(id)
            let budget = frequent ? budgets.frequentPriority10PerHour ?? budgets.priority10PerHour : budgets.priority10PerHour
            guard let budget else { return nil }
            let applied = Self.recent(priority10Applied[id], now: now)
            priority10Applied[id] = applied
            if applied.count >= budget {
                let which = frequent ? "frequent-updates budget" : "budget"
                return Delivery(
                    outcome: .throttled,
                    note: "priority-10 \(which) spent: \(applied.count) priority-10 updates in the last hour (budget \(budget)); the device held this one back",
                    activityID: id)
            }
        }
        return nil
    }

    private mutating func receive(
        to token: String, known entry: RegisteredToken?, pushType: APNsPushType, topic: String?, aps: APSFields,
        now: Date, random: inout some RandomNumberGenerator
    ) -> Delivery {
        guard pushType == .liveactivity else {
            if entry == nil {
                tokens[token] = RegisteredToken(
                    token: token, kind: .device, environment: environment, origin: .firstSeen, registeredAt: now,
                    activityID: nil)
            }
            if pushType == .alert, aps.hasAlert {
                return Delivery(outcome: .alertShown)
            }
            return Delivery(outcome: .delivered)
        }
        guard let event = aps.event?.stringValue else {
            return Delivery(outcome: .dropped, note: "a liveactivity push without aps.event: the device does nothing")
        }
        guard event == "start" || event == "update" || event == "end" else {
            return Delivery(outcome: .dropped, note: "aps.event \"\(event)\" is not start, update or end")
        }
        switch entry?.kind {
        case nil:
            guard event == "start" else {
                return Delivery(
                    outcome: .dropped,
                    note: "\(event) for a token no activity holds: update tokens come from a start with input-push-token or from POST /tokens")
            }
            tokens[token] = RegisteredToken(
                token: token, kind: .pushToStart, environment: environment, origin: .firstSeen, registeredAt: now,
                activityID: nil)
            return start(with: token, topic: topic, aps: aps, now: now, random: &random)
        case .pushToStart:
            guard event == "start" else {
                return Delivery(
                    outcome: .dropped,
                    note: "\(event) sent to a push-to-start token: only the activity's own update token reaches it")
            }
            return start(with: token, topic: topic, aps: aps, now: now, random: &random)
        case .liveActivityUpdate:
            guard event != "start" else {
                return Delivery(
                    outcome: .dropped, note: "start sent to an activity's update token: starts go to a push-to-start token")
            }
            guard let id = entry?.activityID, let index = activities.index(forKey: id) else {
                return Delivery(outcome: .dropped, note: "no activity holds this update token")
            }
            activities.values[index].settle(at: now)
            let schema = activities.values[index].attributesType.flatMap { schemas[$0] }
            return Self.apply(event: event, to: &activities.values[index], aps: aps, schema: schema, now: now)
        case .device:
            // Refused earlier with DeviceTokenNotForTopic; kept for completeness.
            return Delivery(outcome: .dropped, note: "a Live Activity push cannot reach a device token")
        case .channel, .fcm:
            // Never registered as a token (the inspection API refuses them).
            return Delivery(outcome: .dropped, note: "a channel id or an FCM token is not an iOS device's token")
        }
    }

    /// A start: creates an activity when the payload has everything ActivityKit
    /// needs; otherwise the device drops it, though APNs answered 200.
    private mutating func start(
        with token: String, topic: String?, aps: APSFields, now: Date, random: inout some RandomNumberGenerator
    ) -> Delivery {
        if let drop = Self.dateProblem(in: aps) { return drop }
        guard let type = aps.attributesType?.stringValue, !type.isEmpty else {
            return Delivery(outcome: .dropped, note: "start without attributes-type: the device cannot tell which activity to start")
        }
        guard let attributes = aps.attributes?.objectValue else {
            return Delivery(outcome: .dropped, note: "start without attributes: the device cannot build the activity")
        }
        guard !attributes.isEmpty else {
            return Delivery(outcome: .dropped, note: "start with empty attributes: the device cannot build the activity")
        }
        guard let state = aps.contentState, state.objectValue != nil else {
            return Delivery(outcome: .dropped, note: "start without content-state: the device has nothing to show")
        }
        guard let alert = aps.alert, Self.isShowable(alert) else {
            let what = aps.alert == nil ? "without alert" : "with an empty alert"
            return Delivery(outcome: .dropped, note: "start \(what): the device never shows it")
        }
        if aps.dismissalDate != nil {
            return Delivery(outcome: .dropped, note: "dismissal-date on a start: only an end may carry one")
        }
        if let schema = schemas[type], let problem = Self.decodeProblem(schema, attributes: .object(attributes), state: state) {
            return Delivery(outcome: .dropped, note: "the device could not decode the start into \(type): \(problem)")
        }
        var activity = SimulatedActivity(
            id: APNsMessageID.make(using: &random), origin: .pushToStart, environment: environment, startedAt: now)
        activity.attributesType = type
        activity.attributes = .object(attributes)
        activity.contentState = state
        activity.lastTimestamp = Self.seconds(aps.timestamp)
        activity.staleDate = Self.date(aps.staleDate)
        activity.relevanceScore = aps.relevanceScore?.doubleValue
        activity.pushToStartToken = token
        activity.lastAlert = alert
        var note: String?
        var channel: SimulatedChannel?
        if let named = aps.inputPushChannel {
            // iOS 18: the activity listens on the channel instead of minting a token.
            let suffix = APNsPushType.liveactivity.topicSuffix ?? ""
            let bundleID = topic.map { $0.hasSuffix(suffix) ? String($0.dropLast(suffix.count)) : $0 }
            guard let id = named.stringValue, let found = channels.byID[id], bundleID.map({ $0 == found.bundleID }) ?? true
            else {
                return Delivery(
                    outcome: .dropped,
                    note: "input-push-channel \(named.jsonText) is not a channel of this app: the Live Activity fails to start")
            }
            channel = found
            activity.channelID = id
            if aps.inputPushToken != nil { note = "input-push-channel given: input-push-token is ignored" }
        } else if aps.inputPushToken?.int64Value == 1 {
            let updateToken = PushToken.make(byteCount: 32, using: &random)
            activity.updateToken = updateToken
            tokens[updateToken] = RegisteredToken(
                token: updateToken, kind: .liveActivityUpdate, environment: environment, origin: .minted,
                registeredAt: now, activityID: activity.id)
        } else {
            note = "started without input-push-token: 1, so the activity has no update token and cannot be updated remotely"
        }
        activity.settle(at: now)
        if let channel, let message = channels.storedMessage(channel.id, now: now) {
            // A late subscriber is given the channel's most recent message first.
            let schema = activity.attributesType.flatMap { schemas[$0] }
            let applied = Self.apply(event: message.event, to: &activity, aps: message.aps, schema: schema, now: now)
            note = [note, "then the channel's stored message: \(applied.outcome.rawValue)"].compactMap { $0 }.joined(separator: "; ")
        }
        insert(activity)
        return Delivery(outcome: .started, note: note, activityID: activity.id)
    }

    /// An activity the app started on the device listening on channel `channelID`
    /// (`pushType: .channel(id)`), given the channel's stored message if one is
    /// kept; refused when there is no such channel.
    mutating func subscribe(
        channelID: String, token: String, now: Date, random: inout some RandomNumberGenerator
    ) throws(SimulatorError) -> SimulatedActivity {
        guard channels.byID[channelID] != nil else {
            throw SimulatorError(.unknownChannel, "there is no channel \(channelID): the Live Activity fails to start")
        }
        var activity = SimulatedActivity(
            id: APNsMessageID.make(using: &random), origin: .local, environment: environment, startedAt: now)
        activity.channelID = channelID
        activity.subscriber = token
        if let message = channels.storedMessage(channelID, now: now) {
            let schema = activity.attributesType.flatMap { schemas[$0] }
            _ = Self.apply(event: message.event, to: &activity, aps: message.aps, schema: schema, now: now)
        }
        activity.settle(at: now)
        insert(activity)
        return activity
    }

    /// What each running activity subscribed to `channel` did with a broadcast
    /// APNs accepted, in the order they started. A broadcast never starts one.
    mutating func broadcast(_ aps: APSFields, on channel: SimulatedChannel, now: Date) -> [(activityID: String, delivery: Delivery)] {
        let event = aps.event?.stringValue
        var deliveries: [(activityID: String, delivery: Delivery)] = []
        for id in activityOrder {
            guard let index = activities.index(forKey: id), activities.values[index].channelID == channel.id else { continue }
            activities.values[index].settle(at: now)
            guard activities.values[index].status != .dismissed else { continue }
            let delivery: Delivery
            switch event {
            case "update"?, "end"?:
                let schema = activities.values[index].attributesType.flatMap { schemas[$0] }
                delivery = Self.apply(event: event!, to: &activities.values[index], aps: aps, schema: schema, now: now)
            case "start"?:
                delivery = Delivery(outcome: .dropped, note: "a broadcast cannot start a Live Activity", activityID: id)
            default:
                delivery = Delivery(
                    outcome: .dropped, note: "aps.event must be update or end on a channel", activityID: id)
            }
            deliveries.append((id, delivery))
        }
        return deliveries
    }

    /// An update or an end for `activity`, settled at `now`.
    private static func apply(
        event: String, to activity: inout SimulatedActivity, aps: APSFields, schema: ActivityTypeSchema?, now: Date
    ) -> Delivery {
        let id = activity.id
        guard activity.isRunning else {
            let why = activity.endedBy == .system ? " (the system ended it eight hours after its start)" : ""
            return Delivery(outcome: .dropped, note: "\(event) for an ended activity\(why)", activityID: id)
        }
        if let drop = Self.dateProblem(in: aps) { return Delivery(outcome: .dropped, note: drop.note, activityID: id) }
        if event == "update", aps.dismissalDate != nil {
            return Delivery(outcome: .dropped, note: "dismissal-date on an update: only an end may carry one", activityID: id)
        }
        guard let timestamp = Self.seconds(aps.timestamp) else {
            return Delivery(outcome: .dropped, note: "\(event) without aps.timestamp: the device cannot order it", activityID: id)
        }
        if let last = activity.lastTimestamp, timestamp <= last {
            return Delivery(
                outcome: .dropped, note: "timestamp not newer than the last update (\(timestamp) ≤ \(last))", activityID: id)
        }
        let state = aps.contentState
        if event == "update", state?.objectValue == nil {
            return Delivery(
                outcome: .dropped, note: "update without content-state: the device has no state to show", activityID: id)
        }
        if let schema, let state, let problem = decodeProblem(schema, attributes: nil, state: state) {
            return Delivery(
                outcome: .dropped, note: "the device could not decode the \(event)'s content-state: \(problem)", activityID: id)
        }
        var note: String?
        if let state, state.objectValue != nil {
            activity.contentState = state
        } else {
            note = "end without content-state: the activity ends showing its last content"
        }
        activity.lastTimestamp = timestamp
        activity.staleDate = Self.date(aps.staleDate)
        activity.relevanceScore = aps.relevanceScore?.doubleValue
        if let alert = aps.alert, Self.isShowable(alert) { activity.lastAlert = alert }
        if event == "update" {
            activity.updatedAt = now
            activity.updateCount += 1
            activity.settle(at: now)
            return Delivery(outcome: .updated, note: note, activityID: id)
        }
        activity.status = .ended
        activity.endedAt = now
        activity.endedBy = .push
        activity.dismissalDate = Self.date(aps.dismissalDate) ?? now.addingTimeInterval(SimulatedActivity.defaultDismissalDelay)
        activity.settle(at: now)
        return Delivery(outcome: .ended, note: note, activityID: id)
    }

    /// A drop for an envelope date that is not a number or looks like milliseconds.
    private static func dateProblem(in aps: APSFields) -> Delivery? {
        dateProblem("timestamp", aps.timestamp) ?? dateProblem("stale-date", aps.staleDate)
            ?? dateProblem("dismissal-date", aps.dismissalDate)
    }

    private static func dateProblem(_ field: String, _ value: JSONValue?) -> Delivery? {
        guard let value else { return nil }
        guard let seconds = value.doubleValue else {
            return Delivery(outcome: .dropped, note: "aps.\(field) is not a number of Unix seconds")
        }
        if seconds < 0 {
            return Delivery(outcome: .dropped, note: "aps.\(field) \(value.jsonText) is before 1970")
        }
        if seconds >= millisecondThreshold {
            return Delivery(
                outcome: .dropped, note: "aps.\(field) \(value.jsonText) looks like milliseconds; ActivityKit reads Unix seconds")
        }
        return nil
    }

    /// Whole Unix seconds of an envelope date already checked by ``dateProblem(in:)``.
    private static func seconds(_ value: JSONValue?) -> Int64? {
        value?.doubleValue.map { Int64($0.rounded(.down)) }
    }

    private static func date(_ value: JSONValue?) -> Date? {
        value?.doubleValue.map { Date(timeIntervalSince1970: $0) }
    }

    /// Whether an alert has something to show: a non-empty string or dictionary.
    private static func isShowable(_ alert: JSONValue) -> Bool {
        switch alert {
        case .string(let text): !text.isEmpty
        case .object(let members): !members.isEmpty
        default: false
        }
    }

    /// Why the device could not decode `attributes` and `state` into `schema`'s
    /// types (the content state unwrapped first for expo-widgets), or `nil`.
    static func decodeProblem(_ schema: ActivityTypeSchema, attributes: JSONValue?, state: JSONValue) -> String? {
        var violations: [SchemaViolation] = []
        if let attributes {
            violations += SchemaCheck.check(attributes, fields: schema.attributes, path: "attributes", mode: .decode).violations
        }
        var content: JSONValue? = state
        if schema.format == .expoWidgets {
            let unwrapped = SchemaCheck.expoUnwrap(state, path: "content_state")
            content = unwrapped.state
            if let violation = unwrapped.violation { violations.append(violation) }
        }
        if let content {
            violations += SchemaCheck.check(content, fields: schema.contentState, path: "content_state", mode: .decode).violations
        }
        return violations.isEmpty ? nil : violations.map(\.description).joined(separator: "; ")
    }

    /// Forgets every token and activity.
    mutating func removeAll() {
        tokens.removeAll()
        activities.removeAll()
        activityOrder.removeAll()
        priority10Applied.removeAll()
        startsTaken.removeAll()
        frequentActivities.removeAll()
        channels.removeAll()
    }
}
