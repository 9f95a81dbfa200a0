public import Foundation
public import IsletCore
public import IsletCrypto
import IsletSync

/// A service account the FCM simulator trusts: its email, its project and the
/// public half of its key.
public struct FCMTrustedAccount: Sendable {
    /// `client_email`.
    public var clientEmail: String
    /// The Firebase project it sends for.
    public var projectID: String
    /// The public half of its RSA key.
    public var publicKey: RSA.VerifyingKey

    /// Creates a trusted account.
    public init(clientEmail: String, projectID: String, publicKey: RSA.VerifyingKey) {
        self.clientEmail = clientEmail
        self.projectID = projectID
        self.publicKey = publicKey
    }
}

/// A fault the simulator answers the next sends with, as FCM words it.
public enum FCMFault: String, Sendable, Hashable, CaseIterable {
    /// 404 `UNREGISTERED`: the app was uninstalled, the token is dead.
    case unregistered = "UNREGISTERED"
    /// 429 `QUOTA_EXCEEDED`, with `Retry-After`.
    case quotaExceeded = "QUOTA_EXCEEDED"
    /// 503 `UNAVAILABLE`, with `Retry-After`.
    case unavailable = "UNAVAILABLE"
    /// 500 `INTERNAL`.
    case internalError = "INTERNAL"
    /// 403 `SENDER_ID_MISMATCH`: the token belongs to another project.
    case senderIDMismatch = "SENDER_ID_MISMATCH"
    /// 401 `THIRD_PARTY_AUTH_ERROR`: the APNs or web push credentials behind FCM failed.
    case thirdPartyAuthError = "THIRD_PARTY_AUTH_ERROR"

    var status: Int {
        switch self {
        case .unregistered: 404
        case .quotaExceeded: 429
        case .unavailable: 503
        case .internalError: 500
        case .senderIDMismatch: 403
        case .thirdPartyAuthError: 401
        }
    }

    var apiStatus: String {
        switch self {
        case .unregistered: "NOT_FOUND"
        case .quotaExceeded: "RESOURCE_EXHAUSTED"
        case .unavailable: "UNAVAILABLE"
        case .internalError: "INTERNAL"
        case .senderIDMismatch: "PERMISSION_DENIED"
        case .thirdPartyAuthError: "UNAUTHENTICATED"
        }
    }
}

/// One Live Update an Android app shows for an activity, as built from the data
/// messages it received.
public struct SimulatedAndroidActivity: Sendable, Hashable {
    /// The activity's id (`islet_activity_id`).
    public var activityID: String
    /// Its type.
    public var activityType: String
    /// Running, or ended.
    public var ended: Bool
    /// The content state, parsed from `content_state`.
    public var contentState: JSONValue?
    /// The attributes, from the start.
    public var attributes: JSONValue?
    /// The newest `timestamp` applied.
    public var lastTimestamp: Int64
    /// Messages applied.
    public var updates: Int
}

/// A simulated Android device: its registration token, its project, and the
/// activities its app shows.
public struct SimulatedAndroidDevice: Sendable, Hashable {
    /// The registration token.
    public var token: String
    /// The project the token belongs to.
    public var projectID: String
    /// The activities, by id.
    public var activities: [String: SimulatedAndroidActivity] = [:]
}

/// What the simulator did with one send.
public struct FCMRecord: Sendable {
    /// Its number, from 1 (again from 1 after a reset).
    public var sequence: Int
    /// The status answered.
    public var status: Int
    /// The error code, when refused.
    public var errorCode: String?
    /// The device token.
    public var token: String?
    /// The data, as sent.
    public var data: [String: String]
    /// The Android options, as sent.
    public var android: JSONValue?
    /// What the device did: applied, or why it dropped the message.
    public var deviceNote: String?

    /// One line for a console: number, status, error code, the token shortened,
    /// what the device did.
    public var summaryLine: String {
        var line = "#\(sequence) \(status)"
        if let errorCode { line += " \(errorCode)" }
        if let event = data["islet_event"] { line += " \(event)" }
        line += " " + (token.map { Redaction.redact($0) } ?? "-")
        if let deviceNote { line += " → \(deviceNote)" }
        return line
    }
}

/// FCM's HTTP v1 API as a pure engine: the OAuth token endpoint (an RS256 assertion
/// of a trusted service account, checked, for a bearer token) and `messages:send`
/// (the bearer token, the project, the message's shape, strings-only data, the
/// 4,096-byte limit), with simulated Android devices applying each data message in
/// order (an older `timestamp` is dropped) and faults scripted for the next sends.
/// No I/O: time comes from the clock, randomness from its source.
public final class FCMSimulatorEngine: Sendable {
    private struct Issued {
        var account: FCMTrustedAccount
        var expiresAt: Date
    }

    private struct State {
        var accounts: [String: FCMTrustedAccount] = [:]
        var issued: [String: Issued] = [:]
        var devices: [String: SimulatedAndroidDevice] = [:]
        var unregistered: Set<String> = []
        var faults: [(FCMFault, retryAfter: Int?)] = []
        var records: [FCMRecord] = []
        var random: any RandomSource
    }

    private let clock: any WallClock
    private let state: Lock<State>
    private let observer: (@Sendable (FCMRecord) -> Void)?
    /// How long an access token lives.
    public let tokenLifetime: TimeInterval = 3600

    /// An engine on `clock`, drawing tokens from `random`; `observer` sees every
    /// send once answered (the console lines of `islet sim --fcm`).
    public init(
        clock: any WallClock = SystemWallClock(), random: some RandomSource = SystemRandomSource(),
        observer: (@Sendable (FCMRecord) -> Void)? = nil
    ) {
        self.clock = clock
        self.state = Lock(State(random: random))
        self.observer = observer
    }

    /// Trusts `account`'s assertions.
    public func trust(_ account: FCMTrustedAccount) {
        state.withLock { $0.accounts[account.clientEmail] = account }
    }

    /// Scripts the next `count` sends to answer `fault` (with `Retry-After` when given).
    public func inject(_ fault: FCMFault, count: Int = 1, retryAfter: Int? = nil) {
        state.withLock { $0.faults += Array(repeating: (fault, retryAfter), count: count) }
    }

    /// Marks `token` dead: sends to it answer `UNREGISTERED` (the app was removed).
    public func unregister(_ token: String) {
        state.withLock { state in
            state.unregistered.insert(token)
            state.devices[token] = nil
        }
    }

    /// Revokes every access token issued so far, as Google does when an account's key
    /// is rotated or its tokens are revoked: sends carrying one answer 401
    /// `UNAUTHENTICATED`, and the token endpoint issues new ones.
    public func revokeAccessTokens() {
        state.withLock { $0.issued = [:] }
    }

    /// The faults scripted and not answered yet, the next first.
    public func pendingFaults() -> [(fault: FCMFault, retryAfter: Int?)] {
        state.withLock { $0.faults.map { (fault: $0.0, retryAfter: $0.retryAfter) } }
    }

    /// Forgets every send, every simulated device, the unregistered tokens and the
    /// scripted faults. The trusted accounts and the access tokens issued to them
    /// stay: a client keeps its credentials across a reset.
    public func reset() {
        state.withLock { state in
            state.devices = [:]
            state.unregistered = []
            state.faults = []
            state.records = []
        }
    }

    /// The devices, by token.
    public func devices() -> [String: SimulatedAndroidDevice] { state.withLock { $0.devices } }

    /// Every send, oldest first.
    public func records() -> [FCMRecord] { state.withLock { $0.records } }

    // MARK: - The token endpoint

    /// The audience Google's own token endpoint documents, which Google's clients
    /// (google-auth) put in every assertion whatever `token_uri` they post to.
    public static let googleTokenAudience = "https://oauth2.googleapis.com/token"

    /// Answers a POST of `form` to the token endpoint, whose URL is `tokenURI`: the
    /// assertion's `aud` must name it, or be `googleTokenAudience`, which Google's
    /// endpoint takes too.
    public func handleToken(form: Data, tokenURI: String) -> (status: Int, body: String) {
        let fields = Self.formFields(form)
        guard fields["grant_type"] == "urn:ietf:params:oauth:grant-type:jwt-bearer" else {
            return Self.oauthError("unsupported_grant_type", "Invalid grant_type.")
        }
        guard let compact = fields["assertion"], let jwt = try? JSONWebToken(parsing: compact) else {
            return Self.oauthError("invalid_request", "Missing or malformed assertion.")
        }
        guard case .string(let issuer)? = jwt.claims["iss"], let account = state.withLock({ $0.accounts[issuer] }) else {
            return Self.oauthError("invalid_grant", "Invalid grant: account not found")
        }
        guard jwt.isValidRS256(using: account.publicKey) else {
            return Self.oauthError("invalid_grant", "Invalid JWT Signature.")
        }
        guard jwt.claims["aud"] == .string(tokenURI) || jwt.claims["aud"] == .string(Self.googleTokenAudience) else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Failed audience check.")
        }
        guard case .string(let scopes)? = jwt.claims["scope"],
            scopes.split(separator: " ").contains("https://www.googleapis.com/auth/firebase.messaging")
                || scopes.split(separator: " ").contains("https://www.googleapis.com/auth/cloud-platform")
        else {
            return Self.oauthError("invalid_scope", "The assertion does not ask for the firebase.messaging scope.")
        }
        let now = clock.now().timeIntervalSince1970
        guard case .integer(let iat)? = jwt.claims["iat"], case .integer(let exp)? = jwt.claims["exp"],
            exp > iat, exp - iat <= 3600, Double(iat) <= now + 60, Double(exp) > now
        else {
            return Self.oauthError("invalid_grant", "Invalid JWT: Token must be a short-lived token (60 minutes) and in a reasonable timeframe.")
        }
        let token = state.withLock { state -> String in
            let token = "ya29.sim-" + APNsMessageID.make(using: &state.random)
            state.issued[token] = Issued(account: account, expiresAt: clock.now().addingTimeInterval(tokenLifetime))
            return token
        }
        return (200, #"{"access_token":"\#(token)","expires_in":\#(Int(tokenLifetime)),"token_type":"Bearer"}"#)
    }

    // MARK: - messages:send

    /// Answers `POST path` with `authorization` and `body`.
    public func handleSend(
        path: String, authorization: String?, body: Data
    ) -> (status: Int, headers: [(String, String)], body: String) {
        let now = clock.now()
        let parts = path.split(separator: "/").map(String.init)
        guard parts.count == 4, parts[0] == "v1", parts[1] == "projects", parts[3] == "messages:send" else {
            return Self.apiError(404, "NOT_FOUND", "The requested URL was not found.", code: nil)
        }
        let project = parts[2]
        guard let bearer = authorization.flatMap({ $0.hasPrefix("Bearer ") ? String($0.dropFirst(7)) : nil }),
            let issued = state.withLock({ $0.issued[bearer] }), issued.expiresAt > now
        else {
            return Self.apiError(
                401, "UNAUTHENTICATED",
                "Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.",
                code: nil)
        }
        guard issued.account.projectID == project else {
            return Self.apiError(403, "PERMISSION_DENIED", "Permission 'cloudmessaging.messages.create' denied on resource.", code: nil)
        }
        // The message's shape.
        guard let json = try? JSONValue(parsing: body), let message = json["message"]?.objectValue else {
            return Self.invalid("Invalid JSON payload received. Expected a message.", field: "message")
        }
        let allowed: Set<String> = ["token", "data", "android", "notification", "name"]
        if let stray = message.keys.first(where: { !allowed.contains($0) }) {
            return Self.invalid("Invalid JSON payload received. Unknown name \"\(stray)\" at 'message'.", field: "message.\(stray)")
        }
        guard let token = message["token"]?.stringValue, !token.isEmpty else {
            return Self.invalid("Recipient of the message is not set.", field: "message.token")
        }
        var data: [String: String] = [:]
        for (key, value) in message["data"]?.objectValue ?? [:] {
            guard let text = value.stringValue else {
                return Self.invalid("Invalid value at 'message.data[\(key)].value' (TYPE_STRING)", field: "message.data[\(key)].value")
            }
            data[key] = text
        }
        if let android = message["android"] {
            if let priority = android["priority"], priority != "high", priority != "normal", priority != "HIGH", priority != "NORMAL" {
                return Self.invalid("Invalid value at 'message.android.priority'", field: "message.android.priority")
            }
            if let ttl = android["ttl"], !(ttl.stringValue.map(Self.isDuration) ?? false) {
                return Self.invalid("Invalid value at 'message.android.ttl' (type.googleapis.com/google.protobuf.Duration)", field: "message.android.ttl")
            }
        }
        let size = data.reduce(0) { $0 + $1.key.utf8.count + $1.value.utf8.count }
        guard size <= 4096 else {
            return Self.invalid("Request contains an invalid argument: message is too big.", field: "message.data")
        }
        guard Self.isRegistrationToken(token) else {
            return Self.apiError(
                400, "INVALID_ARGUMENT", "The registration token is not a valid FCM registration token", code: "INVALID_ARGUMENT",
                violation: "message.token")
        }
        let (answer, record) = state.withLock { state in
            var record = FCMRecord(
                sequence: state.records.count + 1, status: 200, errorCode: nil, token: token, data: data, android: message["android"])
            let answer = Self.deliver(&record, project: project, now: now, state: &state)
            state.records.append(record)
            return (answer, record)
        }
        observer?(record)
        return answer
    }

    /// Answers a well-formed send to `record.token`: a scripted fault, a dead
    /// token, a token of another project, or the device applying the data.
    private static func deliver(
        _ record: inout FCMRecord, project: String, now: Date, state: inout State
    ) -> (status: Int, headers: [(String, String)], body: String) {
        let token = record.token ?? ""
        if !state.faults.isEmpty {
            let (fault, retryAfter) = state.faults.removeFirst()
            record.status = fault.status
            record.errorCode = fault.rawValue
            var answer = Self.apiError(fault.status, fault.apiStatus, "Scripted \(fault.rawValue).", code: fault.rawValue)
            if let retryAfter { answer.headers.append(("retry-after", String(retryAfter))) }
            return answer
        }
        if state.unregistered.contains(token) {
            record.status = 404
            record.errorCode = "UNREGISTERED"
            return Self.apiError(404, "NOT_FOUND", "Requested entity was not found.", code: "UNREGISTERED")
        }
        var device = state.devices[token] ?? SimulatedAndroidDevice(token: token, projectID: project)
        guard device.projectID == project else {
            record.status = 403
            record.errorCode = "SENDER_ID_MISMATCH"
            return Self.apiError(403, "PERMISSION_DENIED", "SenderId mismatch", code: "SENDER_ID_MISMATCH")
        }
        record.deviceNote = Self.apply(record.data, to: &device)
        state.devices[token] = device
        let name = "projects/\(project)/messages/0:\(Int(now.timeIntervalSince1970 * 1000))%\(state.records.count)"
        return (200, [("content-type", "application/json; charset=UTF-8")], #"{"name":"\#(name)"}"#)
    }

    /// What the device's app does with a data message from Islet: starts, updates
    /// or ends the activity it names, in timestamp order. Answers a note.
    static func apply(_ data: [String: String], to device: inout SimulatedAndroidDevice) -> String {
        guard let event = data["islet_event"], let id = data["islet_activity_id"] else {
            return "dropped: not an Islet activity message (no islet_event or islet_activity_id)"
        }
        let timestamp = data["timestamp"].flatMap { Int64($0) } ?? 0
        let state = data["content_state"].flatMap { try? JSONValue(parsing: Data($0.utf8)) }
        switch event {
        case "start":
            if let existing = device.activities[id], !existing.ended {
                return "dropped: activity \(id) is already running"
            }
            device.activities[id] = SimulatedAndroidActivity(
                activityID: id, activityType: data["islet_activity_type"] ?? "", ended: false, contentState: state,
                attributes: data["attributes"].flatMap { try? JSONValue(parsing: Data($0.utf8)) }, lastTimestamp: timestamp,
                updates: 0)
            return "started \(id)"
        case "update", "end":
            guard var activity = device.activities[id], !activity.ended else {
                return "dropped: no running activity \(id)"
            }
            guard timestamp > activity.lastTimestamp else {
                return "dropped: timestamp \(timestamp) is not newer than \(activity.lastTimestamp)"
            }
            if let state { activity.contentState = state }
            activity.lastTimestamp = timestamp
            activity.updates += 1
            activity.ended = event == "end"
            device.activities[id] = activity
            return event == "end" ? "ended \(id)" : "updated \(id)"
        default:
            return "dropped: islet_event \(event) is not start, update or end"
        }
    }

    // MARK: - Answers

    static func oauthError(_ error: String, _ description: String) -> (status: Int, body: String) {
        (400, JSONValue.object(["error": .string(error), "error_description": .string(description)]).jsonText)
    }

    static func invalid(_ message: String, field: String) -> (status: Int, headers: [(String, String)], body: String) {
        apiError(400, "INVALID_ARGUMENT", message, code: nil, violation: field)
    }

    static func apiError(
        _ status: Int, _ apiStatus: String, _ message: String, code: String?, violation: String? = nil
    ) -> (status: Int, headers: [(String, String)], body: String) {
        var details: [JSONValue] = []
        if let code {
            details.append(["@type": "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode": .string(code)])
        }
        if let violation {
            details.append([
                "@type": "type.googleapis.com/google.rpc.BadRequest",
                "fieldViolations": [["field": .string(violation), "description": .string(message)]],
            ])
        }
        var error: [String: JSONValue] = [
            "code": .integer(Int64(status)), "message": .string(message), "status": .string(apiStatus),
        ]
        if !details.isEmpty { error["details"] = .array(details) }
        return (status, [("content-type", "application/json; charset=UTF-8")], JSONValue.object(["error": .object(error)]).jsonText)
    }

    /// The fields of an `application/x-www-form-urlencoded` body.
    static func formFields(_ body: Data) -> [String: String] {
        var fields: [String: String] = [:]
        for pair in String(decoding: body, as: UTF8.self).split(separator: "&") {
            let parts = pair.split(separator: "=", maxSplits: 1).map(String.init)
            let decode = { (text: String) in text.replacingOccurrences(of: "+", with: " ").removingPercentEncoding ?? text }
            fields[decode(parts[0])] = parts.count > 1 ? decode(parts[1]) : ""
        }
        return fields
    }

    /// `3600s` or `1.5s`: a protobuf Duration in JSON.
    static func isDuration(_ text: String) -> Bool {
        guard text.hasSuffix("s"), let seconds = Double(text.dropLast()) else { return false }
        return seconds >= 0
    }

    /// Whether `token` is shaped as an FCM registration token.
    static func isRegistrationToken(_ token: String) -> Bool {
        token.utf8.count >= 20 && token.utf8.count <= 4096
            && token.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-")
                    || byte == UInt8(ascii: "_") || byte == UInt8(ascii: ":")
            }
    }
}
