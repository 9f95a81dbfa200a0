public import Foundation
import HTTP2
public import IsletCore
import IsletSync

/// Where FCM is, and whom to trust for it.
public struct FCMClientConfiguration: Sendable {
    /// FCM's HTTP v1 API (`https://fcm.googleapis.com`).
    public var url = URL(string: Self.endpoint)!
    /// FCM's HTTP v1 endpoint, the default of `url` (a fixed URL, which always parses).
    public static let endpoint = "https://fcm.googleapis.com"
    /// PEM CA certificates trusted for `url` (a simulator); the system's when `nil`.
    public var trustRootsPEM: String?
    /// The most a send waits for its answer.
    public var timeout: Duration = .seconds(10)
    /// The wall clock an answer's `Retry-After` date is read against.
    public var clock: any WallClock = SystemWallClock()
    /// The clock `timeout` is waited on.
    public var timer: any Clock<Duration> = ContinuousClock()

    /// The defaults: Google's FCM.
    public init() {}
}

/// One FCM message: a data message to one registration token, with its Android
/// options.
public struct FCMMessage: Sendable, Hashable {
    /// The device's registration token.
    public var token: String
    /// The data; FCM takes only strings.
    public var data: [String: String]
    /// `high` or `normal`.
    public var priority: String
    /// Seconds FCM keeps it for an offline device.
    public var ttl: Int64
    /// A newer message with the same key replaces this one while it waits.
    public var collapseKey: String?

    /// Creates a message.
    public init(token: String, data: [String: String], priority: String, ttl: Int64, collapseKey: String?) {
        self.token = token
        self.data = data
        self.priority = priority
        self.ttl = ttl
        self.collapseKey = collapseKey
    }

    /// The body of `messages:send`: `{message: {token, data, android: {priority, ttl,
    /// collapse_key}}}`.
    public var body: Data {
        var android: [String: JSONValue] = ["priority": .string(priority), "ttl": .string("\(ttl)s")]
        if let collapseKey { android["collapse_key"] = .string(collapseKey) }
        let message: JSONValue = [
            "message": [
                "token": .string(token), "data": .object(data.mapValues(JSONValue.string)), "android": .object(android),
            ],
        ]
        return Data(message.jsonText.utf8)
    }
}

/// What became of one message: its disposition (`FCMFailurePolicy`), FCM's answer
/// when one came, and why none did.
public struct FCMResult: Sendable {
    /// The transport-neutral disposition.
    public var disposition: TransportDisposition
    /// FCM's answer to the last attempt.
    public var response: FCMResponse?
    /// Why no answer came, or why the message was not sent.
    public var error: String?
    /// Requests made: 1, or 0 when no access token came.
    public var attempts: Int
    /// Why no access token came, when none did (the message was not sent).
    public var tokenFailure: FCMTokenError? = nil
}

/// Sends data messages through FCM's HTTP v1 API over HTTP/2: `POST
/// /v1/projects/{project}/messages:send` with a service account's access token. One
/// connection per FCM host, opened on first use. One attempt per message: what
/// follows (a refused access token replaced and the message sent again at once
/// included) is the delivery policy's to decide.
public final class FCMClient: Sendable {
    /// The configuration it was made with.
    public let configuration: FCMClientConfiguration
    /// The one HTTP/2 client, to `configuration.url`, made at the first send.
    private let connection = Lock<HTTP2Client?>(nil)

    /// A client for `configuration`.
    public init(configuration: FCMClientConfiguration = FCMClientConfiguration()) {
        self.configuration = configuration
    }

    /// Sends `message` for `account`, once, with an access token from `tokens`. A
    /// 401 refusing the token drops it (`FCMAccessTokens.invalidate`), and the
    /// disposition says whether the message may go again at once with a new one
    /// (`FCMFailurePolicy`): the delivery policy sends it again, not the client.
    public func send(_ message: FCMMessage, account: FCMServiceAccount, tokens: FCMAccessTokens) async -> FCMResult {
        let token: String
        do {
            token = try await tokens.token()
        } catch {
            return FCMResult(
                disposition: (error.refusesCredentials ? NoAnswer.credentialsUnusable : .connectionFailed).disposition(), response: nil,
                error: "no access token: \(error.message)", attempts: 0, tokenFailure: error)
        }
        let answer: HTTP2Response
        do {
            let request = HTTP2Request(
                method: "POST", path: "/v1/projects/\(account.projectID)/messages:send",
                headers: [("authorization", "Bearer \(token)"), ("content-type", "application/json")],
                body: message.body)
            guard let answered = try await Self.send(
                request, on: try client(), within: configuration.timeout, timer: configuration.timer)
            else {
                return FCMResult(
                    disposition: NoAnswer.connectionFailed.disposition(), response: nil,
                    error: "FCM did not answer within \(configuration.timeout)", attempts: 1)
            }
            answer = answered
        } catch {
            return FCMResult(
                disposition: NoAnswer.connectionFailed.disposition(), response: nil, error: "FCM did not answer: \(error)", attempts: 1)
        }
        let response = FCMResponse(
            status: answer.status, body: answer.body, retryAfter: answer.headers["retry-after"], now: configuration.clock.now())
        // The access token may have been revoked or expired early: dropped, and
        // whether another may be tried at once is the tokens' to say.
        let replaced = FCMFailurePolicy.refusesAccessToken(response) ? await tokens.invalidate(token) : false
        return FCMResult(
            disposition: FCMFailurePolicy.classify(response, tokenRefreshed: replaced), response: response, error: nil, attempts: 1)
    }

    /// `request`'s answer, or `nil` when none came within `timeout` (the stream is
    /// then cancelled).
    private static func send(
        _ request: HTTP2Request, on client: HTTP2Client, within timeout: Duration, timer: any Clock<Duration>
    ) async throws -> HTTP2Response? {
        try await withThrowingTaskGroup(of: HTTP2Response?.self) { group in
            group.addTask { try await client.send(request) }
            group.addTask {
                try await timer.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
    }

    /// Closes the connections.
    public func shutdown() async {
        let made = connection.withLock { connection -> HTTP2Client? in
            defer { connection = nil }
            return connection
        }
        await made?.shutdown()
    }

    private func client() throws -> HTTP2Client {
        try connection.withLock { connection in
            if let connection { return connection }
            let url = configuration.url
            let tls = TLSClientConfiguration(trustRootsPEM: configuration.trustRootsPEM)
            let made = try HTTP2Client(configuration: HTTP2ClientConfiguration(
                host: url.host ?? "localhost", port: url.port ?? 443, tls: tls))
            connection = made
            return made
        }
    }
}
