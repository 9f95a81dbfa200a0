public import Foundation
public import IsletCore

/// An app as stored: its identity, bundle id, APNs credentials (all three or none)
/// and the hashes of its two keys.
public struct AppRecord: Sendable, Hashable {
    /// `app_…`.
    public var id: String
    /// A display name.
    public var name: String
    /// The iOS bundle id, the base of every `apns-topic`.
    public var bundleID: String
    /// The APNs signing key, when the app has one.
    public var credentials: APNsCredentials?
    /// Whether a start for a type without a registered schema is refused.
    public var strictActivityTypes: Bool = false
    /// SHA-256 of the server key.
    public var serverKeyHash: Data
    /// SHA-256 of the device key.
    public var deviceKeyHash: Data
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        id: String, name: String, bundleID: String, credentials: APNsCredentials?, serverKeyHash: Data,
        deviceKeyHash: Data, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.serverKeyHash = serverKeyHash
        self.deviceKeyHash = deviceKeyHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An APNs token-auth signing key: team id, key id and the `.p8` private key (PEM).
public struct APNsCredentials: Sendable, Hashable {
    /// The team id (the JWT's `iss`).
    public var teamID: String
    /// The key id (the JWT's `kid`).
    public var keyID: String
    /// The PKCS#8 PEM private key.
    public var privateKeyPEM: String

    /// Creates credentials.
    public init(teamID: String, keyID: String, privateKeyPEM: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
    }
}

/// Which of an app's two keys a bearer key is.
public enum AppKeyKind: String, Sendable, Hashable, CaseIterable {
    /// The server key: the backend's routes.
    case server
    /// The device key: the routes the app calls from devices.
    case device
}

/// A device of an app.
public struct DeviceRecord: Sendable, Hashable {
    /// The app's own install id.
    public var deviceID: String
    /// `ios`.
    public var platform: String
    /// The APNs environment of the device's tokens.
    public var environment: APNsEnvironment
    /// The ordinary (alert) push token, if the device gave one.
    public var apnsToken: String?
    /// When APNs refused the device token; `nil` while reachable.
    public var unreachableAt: Date?
    /// The app's user id (external id).
    public var userID: String?
    /// Tags, sorted.
    public var tags: [String]
    /// When it first registered.
    public var createdAt: Date
    /// When it last registered.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        deviceID: String, platform: String, environment: APNsEnvironment, apnsToken: String?, unreachableAt: Date?,
        userID: String?, tags: [String], createdAt: Date, updatedAt: Date
    ) {
        self.deviceID = deviceID
        self.platform = platform
        self.environment = environment
        self.apnsToken = apnsToken
        self.unreachableAt = unreachableAt
        self.userID = userID
        self.tags = tags
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An activity as stored.
public struct ActivityRecord: Sendable, Hashable {
    /// How an activity came to Islet.
    public enum Origin: String, Sendable, Hashable, CaseIterable {
        /// Started by a push-to-start from Islet.
        case remote
        /// Started by the app on the device, and first seen when it registered its
        /// update token.
        case local
    }

    /// The listing cursor: larger is newer.
    public var sequence: Int64
    /// The activity id (the app's, or the one given to the start route).
    public var activityID: String
    /// The activity type (the app's `ActivityAttributes` type name).
    public var activityType: String
    /// Remote or local.
    public var origin: Origin
    /// The stored status (see `ActivityLifecycle.effectiveStatus`).
    public var status: ActivityStatus
    /// The attributes sent with the start, if Islet started it.
    public var attributes: JSONValue?
    /// The last content state sent.
    public var contentState: JSONValue?
    /// The last `aps.timestamp` sent.
    public var lastTimestamp: Int64?
    /// When it started.
    public var startedAt: Date
    /// When it was last updated.
    public var updatedAt: Date?
    /// When it ended.
    public var endedAt: Date?
    /// Why it ended.
    public var endCause: EndCause?
    /// When Islet ends it, if an end time was set.
    public var endAt: Date?

    /// Creates a record.
    public init(
        sequence: Int64, activityID: String, activityType: String, origin: Origin, status: ActivityStatus,
        attributes: JSONValue?, contentState: JSONValue?, lastTimestamp: Int64?, startedAt: Date, updatedAt: Date?,
        endedAt: Date?, endCause: EndCause?, endAt: Date? = nil
    ) {
        self.sequence = sequence
        self.activityID = activityID
        self.activityType = activityType
        self.origin = origin
        self.status = status
        self.attributes = attributes
        self.contentState = contentState
        self.lastTimestamp = lastTimestamp
        self.startedAt = startedAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
        self.endCause = endCause
        self.endAt = endAt
    }
}

/// One device's copy of an activity.
public struct InstanceRecord: Sendable, Hashable {
    /// The device.
    public var deviceID: String
    /// Pending, active or ended.
    public var status: InstanceStatus
    /// The update token, while Islet holds one.
    public var updateToken: String?
    /// The environment of the update token.
    public var environment: APNsEnvironment
    /// When the update token was last registered.
    public var tokenRegisteredAt: Date?
    /// When the copy was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// When it ended.
    public var endedAt: Date?
    /// Why it ended.
    public var endCause: EndCause?

    /// Creates a record.
    public init(
        deviceID: String, status: InstanceStatus, updateToken: String?, environment: APNsEnvironment,
        tokenRegisteredAt: Date?, createdAt: Date, updatedAt: Date, endedAt: Date?, endCause: EndCause?
    ) {
        self.deviceID = deviceID
        self.status = status
        self.updateToken = updateToken
        self.environment = environment
        self.tokenRegisteredAt = tokenRegisteredAt
        self.createdAt = createdAt
        self.updatedAt = updatedAt
        self.endedAt = endedAt
        self.endCause = endCause
    }
}

/// A push's target: a device, one of its tokens, and the token's environment.
public struct PushTarget: Sendable, Hashable {
    /// The device.
    public var deviceID: String
    /// The token.
    public var token: String
    /// The token's environment.
    public var environment: APNsEnvironment

    /// Creates a target.
    public init(deviceID: String, token: String, environment: APNsEnvironment) {
        self.deviceID = deviceID
        self.token = token
        self.environment = environment
    }
}

/// What is sent to every target of one send: the payload and its APNs headers.
public struct SendContent: Sendable, Hashable {
    /// Start, update, end or alert.
    public var event: PushEvent
    /// `apns-topic`.
    public var topic: String
    /// `apns-push-type`.
    public var pushType: APNsPushType
    /// `apns-priority`.
    public var priority: APNsPriority
    /// `apns-expiration`.
    public var expiration: Int64?
    /// `apns-collapse-id`.
    public var collapseID: String?
    /// The payload.
    public var payload: Data

    /// Creates content.
    public init(
        event: PushEvent, topic: String, pushType: APNsPushType, priority: APNsPriority, expiration: Int64?,
        collapseID: String?, payload: Data
    ) {
        self.event = event
        self.topic = topic
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.payload = payload
    }
}

/// One push, as the pushes route reports it.
public struct PushHistoryItem: Sendable, Hashable {
    /// The push's row id.
    public var id: Int64
    /// The device.
    public var deviceID: String
    /// The kind of token it went to.
    public var tokenKind: PushTokenKind
    /// Start, update, end or alert.
    public var event: PushEvent
    /// Queued, sent, failed or dropped.
    public var status: PushStatus
    /// The environment it went to (last).
    public var environment: APNsEnvironment
    /// Whether it was sent again to the other environment after a BadDeviceToken.
    public var environmentSwitched: Bool
    /// The last APNs status.
    public var apnsStatus: Int?
    /// The APNs reason, or Islet's own reason for a push it did not send.
    public var reason: String?
    /// `apns-id`.
    public var apnsID: String
    /// `apns-unique-id`, in the sandbox.
    public var apnsUniqueID: String?
    /// Attempts made.
    public var attempts: Int
    /// When it was queued.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date
    /// When APNs accepted it.
    public var sentAt: Date?
}

/// A push claimed by the delivery worker: everything needed to send it.
public struct ClaimedPush: Sendable {
    /// The push's row id.
    public var id: Int64
    /// The app.
    public var appID: String
    /// The activity, for Live Activity pushes.
    public var activityID: String?
    /// The activity type, for a push-to-start.
    public var activityType: String?
    /// The device.
    public var deviceID: String
    /// The kind of token.
    public var tokenKind: PushTokenKind
    /// The token.
    public var token: String
    /// The environment it goes to now.
    public var environment: APNsEnvironment
    /// Whether it was already switched to the other environment once.
    public var environmentSwitched: Bool
    /// `apns-id`, the same on every attempt.
    public var apnsID: String
    /// Attempts made before this one.
    public var attempts: Int
    /// Rounds of attempts made before this one (each round is the APNs client's
    /// quick retries).
    public var rounds: Int
    /// When it was first queued.
    public var createdAt: Date
    /// The payload and headers.
    public var content: SendContent
}

/// A problem with the database, in the store's terms.
public struct StoreError: Error, Sendable, CustomStringConvertible {
    /// What went wrong; new codes may be added.
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String { case conflict, busy, unavailable, corrupt }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The change collides with what is stored (a key or id already taken, a
        /// constraint broken): the caller may read again and decide.
        public static let conflict = Code(.conflict)
        /// The database is busy with other writers; trying again shortly may work.
        public static let busy = Code(.busy)
        /// The database cannot be reached (closed, unreachable, out of space).
        public static let unavailable = Code(.unavailable)
        /// A stored value that cannot be read back.
        public static let corrupt = Code(.corrupt)

        public var description: String { base.rawValue }
    }

    /// What went wrong.
    public let code: Code
    /// Which value, where.
    public let message: String

    /// Creates an error.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "store \(code): \(message)" }
}

extension Date {
    /// Whole Unix milliseconds, as the store keeps times.
    public var unixMilliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded(.down)) }

    /// The date `milliseconds` after 1970.
    public init(unixMilliseconds milliseconds: Int64) {
        self.init(timeIntervalSince1970: Double(milliseconds) / 1000)
    }
}
