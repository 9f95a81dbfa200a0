public import Foundation

/// What an ordinary alert push should say: the input to ``build(bundleID:now:)``,
/// which checks it and writes the payload. An alert goes to the app's device token,
/// never to a Live Activity token.
///
/// The default `apns-priority` is 10.
public struct AlertPush: Sendable, Hashable {
    /// `aps.alert.title`. An alert needs a title, a body, or both.
    public var title: PushAlert.Text?
    /// `aps.alert.subtitle`, shown between title and body.
    public var subtitle: PushAlert.Text?
    /// `aps.alert.body`. An alert needs a title, a body, or both.
    public var body: PushAlert.Text?
    /// `aps.sound`: a sound file in the app bundle, or `default`.
    public var sound: String?
    /// `aps.badge`: the number on the app icon; 0 clears it.
    public var badge: Int?
    /// Members placed beside `aps` at the top level of the payload, for the app to
    /// read. May not contain `aps`.
    public var customData: [String: JSONValue]
    /// `apns-priority`: 1, 5 or 10; `nil` for 10.
    public var priority: Int?
    /// `apns-expiration`; `nil` leaves the header out.
    public var expiration: PushExpiration?
    /// `apns-collapse-id`, at most 64 bytes.
    public var collapseID: String?

    /// Creates an alert; ``build(bundleID:now:)`` checks it.
    public init(
        title: PushAlert.Text? = nil, subtitle: PushAlert.Text? = nil, body: PushAlert.Text? = nil,
        sound: String? = nil, badge: Int? = nil, customData: [String: JSONValue] = [:], priority: Int? = nil,
        expiration: PushExpiration? = nil, collapseID: String? = nil
    ) {
        self.title = title
        self.subtitle = subtitle
        self.body = body
        self.sound = sound
        self.badge = badge
        self.customData = customData
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
    }

    /// Checks the alert against the wire rules and writes its payload and headers.
    /// `now` is needed only to refuse an expiration already past.
    ///
    /// - Throws: ``PayloadError`` naming the first field that breaks a rule.
    public func build(bundleID: String, now: Date) throws(PayloadError) -> BuiltPush {
        let topic = try PayloadRules.topic(bundleID: bundleID, pushType: .alert)
        guard title != nil || body != nil else {
            throw PayloadError(.missing, field: "aps.alert", message: "an alert needs a title, a body, or both")
        }
        var alert: [String: JSONValue] = [:]
        try Self.add(title, to: &alert, field: "title", localizedKey: "title-loc-key", localizedArguments: "title-loc-args")
        try Self.add(
            subtitle, to: &alert, field: "subtitle", localizedKey: "subtitle-loc-key",
            localizedArguments: "subtitle-loc-args")
        try Self.add(body, to: &alert, field: "body", localizedKey: "loc-key", localizedArguments: "loc-args")

        var aps: [String: JSONValue] = ["alert": .object(alert)]
        if let sound {
            guard !sound.isEmpty else { throw PayloadError(.empty, field: "aps.sound", message: "the sound name is empty") }
            aps["sound"] = .string(sound)
        }
        if let badge {
            guard badge >= 0 else {
                throw PayloadError(.outOfRange, field: "aps.badge", message: "the badge is \(badge); it must be 0 or more")
            }
            aps["badge"] = .integer(Int64(badge))
        }
        if customData["aps"] != nil {
            throw PayloadError(
                .notAllowed, field: "aps", message: "custom data may not carry its own aps; the builder writes it")
        }
        try PayloadRules.checkFinite(.object(customData), path: "")

        let priority = try PayloadRules.priority(priority, allowed: [1, 5, 10], fallback: .immediate, kind: "alerts")
        let expiration = try PayloadRules.expiration(expiration, now: now)
        try PayloadRules.checkCollapseID(collapseID)

        var payload = customData
        payload["aps"] = .object(aps)
        var parts: [String: JSONValue?] = ["aps.alert": aps["alert"]]
        for (key, value) in customData { parts[key] = value }
        let data = try PayloadRules.encode(.object(payload), limit: .deviceToken, parts: parts)
        return BuiltPush(
            payload: data, pushType: .alert, topic: topic, priority: priority, expiration: expiration,
            collapseID: collapseID, event: nil, timestamp: nil, tokenKind: .device)
    }

    /// Writes one piece of alert text: a string under `field`, or a localization key
    /// and its arguments under the keys APNs reads for that field.
    private static func add(
        _ text: PushAlert.Text?, to alert: inout [String: JSONValue], field: String, localizedKey: String,
        localizedArguments: String
    ) throws(PayloadError) {
        guard let text else { return }
        guard !text.isEmpty else {
            throw PayloadError(.empty, field: "aps.alert.\(field)", message: "the alert \(field) is empty")
        }
        switch text {
        case .literal(let string):
            alert[field] = .string(string)
        case .localized(let key, let arguments):
            alert[localizedKey] = .string(key)
            if !arguments.isEmpty { alert[localizedArguments] = .array(arguments.map(JSONValue.string)) }
        }
    }
}
