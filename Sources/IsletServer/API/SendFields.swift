import IsletCore

/// The fields the send routes share, read into domain values.
enum SendFields {
    /// `alert: {title, body, sound?}`, by the `alert` field's schema.
    static func alert(_ object: ObjectReader) -> PushAlert? {
        guard let alert = object.object("alert") else { return nil }
        let title = alert.string("title")
        let body = alert.string("body")
        let sound = alert.string("sound")
        guard let title, let body else { return nil }
        return PushAlert(title: .literal(title), body: .literal(body), sound: sound)
    }

    /// `audience`: exactly one of `user_ids`, `device_ids`, `tags`.
    static func audience(_ object: ObjectReader) -> Audience? {
        guard let reader = object.object("audience"), let chosen = reader.chosen() else { return nil }
        guard let values = reader.strings(chosen) else { return nil }
        switch chosen {
        case "user_ids": return .userIDs(values)
        case "device_ids": return .deviceIDs(values)
        default: return .tags(values)
        }
    }
}
