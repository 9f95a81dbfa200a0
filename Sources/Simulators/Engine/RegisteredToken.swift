public import Foundation
public import IsletCore

/// A push token the simulated devices hold, with its kind and environment.
public struct RegisteredToken: Sendable, Hashable, Codable {
    /// How the simulator came to know the token.
    public enum Origin: String, Sendable, Hashable, CaseIterable, Codable {
        /// It was the target of the first push that named it.
        case firstSeen = "first_seen"
        /// The simulator issued it for an activity started with `input-push-token: 1`.
        case minted
        /// It was registered through ``SimulatorEngine/registerToken(_:kind:environment:)``.
        case registered
    }

    /// The token, lowercase hex.
    public var token: String
    /// Its kind.
    public var kind: PushTokenKind
    /// The environment it belongs to.
    public var environment: APNsEnvironment
    /// How the simulator came to know it.
    public var origin: Origin
    /// When the simulator came to know it.
    public var registeredAt: Date
    /// For an update token, the activity it belongs to.
    public var activityID: String?
    /// Whether the device behind the token allowed frequent updates, when it was
    /// registered saying so: its activities get the frequent priority-10 budget.
    public var frequentUpdates: Bool?

    enum CodingKeys: String, CodingKey {
        case token, kind, environment, origin
        case registeredAt = "registered_at"
        case activityID = "activity_id"
        case frequentUpdates = "frequent_updates"
    }

    init(token: String, kind: PushTokenKind, environment: APNsEnvironment, origin: Origin, registeredAt: Date, activityID: String?) {
        self.token = token
        self.kind = kind
        self.environment = environment
        self.origin = origin
        self.registeredAt = registeredAt
        self.activityID = activityID
    }

    /// Reads a token from its JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        token = try c.decode(String.self, forKey: .token)
        kind = try c.decode(PushTokenKind.self, forKey: .kind)
        environment = try c.decode(APNsEnvironment.self, forKey: .environment)
        origin = try c.decode(Origin.self, forKey: .origin)
        registeredAt = try c.decodeDate(forKey: .registeredAt)
        activityID = try c.decodeIfPresent(String.self, forKey: .activityID)
        frequentUpdates = try c.decodeIfPresent(Bool.self, forKey: .frequentUpdates)
    }

    /// Writes the token as JSON; absent values are left out.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(token, forKey: .token)
        try c.encode(kind, forKey: .kind)
        try c.encode(environment, forKey: .environment)
        try c.encode(origin, forKey: .origin)
        try c.encodeDate(registeredAt, forKey: .registeredAt)
        try c.encodeIfPresent(activityID, forKey: .activityID)
        try c.encodeIfPresent(frequentUpdates, forKey: .frequentUpdates)
    }
}
