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
                    to: deviceToken, known: known, pushType: headers.pushType, priority: headers.priority, aps: aps,
                    budgets: budgets, now: now, random: &state.random)
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
