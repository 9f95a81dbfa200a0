public import Foundation

/// What a Live Activity push should say: the input to ``build(bundleID:now:lastTimestamp:)``,
/// which checks it against the ActivityKit and APNs rules and writes the payload.
///
/// Every date here is a `Date`; the builder writes it as whole Unix seconds. The
/// content state and attributes are passed through as given: dates inside them are
/// the caller's to encode as the app's `Codable` types expect.
///
/// The default `apns-priority` is 10 for a start and an end, 10 for an update that
/// carries an alert, and 5 for an update without one, so that quiet updates do not
/// spend the device's budget of high-priority updates.
public struct LiveActivityPush: Sendable, Hashable {
    /// Start, update or end.
    public var event: LiveActivityEvent
    /// `aps.content-state`: the activity's full content state, a non-empty object.
    /// Required on a start and an update; optional on an end, where it becomes the
    /// final content (pass the last state to show it again).
    public var contentState: JSONValue?
    /// `aps.attributes-type`: the name of the app's `ActivityAttributes` type. Start
    /// only, and required there.
    public var attributesType: String?
    /// `aps.attributes`: the activity's fixed attributes, a non-empty object. Start
    /// only, and required there.
    public var attributes: JSONValue?
    /// `aps.alert`. Required on a start (without it the device never shows the
    /// activity); optional otherwise.
    public var alert: PushAlert?
    /// `aps.timestamp` in Unix seconds, when the caller must fix it; otherwise the
    /// builder picks one (see ``build(bundleID:now:lastTimestamp:)``).
    public var timestamp: Int64?
    /// `aps.stale-date`: when the system shows the content as out of date. Must not
    /// lie before `now`.
    public var staleDate: Date?
    /// `aps.dismissal-date`: when an ended activity leaves the Lock Screen. End only;
    /// a date already past dismisses it at once.
    public var dismissalDate: Date?
    /// `aps.relevance-score`: orders this activity among the app's others.
    public var relevanceScore: Double?
    /// `apns-priority`: 5 or 10; `nil` for the default described on the type.
    public var priority: Int?
    /// `apns-expiration`; `nil` leaves the header out.
    public var expiration: PushExpiration?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?
    /// `aps.input-push-channel`: the broadcast channel a start subscribes the new
    /// activity to (iOS 18), instead of asking for its own update token
    /// (`input-push-token`). Start only.
    public var inputPushChannel: String?

    /// Creates a push; every field but the event is optional here and checked by
    /// ``build(bundleID:now:lastTimestamp:)``.
    public init(
        event: LiveActivityEvent, contentState: JSONValue? = nil, attributesType: String? = nil,
        attributes: JSONValue? = nil, alert: PushAlert? = nil, timestamp: Int64? = nil, staleDate: Date? = nil,
        dismissalDate: Date? = nil, relevanceScore: Double? = nil, priority: Int? = nil,
        expiration: PushExpiration? = nil, collapseID: String? = nil
    ) {
        self.event = event
        self.contentState = contentState
        self.attributesType = attributesType
        self.attributes = attributes
        self.alert = alert
        self.timestamp = timestamp
        self.staleDate = staleDate
        self.dismissalDate = dismissalDate
        self.relevanceScore = relevanceScore
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
    }

    /// A push-to-start with everything a start needs.
    public static func start(
        attributesType: String, attributes: JSONValue, contentState: JSONValue, alert: PushAlert,
        staleDate: Date? = nil, relevanceScore: Double? = nil
    ) -> LiveActivityPush {
        LiveActivityPush(
            event: .start, contentState: contentState, attributesType: attributesType, attributes: attributes,
            alert: alert, staleDate: staleDate, relevanceScore: relevanceScore)
    }

    /// An update carrying the activity's full content state.
    public static func update(
        contentState: JSONValue, alert: PushAlert? = nil, staleDate: Date? = nil, relevanceScore: Double? = nil
    ) -> LiveActivityPush {
        LiveActivityPush(
            event: .update, contentState: contentState, alert: alert, staleDate: staleDate,
            relevanceScore: relevanceScore)
    }

    /// An end, with an optional final content state and dismissal date.
    public static func end(contentState: JSONValue? = nil, dismissalDate: Date? = nil) -> LiveActivityPush {
        LiveActivityPush(event: .end, contentState: contentState, dismissalDate: dismissalDate)
    }

    /// Checks the push against the wire rules and writes its payload and headers.
    ///
    /// `lastTimestamp` is the `aps.timestamp` of the last push this activity was sent
    /// (`nil` when there was none). Without an explicit ``timestamp`` the builder uses
    /// the larger of `now` in whole Unix seconds and `lastTimestamp + 1`, so that the
    /// device never drops the push as old; an explicit timestamp at or below
    /// `lastTimestamp` is refused. The timestamp used comes back in
    /// ``BuiltPush/timestamp``.
    ///
    /// `limit` is the size the way the push goes takes: by default a token's
    /// (``PayloadLimit/token(for:)``); ``PayloadLimit/broadcast`` for a broadcast on
    /// a channel. A payload over it is refused, naming its largest part.
    ///
    /// - Throws: ``PayloadError`` naming the first field that breaks a rule.
    public func build(
        bundleID: String, now: Date, lastTimestamp: Int64? = nil, limit: PayloadLimit? = nil
    ) throws(PayloadError) -> BuiltPush {
        let topic = try PayloadRules.topic(bundleID: bundleID, pushType: .liveactivity)
        var aps: [String: JSONValue] = ["event": .string(event.rawValue)]

        if let contentState {
            try PayloadRules.checkNonEmptyObject(contentState, field: "aps.content-state", what: "the content state")
            try PayloadRules.checkFinite(contentState, path: "aps.content-state")
            aps["content-state"] = contentState
        } else if event != .end {
            throw PayloadError(
                .missing, field: "aps.content-state", message: "\(event == .start ? "a start" : "an update") must carry the full content state")
        }

        if event == .start {
            guard let attributesType else {
                throw PayloadError(
                    .missing, field: "aps.attributes-type",
                    message: "a start must name the activity's attributes type")
            }
            guard !attributesType.isEmpty else {
                throw PayloadError(.empty, field: "aps.attributes-type", message: "the attributes type is empty")
            }
            guard let attributes else {
                throw PayloadError(.missing, field: "aps.attributes", message: "a start must carry the activity's attributes")
            }
            try PayloadRules.checkNonEmptyObject(attributes, field: "aps.attributes", what: "the attributes")
            try PayloadRules.checkFinite(attributes, path: "aps.attributes")
            aps["attributes-type"] = .string(attributesType)
            aps["attributes"] = attributes
            if let inputPushChannel {
                guard !inputPushChannel.isEmpty else {
                    throw PayloadError(.empty, field: "aps.input-push-channel", message: "the channel id is empty")
                }
                aps["input-push-channel"] = .string(inputPushChannel)
            } else {
                aps["input-push-token"] = 1
            }
        } else {
            if inputPushChannel != nil {
                throw PayloadError(
                    .notAllowed, field: "aps.input-push-channel", message: "only a start subscribes to a channel")
            }
            if attributesType != nil {
                throw PayloadError(
                    .notAllowed, field: "aps.attributes-type", message: "only a start carries the attributes type")
            }
            if attributes != nil {
                throw PayloadError(.notAllowed, field: "aps.attributes", message: "only a start carries attributes")
            }
        }

        if let alert {
            aps["alert"] = try Self.json(alert)
        } else if event == .start {
            throw PayloadError(
                .missing, field: "aps.alert",
                message: "a start needs an alert with a title and a body; without one APNs accepts it and the device never shows the activity")
        }

        if let staleDate {
            let seconds = try PayloadRules.unixSeconds(staleDate, field: "aps.stale-date")
            guard staleDate >= now else {
                throw PayloadError(
                    .inThePast, field: "aps.stale-date",
                    message: "\(seconds) lies before now (\(PayloadRules.text(now.timeIntervalSince1970.rounded(.down)))); the content would be stale on arrival")
            }
            aps["stale-date"] = .integer(seconds)
        }

        if let dismissalDate {
            guard event == .end else {
                throw PayloadError(.notAllowed, field: "aps.dismissal-date", message: "only an end may carry a dismissal date")
            }
            aps["dismissal-date"] = .integer(try PayloadRules.unixSeconds(dismissalDate, field: "aps.dismissal-date"))
        }

        if let relevanceScore {
            guard relevanceScore.isFinite else {
                throw PayloadError(
                    .notFinite, field: "aps.relevance-score", message: "\(relevanceScore) is not a number JSON can carry")
            }
            aps["relevance-score"] = .double(relevanceScore)
        }

        let timestamp = try resolveTimestamp(now: now, lastTimestamp: lastTimestamp)
        aps["timestamp"] = .integer(timestamp)

        let defaultPriority: APNsPriority = event == .update && alert == nil ? .powerConsidered : .immediate
        let priority = try PayloadRules.priority(
            priority, allowed: [5, 10], fallback: defaultPriority, kind: "Live Activity pushes")
        let expiration = try PayloadRules.expiration(expiration, now: now)
        try PayloadRules.checkCollapseID(collapseID)

        let payload = try PayloadRules.encode(
            ["aps": .object(aps)], limit: limit ?? .token(for: event),
            parts: ["aps.content-state": aps["content-state"], "aps.attributes": aps["attributes"], "aps.alert": aps["alert"]])
        return BuiltPush(
            payload: payload, pushType: .liveactivity, topic: topic, priority: priority, expiration: expiration,
            collapseID: collapseID, event: event, timestamp: timestamp, tokenKind: event.tokenKind)
    }

    /// Refuses `built` (this push, as ``build(bundleID:now:lastTimestamp:limit:)``
    /// wrote it for a larger limit) when it is over `limit`, naming its largest part
    /// as the builder does: for a push that goes two ways, such as an update of an
    /// activity on a channel that some devices hold with their own update token.
    ///
    /// - Throws: ``PayloadError`` with code ``PayloadError/Code/tooLarge``.
    public func check(_ built: BuiltPush, fitsIn limit: PayloadLimit) throws(PayloadError) {
        guard built.payload.count > limit.bytes else { return }
        var parts: [String: JSONValue?] = ["aps.content-state": contentState]
        if event == .start { parts["aps.attributes"] = attributes }
        if let alert { parts["aps.alert"] = try Self.json(alert) }
        try PayloadRules.checkSize(built.payload.count, limit: limit, parts: parts)
    }

    /// The explicit timestamp, checked, or max(now, last + 1).
    private func resolveTimestamp(now: Date, lastTimestamp: Int64?) throws(PayloadError) -> Int64 {
        let field = "aps.timestamp"
        if let lastTimestamp, Double(lastTimestamp) >= PayloadRules.millisecondThreshold {
            throw PayloadError(
                .looksLikeMilliseconds, field: field,
                message: "the activity's last timestamp \(lastTimestamp) looks like milliseconds; timestamps are Unix seconds")
        }
        if let timestamp {
            try PayloadRules.checkSeconds(Double(timestamp), field: field)
            if let lastTimestamp, timestamp <= lastTimestamp {
                throw PayloadError(
                    .notNewer, field: field,
                    message: "\(timestamp) is not newer than the activity's last timestamp (\(lastTimestamp)); the device would drop the push")
            }
            return timestamp
        }
        let nowSeconds = try PayloadRules.unixSeconds(now, field: field)
        guard let lastTimestamp else { return nowSeconds }
        return max(nowSeconds, lastTimestamp + 1)
    }

    /// The alert as ActivityKit reads it: title and body, each a string or a
    /// `{loc-key, loc-args}` object, and the sound beside them.
    private static func json(_ alert: PushAlert) throws(PayloadError) -> JSONValue {
        guard !alert.title.isEmpty else {
            throw PayloadError(.empty, field: "aps.alert.title", message: "the alert title is empty")
        }
        guard !alert.body.isEmpty else {
            throw PayloadError(.empty, field: "aps.alert.body", message: "the alert body is empty")
        }
        var members: [String: JSONValue] = ["title": json(alert.title), "body": json(alert.body)]
        if let sound = alert.sound {
            guard !sound.isEmpty else {
                throw PayloadError(.empty, field: "aps.alert.sound", message: "the sound name is empty")
            }
            members["sound"] = .string(sound)
        }
        return .object(members)
    }

    private static func json(_ text: PushAlert.Text) -> JSONValue {
        switch text {
        case .literal(let string):
            return .string(string)
        case .localized(let key, let arguments):
            var members: [String: JSONValue] = ["loc-key": .string(key)]
            if !arguments.isEmpty { members["loc-args"] = .array(arguments.map(JSONValue.string)) }
            return .object(members)
        }
    }
}
