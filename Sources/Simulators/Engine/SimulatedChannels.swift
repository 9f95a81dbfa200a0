public import Foundation
import IsletCore

/// A broadcast channel the simulated APNs holds for an app (iOS 18), as the channel
/// management API creates it.
public struct SimulatedChannel: Sendable, Hashable, Codable {
    /// Apple's id: standard base64, as the `apns-channel-id` header carries it.
    public var id: String
    /// The app's bundle id (the path's).
    public var bundleID: String
    /// `message-storage-policy`: 0 stores no message, 1 the most recent one.
    public var messageStoragePolicy: Int
    /// When it was created, by the simulator's clock.
    public var createdAt: Date

    enum CodingKeys: String, CodingKey {
        case id
        case bundleID = "bundle_id"
        case messageStoragePolicy = "message_storage_policy"
        case createdAt = "created_at"
    }

    /// Reads a channel from its JSON form.
    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        id = try c.decode(String.self, forKey: .id)
        bundleID = try c.decode(String.self, forKey: .bundleID)
        messageStoragePolicy = try c.decode(Int.self, forKey: .messageStoragePolicy)
        createdAt = try c.decodeDate(forKey: .createdAt)
    }

    /// Writes the channel as JSON.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(id, forKey: .id)
        try c.encode(bundleID, forKey: .bundleID)
        try c.encode(messageStoragePolicy, forKey: .messageStoragePolicy)
        try c.encodeDate(createdAt, forKey: .createdAt)
    }

    init(id: String, bundleID: String, messageStoragePolicy: Int, createdAt: Date) {
        self.id = id
        self.bundleID = bundleID
        self.messageStoragePolicy = messageStoragePolicy
        self.createdAt = createdAt
    }
}

/// The channels of the simulated APNs, and the rules of its channel management API
/// (`/1/apps/{bundle_id}/channels` and `/all-channels`), as pure functions of a
/// request whose provider token was already accepted. Every refusal is the one APNs
/// answers, with Apple's reason.
struct SimulatedChannels {
    /// Channels by id.
    private(set) var byID: [String: SimulatedChannel] = [:]
    /// The ids of each app's channels, in the order they were made.
    private var order: [String: [String]] = [:]
    /// The message each channel that stores the most recent one holds, until it
    /// expires: what a device that subscribes later is given first.
    private(set) var stored: [String: StoredMessage] = [:]

    /// A broadcast a channel keeps for late subscribers.
    struct StoredMessage {
        var event: String
        var aps: APSFields
        /// When it stops being given; `nil` for as long as APNs keeps it.
        var expiresAt: Date?
    }

    /// How long APNs keeps a channel's most recent message at most: eight hours.
    static let storageLifetime: TimeInterval = 8 * 3600

    /// The longest channel id accepted in `apns-channel-id`: Apple gives no figure
    /// and its ids are short; this one keeps an absurd header out.
    static let maximumIDLength = 128

    /// The operation a management request asks for.
    enum Operation: Equatable {
        case create
        case read
        case delete
        case list
    }

    /// The app and operation a management request names: 404 BadPath for a path
    /// that is not a channel path, 405 MethodNotAllowed for a method the path does
    /// not take.
    static func route(method: String, path: String) throws(Refusal) -> (bundleID: String, operation: Operation) {
        let parts = path.split(separator: "/", omittingEmptySubsequences: false)
        // "", "1", "apps", bundle, "channels" | "all-channels"
        guard parts.count == 5, parts[0].isEmpty, parts[1] == "1", parts[2] == "apps", !parts[3].isEmpty else {
            throw Refusal(.badPath, "channel requests go to /1/apps/<bundle id>/channels or /all-channels, not \(path)")
        }
        let bundleID = String(parts[3])
        switch (parts[4], method) {
        case ("channels", "POST"): return (bundleID, .create)
        case ("channels", "GET"): return (bundleID, .read)
        case ("channels", "DELETE"): return (bundleID, .delete)
        case ("all-channels", "GET"): return (bundleID, .list)
        case ("channels", _), ("all-channels", _):
            throw Refusal(.methodNotAllowed, "\(parts[4]) does not take \(method)")
        default:
            throw Refusal(.badPath, "channel requests go to /1/apps/<bundle id>/channels or /all-channels, not \(path)")
        }
    }

    /// A bundle id with a push-type suffix is refused: channels belong to the app.
    static func checkTopic(_ bundleID: String) throws(Refusal) {
        if bundleID.contains(".push-type.") {
            throw Refusal(.topicDisallowed, "a channel belongs to the app's bundle id, without a push-type suffix")
        }
    }

    /// Creates a channel from a body `{"message-storage-policy": 0|1, "push-type":
    /// "LiveActivity"}`: 400 BadRequestPayload for a body that is not a JSON object,
    /// MissingPushType or InvalidPushType for its push type, BadRequestParams for a
    /// member it does not take or a policy other than 0 or 1, and
    /// CannotCreateChannelConfig once the app has `limit` channels.
    mutating func create(
        bundleID: String, body: Data, limit: Int, now: Date, random: inout some RandomNumberGenerator
    ) throws(Refusal) -> SimulatedChannel {
        guard !body.isEmpty, case .object(let members)? = try? JSONValue(parsing: body) else {
            throw Refusal(.badRequestPayload, "the body must be a JSON object {\"message-storage-policy\", \"push-type\"}")
        }
        if let unknown = members.keys.sorted().first(where: { $0 != "message-storage-policy" && $0 != "push-type" }) {
            throw Refusal(.badRequestParams, "\"\(unknown)\" is not a member a channel takes")
        }
        guard let pushType = members["push-type"] else {
            throw Refusal(.missingPushType, "push-type is required (\"LiveActivity\")")
        }
        guard pushType == .string("LiveActivity") else {
            throw Refusal(.invalidPushType, "push-type must be \"LiveActivity\", not \(pushType.jsonText)")
        }
        guard let policy = members["message-storage-policy"]?.int64Value, policy == 0 || policy == 1 else {
            throw Refusal(.badRequestParams, "message-storage-policy must be 0 (no message stored) or 1 (the most recent)")
        }
        let count = order[bundleID]?.count ?? 0
        guard count < limit else {
            throw Refusal(
                .cannotCreateChannelConfig, "the app has \(count) channels, as many as it may have; delete some first")
        }
        var id: String
        repeat {
            var bytes = [UInt8](repeating: 0, count: 16)
            for index in bytes.indices { bytes[index] = UInt8.random(in: 0...255, using: &random) }
            id = Data(bytes).base64EncodedString()
        } while byID[id] != nil
        let channel = SimulatedChannel(id: id, bundleID: bundleID, messageStoragePolicy: Int(policy), createdAt: now)
        byID[id] = channel
        order[bundleID, default: []].append(id)
        return channel
    }

    /// The channel `apns-channel-id` names for the app: 400 MissingChannelId without
    /// one, BadChannelId for one that is not standard base64 (or too long),
    /// ChannelNotRegistered for one the app does not have.
    func channel(_ id: String?, bundleID: String) throws(Refusal) -> SimulatedChannel {
        guard let id, !id.isEmpty else {
            throw Refusal(.missingChannelId, "the request needs the apns-channel-id header")
        }
        guard id.utf8.count <= Self.maximumIDLength, Data(base64Encoded: id) != nil else {
            throw Refusal(.badChannelId, "apns-channel-id must be the base64 id APNs gave the channel")
        }
        guard let channel = byID[id], channel.bundleID == bundleID else {
            throw Refusal(.channelNotRegistered, "the app has no channel \(id)")
        }
        return channel
    }

    /// Deletes a channel: final.
    mutating func delete(_ channel: SimulatedChannel) {
        byID[channel.id] = nil
        stored[channel.id] = nil
        order[channel.bundleID]?.removeAll { $0 == channel.id }
    }

    /// Keeps a broadcast as the channel's most recent message, when it stores one.
    mutating func store(_ event: String, aps: APSFields, on channel: SimulatedChannel, expiration: Int64, now: Date) {
        guard channel.messageStoragePolicy == 1 else { return }
        let limit = now.addingTimeInterval(Self.storageLifetime)
        let asked = expiration > 0 ? Date(timeIntervalSince1970: TimeInterval(expiration)) : limit
        stored[channel.id] = StoredMessage(event: event, aps: aps, expiresAt: min(asked, limit))
    }

    /// The message a new subscriber of `id` is given first, if one is kept.
    func storedMessage(_ id: String, now: Date) -> StoredMessage? {
        guard let message = stored[id], message.expiresAt.map({ now < $0 }) ?? true else { return nil }
        return message
    }

    /// The ids of the app's channels, oldest first.
    func ids(bundleID: String) -> [String] {
        order[bundleID] ?? []
    }

    /// Every channel, oldest first within each app.
    var all: [SimulatedChannel] {
        order.keys.sorted().flatMap { bundle in order[bundle]!.compactMap { byID[$0] } }
    }

    /// Forgets every channel.
    mutating func removeAll() {
        byID.removeAll()
        order.removeAll()
        stored.removeAll()
    }
}
