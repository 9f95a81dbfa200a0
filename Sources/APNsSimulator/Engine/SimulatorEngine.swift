import Foundation
public import IsletCore
import Synchronization

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
public final class SimulatorEngine: Sendable {
    /// The configuration the engine was made with.
    public let configuration: SimulatorConfiguration

    private let clock: any WallClock
    private let verifier: ProviderTokenVerifier
    private let observer: (@Sendable (PushRecord) -> Void)?
    private let state: Mutex<State>

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
        self.state = Mutex(State(
            random: random,
            devices: SimulatedDevices(environment: configuration.environment),
            history: PushHistory(capacity: configuration.pushHistoryLimit)))
    }

    // MARK: - Requests

    /// Answers one request that arrived on `connection`, and records it.
    public func handle(_ request: SimulatorRequest, connection: ConnectionID) -> SimulatorResponse {
        let now = clock.now()
        let parsedBody = request.body.isEmpty ? nil : try? JSONValue(parsing: request.body)

        // Checks that need no shared state; the first failure wins.
        var token: String?
        var fields: [String: String] = [:]
        var providerToken: String?
        var early: Refusal?
        do throws(Refusal) {
            token = try RequestChecks.route(request)
            fields = try RequestChecks.headerFields(request)
            let bearer = try RequestChecks.bearerToken(fields)
            try verifier.check(bearer, now: now)
            providerToken = bearer
        } catch {
            early = error
        }
        // Later checks, computed now and answered only if the connection accepts the
        // provider token.
        var headers: PushHeaders?
        var aps: [String: JSONValue] = [:]
        var late: Refusal?
        if early == nil {
            do throws(Refusal) {
                let checked = try RequestChecks.apnsHeaders(fields)
                aps = try RequestChecks.payload(request.body, parsed: parsedBody, pushType: checked.pushType)
                headers = checked
            } catch {
                late = error
            }
        }
        let requestID = fields[APNsHeaderName.id] ?? request.headers.first { $0.name == APNsHeaderName.id }?.value
        let echoedID = requestID.flatMap { APNsMessageID.isUUID($0) ? $0 : nil }
        let deviceToken = token?.lowercased()
        let recordedHeaders = Self.recordedHeaders(request.headers)
        let pushType = fields[APNsHeaderName.pushType] ?? request.headers.first { $0.name == APNsHeaderName.pushType }?.value

        let (response, record) = state.withLock { state -> (SimulatorResponse, PushRecord) in
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
            if refusal == nil, let deviceToken, let headers {
                refusal = state.devices.refusal(for: deviceToken, pushType: headers.pushType, now: now)
            }
            var injected: FaultInjection.FailStatus?
            let faults = configuration.faultInjection
            if refusal == nil, faults.failRate > 0,
                Double.random(in: 0..<1, using: &state.random) < faults.failRate
            {
                injected = faults.failStatus
                refusal = Refusal(faults.failStatus.reason, "injected fault (fail rate \(faults.failRate))")
            }
            var delivery = SimulatedDevices.Delivery(outcome: .rejected)
            if refusal == nil, let deviceToken, let headers {
                delivery = state.devices.deliver(
                    to: deviceToken, pushType: headers.pushType, aps: aps, now: now, random: &state.random)
            }

            let apnsID = echoedID ?? APNsMessageID.make(using: &state.random)
            var uniqueID: String?
            if refusal == nil, configuration.environment == .sandbox {
                uniqueID = APNsMessageID.make(using: &state.random)
            }
            state.sequence += 1
            let record = PushRecord(
                sequence: state.sequence,
                receivedAt: now,
                connection: connection,
                method: request.method,
                path: request.path,
                token: token ?? Self.pathToken(request.path),
                tokenKind: deviceToken.flatMap { state.devices.kind(of: $0) },
                pushType: pushType,
                event: parsedBody?["aps"]?["event"]?.stringValue,
                headers: recordedHeaders,
                payload: parsedBody,
                payloadBytes: request.body.count,
                answer: PushRecord.Answer(
                    status: refusal?.status ?? 200,
                    reason: refusal?.reason,
                    apnsID: apnsID,
                    apnsUniqueID: uniqueID,
                    timestamp: refusal?.timestampMilliseconds,
                    note: refusal?.note),
                injectedFault: injected != nil,
                deviceOutcome: delivery.outcome,
                deviceNote: delivery.note,
                activityID: delivery.activityID)
            state.history.append(record)
            return (Self.response(for: record), record)
        }
        observer?(record)
        return response
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
        state.withLock { $0.history.records(after: sequence) }
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
        _ token: String, kind: PushTokenKind, environment: APNsEnvironment? = nil
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
                token.lowercased(), kind: kind, environment: environment, now: now, random: &state.random)
        }
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

    private static func response(for record: PushRecord) -> SimulatorResponse {
        var headers: [(name: String, value: String)] = [(APNsHeaderName.id, record.answer.apnsID)]
        if let unique = record.answer.apnsUniqueID { headers.append((APNsHeaderName.uniqueID, unique)) }
        var body = Data()
        if let reason = record.answer.reason {
            var text = "{\"reason\":" + JSONText.quoted(reason.rawValue)
            if let timestamp = record.answer.timestamp { text += ",\"timestamp\":\(timestamp)" }
            body = Data((text + "}").utf8)
            headers.append((APNsHeaderName.contentType, "application/json"))
        }
        return SimulatorResponse(
            status: record.answer.status, headers: headers, body: body, reason: record.answer.reason,
            sequence: record.sequence)
    }

    /// The request headers for the record: repeated names joined, the provider token
    /// shortened.
    private static func recordedHeaders(_ headers: [(name: String, value: String)]) -> [String: String] {
        var out = [String: String](minimumCapacity: headers.count)
        for (name, value) in headers {
            let shown = name == APNsHeaderName.authorization ? redactAuthorization(value) : value
            if let previous = out[name] {
                out[name] = previous + ", " + shown
            } else {
                out[name] = shown
            }
        }
        return out
    }

    /// `bearer eyJhbG…(183)`: the scheme, then the token shortened as
    /// ``Redaction`` does, counting bytes (a JWT is ASCII) to stay cheap on the hot
    /// path.
    private static func redactAuthorization(_ value: String) -> String {
        guard let space = value.utf8.firstIndex(of: UInt8(ascii: " ")) else { return "…(\(value.utf8.count))" }
        let token = value.utf8[value.utf8.index(after: space)...]
        let visible = Redaction.visiblePrefix
        guard token.count >= visible * 2 else { return "\(value[..<space]) …(\(token.count))" }
        let prefix = String(decoding: token.prefix(visible), as: UTF8.self)
        return "\(value[..<space]) \(prefix)…(\(token.count))"
    }

    /// The token part of a device path that failed its checks, for the record.
    private static func pathToken(_ path: String) -> String? {
        guard path.hasPrefix(APNsPath.devicePrefix), path.count > APNsPath.devicePrefix.count else { return nil }
        return String(path.dropFirst(APNsPath.devicePrefix.count))
    }
}
