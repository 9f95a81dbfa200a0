/// Who may follow an activity the backend started: register an update token for
/// it, or (an Android device) join it. A start's `join`.
public enum JoinRule: String, Sendable, Hashable, CaseIterable, Codable {
    /// Only the devices the start targeted, and those its join audience resolves
    /// to at the time of the request (the default of a start that names an audience).
    case audience
    /// Any device of the app (the default of a start that names none: an activity
    /// the app starts on its devices itself, such as a match everyone may follow).
    case anyone
}

/// Who may follow an activity devices created themselves (a device registered an
/// update token for an id nobody had started): an app's `local_join`.
public enum LocalJoinRule: String, Sendable, Hashable, CaseIterable, Codable {
    /// Any device that registers for it (a match many phones start on their own).
    case anyone
    /// Only devices of the creating device's user id (or, when it had none, that
    /// device alone).
    case user
}

/// The devices an activity under `JoinRule.audience` lets in: the start's
/// audience, and whatever the backend added later. A device is in it when its id,
/// its user id or one of its tags is listed (the store answers that:
/// `ActivityStore.inJoinAudience`).
public struct JoinAudience: Sendable, Hashable {
    /// The most values an activity's audience holds in all: a start's audience
    /// (up to 100,000 values) and as many added later.
    public static let maximumValues = 200_000

    /// Devices of these user ids.
    public private(set) var userIDs: [String]
    /// These devices.
    public private(set) var deviceIDs: [String]
    /// Devices carrying one of these tags.
    public private(set) var tags: [String]

    /// An audience of these values (each list sorted, without repeats).
    public init(userIDs: [String] = [], deviceIDs: [String] = [], tags: [String] = []) {
        self.userIDs = Array(Set(userIDs)).sorted()
        self.deviceIDs = Array(Set(deviceIDs)).sorted()
        self.tags = Array(Set(tags)).sorted()
    }

    /// The join audience of a start's audience.
    public init(_ audience: Audience) {
        switch audience {
        case .userIDs(let values): self.init(userIDs: values)
        case .deviceIDs(let values): self.init(deviceIDs: values)
        case .tags(let values): self.init(tags: values)
        }
    }

    /// How many values it holds.
    public var count: Int { userIDs.count + deviceIDs.count + tags.count }

    /// Whether it lists nothing.
    public var isEmpty: Bool { count == 0 }

    /// As shown: `{"user_ids": […], "device_ids": […], "tags": […]}`.
    public var json: JSONValue {
        .object([
            "user_ids": .array(userIDs.map(JSONValue.string)), "device_ids": .array(deviceIDs.map(JSONValue.string)),
            "tags": .array(tags.map(JSONValue.string)),
        ])
    }
}
