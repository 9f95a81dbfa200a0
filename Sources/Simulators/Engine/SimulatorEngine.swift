import IsletSync
import Foundation
public import IsletCore

/// A simulated APNs, without its network: it takes one request at a time, answers as
/// APNs would, and simulates the devices behind it, so that what APNs accepts but a
/// device silently drops is recorded with a plain reason.
///
/// The transport (HTTP/2 over TLS) and the inspection server are built around it;
/// the engine itself does no I/O, reads time only from its clock and draws only from
/// its random source, so every rule can be tested without sleeping.
///
/// A request is checked in the order APNs checks it, and the first failure is the
/// answer:
/// 1. 405 MethodNotAllowed (not POST); 404 BadPath (not `/3/device/…`);
///    400 MissingDeviceToken; 400 BadDeviceToken (not of push token shape).
/// 2. 400 DuplicateHeaders.
/// 3. The provider token: 403 MissingProviderToken, InvalidProviderToken,
///    BadEnvironmentKeyIdInToken, ExpiredProviderToken; 429
///    TooManyProviderTokenUpdates.
/// 4. 400 MissingTopic, BadTopic, InvalidPushType, BadPriority, BadMessageId,
///    BadCollapseId, BadExpirationDate.
/// 5. 400 PayloadEmpty; 413 PayloadTooLarge; 400 PayloadEmpty for a body that is not
///    a JSON object with an `aps` dictionary.
/// 6. The token's state: 400 BadDeviceToken (other environment), 400
///    DeviceTokenNotForTopic (wrong kind), 410 Unregistered (dismissed activity).
/// 7. An injected fault, if the dice say so.
/// 8. 200, and the simulated device's verdict.
///
/// Only what APNs refuses is refused. What APNs accepts but a stricter server might
/// refuse (an `iat` written as a string, a DER-encoded signature, no
/// `apns-push-type`, uppercase hex digits) is accepted, and the push's record says so
/// in ``PushRecord/warnings``.
public final class SimulatorEngine: Sendable {
    /// The configuration the engine was made with.
    public let configuration: SimulatorConfiguration

    private let clock: any WallClock
    private let verifier: ProviderTokenVerifier
    private let observer: (@Sendable (PushRecord) -> Void)?
    private let state: Lock<State>

    private struct State {
        var random: any RandomSource
        var connections: [ConnectionID: ConnectionState] = [:]
        var devices: SimulatedDevices
        var history: PushHistory
        var sequence = 0
    }

    /// Creates an engine. `observer`, when given, is called with every push record
    /// once the push is answered (for `islet sim`'s console lines), outside the
    /// engine's lock.
    public init(
        configuration: SimulatorConfiguration,
        clock: any WallClock,
        random: some RandomSource,
        observer: (@Sendable (PushRecord) -> Void)? = nil
    ) {
        self.configuration = configuration
        self.clock = clock
        self.verifier = ProviderTokenVerifier(configuration: configuration)
        self.observer = observer
        self.state = Lock(State(
            random: random,
            devices: SimulatedDevices(environment: configuration.environment),
            history: PushHistory(capacity: configuration.pushHistoryLimit)))
    }

    // MARK: - Requests

    /// Answers one request that arrived on `connection`, and records it.
    public func handle(_ request: SimulatorRequest, connection: ConnectionID) -> SimulatorResponse {
        if request.path.hasPrefix(APNsPath.broadcastPrefix) { return handleBroadcast(request, connection: connection) }
        let now = clock.now()
        let fields = HeaderFields(request.fields)
        let packed = PackedRequest(request)

        // Checks that need no shared state; the first failure wins.
        var deviceToken: String?
        var providerToken: String?
        var early: Refusal?
        // What APNs accepts but a stricter server might refuse, in the order found.
        var warnings: [String] = []
        do throws(Refusal) {
            deviceToken = try RequestChecks.route(request, warnings: &warnings)
            try RequestChecks.checkNoRepeats(fields)
            let accepted = try verifier.check(authorizationIn: fields, now: now)
            providerToken = accepted.token
            warnings += accepted.warnings
        } catch {
            early = error
        }
        // Later checks, computed now and answered only if the connection accepts the
        // provider token.
        var headers: PushHeaders?
        var aps = APSFields()
        var late: Refusal?
        if early == nil {
            do throws(Refusal) {
                let checked = try RequestChecks.apnsHeaders(fields)
                warnings += checked.warnings
                try packed.withBody { bytes throws(Refusal) in
                    try RequestChecks.payload(request.body, bytes: bytes, pushType: checked.pushType, into: &aps)
                }
                headers = checked
            } catch {
                late = error
            }
        }
        let echoesID = fields.id.map { APNsMessageID.isUUID($0) } ?? false

        let budgets = SimulatedDevices.Budgets(
            priority10PerHour: configuration.priority10BudgetPerHour,
            frequentPriority10PerHour: configuration.frequentPriority10BudgetPerHour,
            startsPerHour: configuration.startBudgetPerHour)
        let entry = state.withLock { state -> PushEntry in
            var refusal = early
            if refusal == nil, let providerToken {
                do throws(Refusal) {
                    try state.connections[connection, default: ConnectionState()].use(
                        providerToken, now: now, interval: configuration.providerTokenRefreshInterval)
                } catch {
                    refusal = error
                }
            }
            if refusal == nil { refusal = late }
            let known = deviceToken.flatMap { state.devices.tokens[$0] }
            if refusal == nil, deviceToken != nil, let headers {
                refusal = state.devices.refusal(for: known, pushType: headers.pushType, now: now)
            }
            var injected: FaultInjection.FailStatus?
            let faults = configuration.faultInjection
            if refusal == nil, faults.failRate > 0,
                Double.random(in: 0..<1, using: &state.random) < faults.failRate
            {
                injected = faults.failStatus
                refusal = Refusal(faults.failStatus.reason, "injected fault (fail rate \(faults.failRate))")
            }
            var delivery = SimulatedDevices.Delivery(outcome: .rejected, tokenKind: known?.kind)
            if refusal == nil, let deviceToken, let headers {
                delivery = state.devices.deliver(
                    to: deviceToken, known: known, pushType: headers.pushType, priority: headers.priority,
                    topic: headers.topic, aps: aps, budgets: budgets, now: now, random: &state.random)
            }

            let apnsID = echoesID ? PushEntry.AnswerID.echoed : .minted(MintedMessageID(drawingFrom: &state.random))
            var uniqueID: MintedMessageID?
            if refusal == nil, configuration.environment == .sandbox {
                uniqueID = MintedMessageID(drawingFrom: &state.random)
            }
            state.sequence += 1
            let entry = PushEntry(
                sequence: state.sequence,
                receivedAt: now,
                connection: connection,
                request: packed,
                tokenKind: delivery.tokenKind,
                status: refusal?.status ?? 200,
                refusal: refusal,
                apnsID: apnsID,
                apnsUniqueID: uniqueID,
                injectedFault: injected != nil,
                deviceOutcome: delivery.outcome,
                deviceNote: delivery.note,
                activityID: delivery.activityID,
                warnings: warnings)
            state.history.append(entry)
            return entry
        }
        if let observer { observer(entry.record(of: request)) }
        return Self.response(for: entry, echoing: fields.id)
    }

    /// Answers one request of the channel management API (iOS 18 broadcast
    /// channels: `POST|GET|DELETE /1/apps/{bundle_id}/channels`, `GET
    /// /1/apps/{bundle_id}/all-channels`), which APNs serves on hosts of their own,
    /// with the same provider-token checks as pushes. Every answer carries
    /// `apns-request-id` (the request's, when it is a UUID); a refusal is Apple's
    /// status and `{"reason": …}`.
    public func handleChannelRequest(_ request: SimulatorRequest, connection: ConnectionID) -> SimulatorResponse {
        let now = clock.now()
        let fields = HeaderFields(request.fields)
        let given = request.fields.first(APNsHeaderName.requestID).flatMap { APNsMessageID.isUUID($0) ? $0.lowercased() : nil }
        var route: (bundleID: String, operation: SimulatedChannels.Operation)?
        var providerToken: String?
        var early: Refusal?
        do throws(Refusal) {
            route = try SimulatedChannels.route(method: request.method, path: request.path)
            try RequestChecks.checkNoRepeats(fields)
            providerToken = try verifier.check(authorizationIn: fields, now: now).token
            try SimulatedChannels.checkTopic(route!.bundleID)
            guard configuration.broadcastEnabled else {
                throw Refusal(.featureNotEnabled, "broadcast is not enabled for this app (the simulator runs with it off)")
            }
        } catch {
            early = error
        }
        let channelID = request.fields.first(APNsHeaderName.channelID)
        let limit = configuration.channelLimit
        return state.withLock { state -> SimulatorResponse in
            let requestID = given ?? MintedMessageID(drawingFrom: &state.random).text.lowercased()
            var headers: [(name: String, value: String)] = [(APNsHeaderName.requestID, requestID)]
            do throws(Refusal) {
                if let early { throw early }
                guard let route, let providerToken else { throw Refusal(.badPath, "unreachable") }
                try state.connections[connection, default: ConnectionState()].use(
                    providerToken, now: now, interval: configuration.providerTokenRefreshInterval)
                switch route.operation {
                case .create:
                    let channel = try state.devices.channels.create(
                        bundleID: route.bundleID, body: request.body, limit: limit, now: now, random: &state.random)
                    headers.append((APNsHeaderName.channelID, channel.id))
                    return SimulatorResponse(status: 201, headers: headers, body: Data(), reason: nil, sequence: 0)
                case .read:
                    let channel = try state.devices.channels.channel(channelID, bundleID: route.bundleID)
                    let body: JSONValue = [
                        "message-storage-policy": .integer(Int64(channel.messageStoragePolicy)), "push-type": "LiveActivity",
                    ]
                    headers.append((APNsHeaderName.contentType, "application/json"))
                    return SimulatorResponse(
                        status: 200, headers: headers, body: Data(body.jsonText.utf8), reason: nil, sequence: 0)
                case .delete:
                    let channel = try state.devices.channels.channel(channelID, bundleID: route.bundleID)
                    state.devices.channels.delete(channel)
                    return SimulatorResponse(status: 204, headers: headers, body: Data(), reason: nil, sequence: 0)
                case .list:
                    let body: JSONValue = ["channels": .array(state.devices.channels.ids(bundleID: route.bundleID).map(JSONValue.string))]
                    headers.append((APNsHeaderName.contentType, "application/json"))
                    return SimulatorResponse(
                        status: 200, headers: headers, body: Data(body.jsonText.utf8), reason: nil, sequence: 0)
                }
            } catch {
                headers.append((APNsHeaderName.contentType, "application/json"))
                let body = Data(("{\"reason\":" + JSONText.quoted(error.reason.rawValue) + "}").utf8)
                return SimulatorResponse(status: error.status, headers: headers, body: body, reason: error.reason, sequence: 0)
            }
        }
    }

    /// Answers a broadcast (`POST /4/broadcasts/apps/{bundle_id}`, iOS 18): checked
    /// as APNs checks it (the path and method, the provider token, the channel in
    /// `apns-channel-id`, `apns-push-type: liveactivity`, `apns-priority`,
    /// `apns-expiration`, which must be 0 on a channel that stores no message, and a
    /// payload of at most 5,120 bytes), then handed to every activity subscribed to
    /// the channel, each applying it by the rules of a token push. The record says
    /// what each subscriber did (`deliveries`).
    func handleBroadcast(_ request: SimulatorRequest, connection: ConnectionID) -> SimulatorResponse {
        let now = clock.now()
        let fields = HeaderFields(request.fields)
        let packed = PackedRequest(request)
        let bundleID = String(request.path.dropFirst(APNsPath.broadcastPrefix.count))
        var providerToken: String?
        var warnings: [String] = []
        var early: Refusal?
        var aps = APSFields()
        var expiration: Int64 = 0
        do throws(Refusal) {
            guard request.method == "POST" else {
                throw Refusal(.methodNotAllowed, "APNs takes only POST, not \(request.method)")
            }
            guard !bundleID.isEmpty, !bundleID.contains("/") else {
                throw Refusal(.badPath, "broadcasts go to /4/broadcasts/apps/<bundle id>, not \(request.path)")
            }
            try RequestChecks.checkNoRepeats(fields)
            let accepted = try verifier.check(authorizationIn: fields, now: now)
            providerToken = accepted.token
            warnings += accepted.warnings
            try SimulatedChannels.checkTopic(bundleID)
            guard configuration.broadcastEnabled else {
                throw Refusal(.featureNotEnabled, "broadcast is not enabled for this app (the simulator runs with it off)")
            }
            guard let pushType = fields.pushType else {
                throw Refusal(.missingPushType, "a broadcast needs apns-push-type: liveactivity")
            }
            guard pushType.lowercased() == APNsPushType.liveactivity.rawValue else {
                throw Refusal(.invalidPushType, "a broadcast is a liveactivity push, not \(pushType)")
            }
            guard let text = fields.priority, APNsPriority(headerValue: text) != nil else {
                throw Refusal(.badPriority, "a broadcast needs apns-priority 10, 5 or 1")
            }
            guard let text = fields.expiration, let seconds = Int64(text), seconds >= 0 else {
                throw Refusal(.badExpirationDate, "a broadcast needs apns-expiration: Unix seconds, or 0")
            }
            expiration = seconds
            if let id = fields.id, !APNsMessageID.isUUID(id) {
                throw Refusal(.badMessageId, "apns-id must be a UUID")
            }
            guard !request.body.isEmpty else { throw Refusal(.payloadEmpty, "the body is empty") }
            guard request.body.count <= APNsLimits.maximumBroadcastPayloadBytes else {
                throw Refusal(
                    .payloadTooLarge,
                    "the body is \(request.body.count) bytes; a broadcast may carry \(APNsLimits.maximumBroadcastPayloadBytes)")
            }
            guard case .object(let object)? = try? JSONValue(parsing: request.body, repeatedKeys: .lastWins),
                case .object(let members)? = object["aps"]
            else { throw Refusal(.payloadEmpty, "the payload is not a JSON object with an aps dictionary") }
            aps = APSFields(members)
        } catch {
            early = error
        }
        let channelID = request.fields.first(APNsHeaderName.channelID)
        let requestID = request.fields.first(APNsHeaderName.requestID).flatMap { APNsMessageID.isUUID($0) ? $0.lowercased() : nil }
        let (entry, requestIDText) = state.withLock { state -> (PushEntry, String) in
            var refusal = early
            var deliveries: [BroadcastDelivery] = []
            if refusal == nil, let providerToken {
                do throws(Refusal) {
                    try state.connections[connection, default: ConnectionState()].use(
                        providerToken, now: now, interval: configuration.providerTokenRefreshInterval)
                    let channel = try state.devices.channels.channel(channelID, bundleID: bundleID)
                    if channel.messageStoragePolicy == 0, expiration != 0 {
                        throw Refusal(
                            .badExpirationDate, "a channel that stores no message takes only apns-expiration: 0")
                    }
                    if let event = aps.event?.stringValue, event == "update" || event == "end" {
                        state.devices.channels.store(event, aps: aps, on: channel, expiration: expiration, now: now)
                    }
                    deliveries = state.devices.broadcast(aps, on: channel, now: now).map {
                        BroadcastDelivery(activityID: $0.activityID, outcome: $0.delivery.outcome, note: $0.delivery.note)
                    }
                } catch {
                    refusal = error
                }
            }
            let requestIDText = requestID ?? MintedMessageID(drawingFrom: &state.random).text.lowercased()
            state.sequence += 1
            var entry = PushEntry(
                sequence: state.sequence,
                receivedAt: now,
                connection: connection,
                request: packed,
                tokenKind: nil,
                status: refusal?.status ?? 200,
                refusal: refusal,
                apnsID: .minted(MintedMessageID(drawingFrom: &state.random)),
                apnsUniqueID: refusal == nil ? MintedMessageID(drawingFrom: &state.random) : nil,
                injectedFault: false,
                deviceOutcome: refusal == nil ? .broadcast : .rejected,
                deviceNote: refusal == nil ? Self.summary(deliveries) : nil,
                activityID: nil,
                warnings: warnings)
            entry.deliveries = refusal == nil ? deliveries : nil
            state.history.append(entry)
            return (entry, requestIDText)
        }
        if let observer { observer(entry.record(of: request)) }
        var headers: [(name: String, value: String)] = [(APNsHeaderName.requestID, requestIDText)]
        if let unique = entry.apnsUniqueID { headers.append((APNsHeaderName.uniqueID, unique.text)) }
        var body = Data()
        if let reason = entry.refusal?.reason {
            headers.append((APNsHeaderName.contentType, "application/json"))
            body = Data(("{\"reason\":" + JSONText.quoted(reason.rawValue) + "}").utf8)
        }
        return SimulatorResponse(
            status: entry.status, headers: headers, body: body, reason: entry.refusal?.reason, sequence: entry.sequence)
    }

    /// A broadcast's note: how many subscribers it reached, and what they did.
    private static func summary(_ deliveries: [BroadcastDelivery]) -> String {
        guard !deliveries.isEmpty else { return "the channel has no subscriber" }
        var counts: [DeviceOutcome: Int] = [:]
        for delivery in deliveries { counts[delivery.outcome, default: 0] += 1 }
        let parts = DeviceOutcome.allCases.compactMap { outcome in counts[outcome].map { "\($0) \(outcome.rawValue)" } }
        return "\(deliveries.count) subscriber(s): " + parts.joined(separator: ", ")
    }

    /// A simulated device subscribes to broadcast channel `channelID` (Apple's id):
    /// the app started an activity on it with `pushType: .channel(id)`. `token`
    /// names the device for the record. The activity is given the channel's stored
    /// message, if one is kept. A channel that does not exist is refused, as iOS
    /// fails to start the activity.
    public func subscribe(channelID: String, token: String) throws(SimulatorError) -> SimulatedActivity {
        let now = clock.now()
        return try state.withLock { state throws(SimulatorError) -> SimulatedActivity in
            try state.devices.subscribe(channelID: channelID, token: token, now: now, random: &state.random)
        }
    }

    /// Every broadcast channel, oldest first within each app.
    public func channels() -> [SimulatedChannel] {
        state.withLock { $0.devices.channels.all }
    }

    /// Deletes the channel `id` as its owner would through the management API
    /// (its subscribers keep their activities; broadcasts to it are refused with
    /// ChannelNotRegistered). Answers whether there was one.
    @discardableResult
    public func deleteChannel(id: String) -> Bool {
        state.withLock { state in
            guard let channel = state.devices.channels.all.first(where: { $0.id == id }) else { return false }
            state.devices.channels.delete(channel)
            return true
        }
    }

    /// Forgets a connection that closed.
    public func connectionClosed(_ id: ConnectionID) {
        _ = state.withLock { $0.connections.removeValue(forKey: id) }
    }

    /// Whether a valid provider token was ever used on the connection. Until then the
    /// transport allows one stream at a time on it, as APNs does.
    public func isAuthenticated(_ id: ConnectionID) -> Bool {
        state.withLock { $0.connections[id]?.authenticated ?? false }
    }

    // MARK: - Inspection

    /// The recorded pushes whose sequence is above `sequence` (all of them by
    /// default), oldest first; at most ``SimulatorConfiguration/pushHistoryLimit``.
    public func pushes(after sequence: Int = 0) -> [PushRecord] {
        // The records are built outside the lock, so that reading a full history
        // does not hold up the pushes arriving meanwhile.
        state.withLock { $0.history.entries(after: sequence) }.map { $0.record() }
    }

    /// Every simulated Live Activity, in the order they started, as of now.
    public func activities() -> [SimulatedActivity] {
        let now = clock.now()
        return state.withLock { $0.devices.allActivities(at: now) }
    }

    /// The simulated Live Activity `id`, as of now.
    public func activity(id: String) -> SimulatedActivity? {
        let now = clock.now()
        return state.withLock { $0.devices.activity(id: id, at: now) }
    }

    /// Every token the simulated devices hold.
    public func tokens() -> [RegisteredToken] {
        state.withLock { $0.devices.tokens.values.sorted { ($0.registeredAt, $0.token) < ($1.registeredAt, $1.token) } }
    }

    /// Registers a token as the simulated device would hand it out. Registering a
    /// known token again with the same kind changes nothing but its environment; with
    /// another kind it is refused. An update token stands for an activity the app
    /// started on the device: a simulated activity is created for it.
    @discardableResult
    public func registerToken(
        _ token: String, kind: PushTokenKind, environment: APNsEnvironment? = nil, frequentUpdates: Bool? = nil
    ) throws(SimulatorError) -> RegisteredToken {
        do {
            try PushToken.validate(token)
        } catch {
            throw SimulatorError(.malformedToken, error.description)
        }
        let now = clock.now()
        let environment = environment ?? configuration.environment
        return try state.withLock { state throws(SimulatorError) -> RegisteredToken in
            try state.devices.register(
                token.lowercased(), kind: kind, environment: environment, frequentUpdates: frequentUpdates, now: now,
                random: &state.random)
        }
    }

    /// Registers the app's activity type under its `attributes-type` (for
    /// expo-widgets, `LiveActivityAttributes`): from now on the simulated device drops
    /// content it could not decode into it, and says why.
    public func registerSchema(_ schema: ActivityTypeSchema, attributesType: String) {
        state.withLock { $0.devices.schemas[attributesType] = schema }
    }

    /// The registered activity types, by `attributes-type`.
    public func schemas() -> [String: ActivityTypeSchema] {
        state.withLock { $0.devices.schemas }
    }

    /// Trusts another signing key from now on (replacing one with the same key id),
    /// as a developer adding a key to their account would.
    public func trust(_ key: TrustedKey) {
        verifier.trust(key)
    }

    /// Forgets every push, token and activity, and each connection's provider token
    /// history (so that a test may start with a fresh token on an open connection).
    /// Open connections stay authenticated.
    public func reset() {
        state.withLock { state in
            state.devices.removeAll()
            state.history.removeAll()
            state.sequence = 0
            for id in state.connections.keys {
                state.connections[id]?.token = nil
                state.connections[id]?.tokenFirstUsed = nil
            }
        }
    }

    // MARK: - Helpers

    /// The body of each refusal without a timestamp, made once: `{"reason":"…"}`.
    private static let refusalBodies: [APNsReason: Data] = Dictionary(
        uniqueKeysWithValues: APNsReason.allKnown.map { ($0, Data(("{\"reason\":" + JSONText.quoted($0.rawValue) + "}").utf8)) })

    /// The answer `entry` records; `requestID` is the request's `apns-id`, for an
    /// answer that echoes it.
    private static func response(for entry: PushEntry, echoing requestID: String?) -> SimulatorResponse {
        let apnsID: String
        switch entry.apnsID {
        case .echoed:
            // Set only for a request whose first `apns-id` is a UUID.
            apnsID = requestID ?? ""
        case .minted(let id): apnsID = id.text
        }
        var headers: [(name: String, value: String)] = []
        headers.reserveCapacity(3)
        headers.append((APNsHeaderName.id, apnsID))
        if let unique = entry.apnsUniqueID { headers.append((APNsHeaderName.uniqueID, unique.text)) }
        var body = Data()
        let reason = entry.refusal?.reason
        if let reason {
            if let timestamp = entry.refusal?.timestampMilliseconds {
                body = Data(("{\"reason\":" + JSONText.quoted(reason.rawValue) + ",\"timestamp\":\(timestamp)}").utf8)
            } else {
                body = Self.refusalBodies[reason] ?? Data(("{\"reason\":" + JSONText.quoted(reason.rawValue) + "}").utf8)
            }
            headers.append((APNsHeaderName.contentType, "application/json"))
        }
        return SimulatorResponse(status: entry.status, headers: headers, body: body, reason: reason, sequence: entry.sequence)
    }
}
