public import Foundation
import HTTP2
public import IsletCore
import IsletSync

/// Where the channel management API of iOS 18 broadcast channels is: hosts of their
/// own, one per environment.
public struct APNsChannelConfiguration: Sendable {
    /// `https://api-manage-broadcast.push.apple.com:2196`.
    public var productionURL = URL(string: "https://api-manage-broadcast.push.apple.com:2196")!
    /// `https://api-manage-broadcast.sandbox.push.apple.com:2195`.
    public var sandboxURL = URL(string: "https://api-manage-broadcast.sandbox.push.apple.com:2195")!
    /// PEM certificates to trust instead of the system's roots (for a simulator).
    public var trustRootsPEM: String?

    /// Apple's hosts, the system's roots.
    public init() {}

    /// The endpoint of `environment`.
    public func url(for environment: APNsEnvironment) -> URL {
        environment == .production ? productionURL : sandboxURL
    }
}

/// What APNs answered a channel request it did not honour, or why none came.
public struct APNsChannelError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The HTTP status; `nil` when no answer came.
    public let status: Int?
    /// The `reason` of the answer's body, when it had one.
    public let reason: APNsReason?
    /// What happened, in one sentence.
    public let message: String

    /// Creates an error.
    public init(status: Int?, reason: APNsReason?, message: String) {
        self.status = status
        self.reason = reason
        self.message = message
    }

    public var description: String { message }
}

/// The channel management API of broadcast channels over HTTP/2: create, read,
/// list and delete an app's channels, signed with the app's provider token (the same one its pushes
/// use, from the APNs client's token managers). One connection per host, opened on
/// first use.
public final class APNsChannelClient: Sendable {
    /// The configuration it was made with.
    public let configuration: APNsChannelConfiguration
    private let tokens: @Sendable (APNsSigningKey) -> ProviderTokenManager
    private let clients = Lock<[String: HTTP2Client]>([:])

    /// A client whose provider tokens come from `tokens` (``APNsClient/tokenManager(for:)``).
    public init(
        configuration: APNsChannelConfiguration, tokens: @escaping @Sendable (APNsSigningKey) -> ProviderTokenManager
    ) {
        self.configuration = configuration
        self.tokens = tokens
    }

    /// Creates a channel for `bundleID` in `environment`, storing its most recent
    /// message or none; answers Apple's id (`apns-channel-id`, standard base64).
    public func create(
        bundleID: String, storesMostRecent: Bool, key: APNsSigningKey, environment: APNsEnvironment
    ) async throws(APNsChannelError) -> String {
        let body = Data(#"{"message-storage-policy":\#(storesMostRecent ? 1 : 0),"push-type":"LiveActivity"}"#.utf8)
        let response = try await send(
            method: "POST", path: "/1/apps/\(bundleID)/channels", channelID: nil, body: body, key: key,
            environment: environment)
        guard response.status == 200 || response.status == 201, let id = response.headers[APNsHeaderName.channelID], !id.isEmpty else {
            throw Self.error(response, doing: "create a channel")
        }
        return id
    }

    /// Deletes the channel `channelID` (Apple's id) of `bundleID`. A channel APNs
    /// does not have (ChannelNotRegistered) is gone already: no error.
    public func delete(
        bundleID: String, channelID: String, key: APNsSigningKey, environment: APNsEnvironment
    ) async throws(APNsChannelError) {
        let response = try await send(
            method: "DELETE", path: "/1/apps/\(bundleID)/channels", channelID: channelID, body: Data(), key: key,
            environment: environment)
        let error = Self.error(response, doing: "delete the channel")
        guard response.status == 204 || response.status == 200 || error.reason == .channelNotRegistered else { throw error }
    }

    /// The channel `channelID` (Apple's id) of `bundleID`: whether APNs keeps its
    /// most recent message. A channel APNs does not have is an error naming
    /// ChannelNotRegistered.
    public func read(
        bundleID: String, channelID: String, key: APNsSigningKey, environment: APNsEnvironment
    ) async throws(APNsChannelError) -> (storesMostRecent: Bool, pushType: String) {
        let response = try await send(
            method: "GET", path: "/1/apps/\(bundleID)/channels", channelID: channelID, body: Data(), key: key,
            environment: environment)
        guard response.status == 200, let json = try? JSONValue(parsing: response.body),
            let policy = json["message-storage-policy"]?.int64Value
        else { throw Self.error(response, doing: "read the channel") }
        return (policy == 1, json["push-type"]?.stringValue ?? "")
    }

    /// Every channel of `bundleID` in `environment` (Apple's ids).
    public func list(
        bundleID: String, key: APNsSigningKey, environment: APNsEnvironment
    ) async throws(APNsChannelError) -> [String] {
        let response = try await send(
            method: "GET", path: "/1/apps/\(bundleID)/all-channels", channelID: nil, body: Data(), key: key,
            environment: environment)
        guard response.status == 200, let json = try? JSONValue(parsing: response.body),
            let channels = json["channels"]?.arrayValue
        else { throw Self.error(response, doing: "list the channels") }
        return channels.compactMap(\.stringValue)
    }

    /// Closes the connections.
    public func shutdown() async {
        let all = clients.withLock { clients -> [HTTP2Client] in
            defer { clients.removeAll() }
            return Array(clients.values)
        }
        for client in all { await client.shutdown() }
    }

    private func send(
        method: String, path: String, channelID: String?, body: Data, key: APNsSigningKey, environment: APNsEnvironment
    ) async throws(APNsChannelError) -> HTTP2Response {
        let token: String
        do {
            token = try tokens(key).currentToken()
        } catch {
            throw APNsChannelError(status: nil, reason: nil, message: "the provider token could not be signed: \(error)")
        }
        var headers: [(name: String, value: String)] = [(APNsHeaderName.authorization, "bearer \(token)")]
        if let channelID { headers.append((APNsHeaderName.channelID, channelID)) }
        if !body.isEmpty { headers.append((APNsHeaderName.contentType, "application/json")) }
        let client: HTTP2Client
        do {
            client = try self.client(for: configuration.url(for: environment))
        } catch {
            throw APNsChannelError(status: nil, reason: nil, message: "cannot reach the channel management API: \(error)")
        }
        do {
            return try await client.send(HTTP2Request(method: method, path: path, headers: headers, body: body))
        } catch {
            throw APNsChannelError(status: nil, reason: nil, message: "the channel management API did not answer: \(error)")
        }
    }

    private func client(for url: URL) throws -> HTTP2Client {
        let host = url.host ?? "localhost"
        let port = url.port ?? 443
        let name = "\(host):\(port)"
        return try clients.withLock { clients in
            if let client = clients[name] { return client }
            let tls = TLSClientConfiguration(trustRootsPEM: configuration.trustRootsPEM)
            let client = try HTTP2Client(configuration: HTTP2ClientConfiguration(host: host, port: port, tls: tls))
            clients[name] = client
            return client
        }
    }

    /// The error a response that did not honour the request stands for.
    static func error(_ response: HTTP2Response, doing what: String) -> APNsChannelError {
        let reason = (try? JSONValue(parsing: response.body))?["reason"]?.stringValue.map(APNsReason.init(rawValue:))
        return APNsChannelError(
            status: response.status, reason: reason,
            message: "APNs refused to \(what): \(response.status)\(reason.map { " \($0.rawValue)" } ?? "")")
    }
}
