import APNs
import Foundation
import IsletCore
import IsletCrypto

/// The flags of `islet send`: one push, built with the payload rules, sent to APNs
/// (or a simulator), with the request and the answer printed.
struct SendCommandLine: Sendable {
    /// The signing key.
    var key: APNsSigningKey
    /// Which APNs.
    var environment: APNsEnvironment
    /// The client configuration (endpoint overrides, CA).
    var client: APNsClientConfiguration
    /// The request to send.
    var request: APNsRequest

    /// Usage text for `islet send --help`.
    static let helpText = """
        Usage: islet send --key AuthKey.p8 --key-id K --team-id T --topic BUNDLE_ID --token HEX
                          --event start|update|end|alert [payload options] [--sandbox | --url URL --ca FILE]
               islet send … --channel ID --event update|end …

        Builds one push with Islet's payload rules, sends it, and prints the request and
        APNs's answer. A broken rule is reported before anything is sent. With --channel
        instead of --token, the update or end is a broadcast (iOS 18) to every phone
        subscribed to that channel (Apple's id, as APNs gave it).

        Payload options:
          --content-state JSON       the full content state (start, update; optional on end)
          --attributes-type NAME     the ActivityAttributes type (start)
          --attributes JSON          the attributes (start)
          --alert-title T --alert-body B   the alert (required on start; alone for --event alert)
          --stale-date DATE          Unix seconds or ISO 8601 (start, update)
          --dismissal-date DATE      Unix seconds or ISO 8601 (end only)
          --relevance-score N
          --timestamp SECONDS        aps.timestamp (default: now)
          --priority 5|10            (default 10; 5 for an update without an alert)
          --apns-id UUID             (default: a fresh one)
          --expiration SECONDS       apns-expiration of a broadcast (default 0: the only value a
                                     channel that stores no message takes)
        Endpoint:
          --sandbox                  api.sandbox.push.apple.com (default: production)
          --url URL                  another endpoint, such as an islet sim
          --ca FILE                  trust this CA (PEM) for --url

        Exit status: 0 delivered, 1 refused by APNs (the reason is printed), 2 not sent
        (a bad flag or a broken payload rule, named), 3 APNs could not be reached
        (connection refused, unknown host, TLS or certificate failure, no answer).
        """

    /// A payload rule the flags broke; nothing was sent.
    struct PayloadRuleBroken: Error, CustomStringConvertible {
        /// The rule and the field.
        let error: PayloadError
        var description: String { "nothing sent, a payload rule is broken: \(error)" }
    }

    /// Reads `arguments`; the push is built (and its rules checked) against `now`.
    /// Throws `ConfigurationError` for a bad flag and `PayloadRuleBroken` for a push
    /// the rules refuse.
    static func parse(_ arguments: [String], now: Date) throws -> SendCommandLine {
        var values: [String: String] = [:]
        var sandbox = false
        var index = 0
        let valued: Set<String> = [
            "--key", "--key-id", "--team-id", "--topic", "--token", "--event", "--content-state", "--attributes-type",
            "--attributes", "--alert-title", "--alert-body", "--stale-date", "--dismissal-date", "--relevance-score",
            "--timestamp", "--priority", "--apns-id", "--url", "--ca", "--channel", "--expiration",
        ]
        while index < arguments.count {
            var flag = arguments[index]
            var inline: String?
            if let equals = flag.firstIndex(of: "="), flag.hasPrefix("--") {
                inline = String(flag[flag.index(after: equals)...])
                flag = String(flag[..<equals])
            }
            index += 1
            if flag == "--sandbox" {
                sandbox = true
                continue
            }
            guard valued.contains(flag) else {
                throw ConfigurationError(.unknownOption, setting: flag, message: "no such option; see islet send --help")
            }
            if let inline {
                values[flag] = inline
            } else {
                guard index < arguments.count else { throw ConfigurationError(.missingValue, setting: flag, message: "a value is required") }
                values[flag] = arguments[index]
                index += 1
            }
        }
        func required(_ flag: String) throws(ConfigurationError) -> String {
            guard let value = values[flag], !value.isEmpty else { throw ConfigurationError(.missingValue, setting: flag, message: "required") }
            return value
        }
        func json(_ flag: String) throws(ConfigurationError) -> JSONValue? {
            guard let text = values[flag] else { return nil }
            do {
                return try JSONValue(parsing: Data(text.utf8))
            } catch {
                throw ConfigurationError(.invalidValue, setting: flag, message: "not JSON: \(error)")
            }
        }
        func date(_ flag: String) throws(ConfigurationError) -> Date? {
            guard let text = values[flag] else { return nil }
            if let seconds = Double(text) { return Date(timeIntervalSince1970: seconds) }
            if let parsed = try? Date(text, strategy: .iso8601) { return parsed }
            throw ConfigurationError(.invalidValue, setting: flag, message: "\"\(text)\" is neither Unix seconds nor an ISO 8601 date")
        }
        func number(_ flag: String) throws(ConfigurationError) -> Double? {
            guard let text = values[flag] else { return nil }
            guard let value = Double(text) else { throw ConfigurationError(.invalidValue, setting: flag, message: "\"\(text)\" is not a number") }
            return value
        }

        let keyPath = try required("--key")
        guard let pem = FileManager.default.contents(atPath: keyPath) else {
            throw ConfigurationError(.unusable, setting: "--key", message: "cannot read \(keyPath)")
        }
        let privateKey: P256.SigningKey
        do {
            privateKey = try P256.SigningKey(pemRepresentation: String(decoding: pem, as: UTF8.self))
        } catch {
            throw ConfigurationError(.unusable, setting: "--key", message: error.reason)
        }
        let key = APNsSigningKey(keyID: try required("--key-id"), teamID: try required("--team-id"), key: privateKey)
        let topic = try required("--topic")
        let channel = values["--channel"]
        var token = ""
        if let channel {
            guard values["--token"] == nil else {
                throw ConfigurationError(.invalidValue, setting: "--channel", message: "give --channel or --token, not both")
            }
            guard !channel.isEmpty, Data(base64Encoded: channel) != nil else {
                throw ConfigurationError(.invalidValue, setting: "--channel", message: "\"\(channel)\" is not a channel id (base64, as APNs gave it)")
            }
        } else {
            token = try required("--token")
            do {
                try PushToken.validate(token)
            } catch {
                throw ConfigurationError(.invalidValue, setting: "--token", message: error.description)
            }
        }
        let eventText = try required("--event")
        if channel != nil, eventText != "update", eventText != "end" {
            throw ConfigurationError(
                .invalidValue, setting: "--event", message: "a broadcast is an update or an end; it cannot start an activity or be an alert")
        }
        let expiration = try number("--expiration").map { Int64($0) }
        if let expiration, channel == nil || expiration < 0 {
            throw ConfigurationError(.invalidValue, setting: "--expiration", message: "takes Unix seconds from 0, with --channel only")
        }
        var alert: PushAlert?
        if values["--alert-title"] != nil || values["--alert-body"] != nil {
            alert = PushAlert(title: .literal(values["--alert-title"] ?? ""), body: .literal(values["--alert-body"] ?? ""))
        }
        let priority = try number("--priority").map { Int($0) }
        let contentState = try json("--content-state")
        let attributes = try json("--attributes")
        let timestamp = try number("--timestamp").map { Int64($0) }
        let staleDate = try date("--stale-date")
        let dismissalDate = try date("--dismissal-date")
        let relevanceScore = try number("--relevance-score")
        let built: BuiltPush
        let tokenKind: PushTokenKind
        do throws(PayloadError) {
            if eventText == "alert" {
                var push = AlertPush()
                push.title = values["--alert-title"].map { .literal($0) }
                push.body = values["--alert-body"].map { .literal($0) }
                push.priority = priority
                built = try push.build(bundleID: topic, now: now)
                tokenKind = .device
            } else {
                guard let event = LiveActivityEvent(rawValue: eventText) else {
                    throw PayloadError(.notAllowed, field: "--event", message: "\"\(eventText)\" is not start, update, end or alert")
                }
                let push = LiveActivityPush(
                    event: event, contentState: contentState, attributesType: values["--attributes-type"],
                    attributes: attributes, alert: alert, timestamp: timestamp, staleDate: staleDate,
                    dismissalDate: dismissalDate, relevanceScore: relevanceScore, priority: priority)
                built = try push.build(bundleID: topic, now: now, limit: channel == nil ? nil : .broadcast)
                tokenKind = event.tokenKind
            }
        } catch {
            throw PayloadRuleBroken(error: error)
        }
        // The client makes one attempt per push: what `islet send` prints is APNs's
        // answer to exactly one request.
        var client = APNsClientConfiguration()
        if let url = values["--url"] {
            guard let parsed = URL(string: url), parsed.host != nil else {
                throw ConfigurationError(.invalidValue, setting: "--url", message: "\"\(url)\" is not a URL with a host")
            }
            client.productionURL = parsed
            client.sandboxURL = parsed
        }
        if let caPath = values["--ca"] {
            guard let ca = FileManager.default.contents(atPath: caPath) else {
                throw ConfigurationError(.unusable, setting: "--ca", message: "cannot read \(caPath)")
            }
            client.trustRootsPEM = String(decoding: ca, as: UTF8.self)
        }
        let apnsID = values["--apns-id"]
        if let apnsID, !APNsMessageID.isUUID(apnsID) {
            throw ConfigurationError(.invalidValue, setting: "--apns-id", message: "\"\(apnsID)\" is not a UUID")
        }
        let request: APNsRequest
        if let channel {
            request = .broadcast(
                channelID: channel, bundleID: topic, priority: built.priority, expiration: expiration ?? 0,
                apnsID: apnsID?.lowercased(), payload: built.payload)
        } else {
            do {
                request = try APNsRequest(built, deviceToken: token.lowercased(), tokenKind: tokenKind, apnsID: apnsID?.lowercased())
            } catch {
                throw PayloadRuleBroken(error: error)
            }
        }
        return SendCommandLine(key: key, environment: sandbox ? .sandbox : .production, client: client, request: request)
    }

    /// The request as it goes on the wire, for people: method, path, headers (the
    /// provider token left out) and the payload.
    var requestDescription: String {
        var lines: [String] = []
        if let channelID = request.channelID {
            lines.append("POST \(client.broadcastURL(for: environment).absoluteString)\(APNsPath.broadcastPrefix)\(request.bundleID)")
            lines.append("apns-channel-id: \(channelID)")
            lines.append("apns-push-type: \(request.pushType.rawValue)")
        } else {
            lines.append("POST \(client.url(for: environment).absoluteString)\(APNsPath.device(request.deviceToken))")
            lines.append("apns-push-type: \(request.pushType.rawValue)")
            lines.append("apns-topic: \(request.topic)")
        }
        lines.append("apns-priority: \(request.priority.rawValue)")
        lines.append("apns-id: \(request.apnsID)")
        if let expiration = request.expiration { lines.append("apns-expiration: \(expiration)") }
        if let collapseID = request.collapseID { lines.append("apns-collapse-id: \(collapseID)") }
        lines.append("authorization: bearer <ES256 token, key \(key.keyID), team \(key.teamID)>")
        lines.append("")
        lines.append(String(decoding: request.payload, as: UTF8.self))
        return lines.joined(separator: "\n")
    }
}

/// What `islet send` tells its user about a push it sent: the lines to print and
/// the exit status, which tells apart "APNs said no" from "it never got there".
struct SendOutcome: Sendable, Equatable {
    /// APNs accepted the push.
    static let delivered: Int32 = 0
    /// APNs answered and refused it (the reason is printed).
    static let refused: Int32 = 1
    /// Nothing was sent: a bad flag or a broken payload rule.
    static let notSent: Int32 = 2
    /// APNs never answered: it could not be reached (refused connection, unknown
    /// host, TLS or certificate failure, timeout) or the connection was lost first.
    static let unreachable: Int32 = 3

    /// The exit status.
    let status: Int32
    /// The lines to print: APNs's answer as it came (status, reason, ids), then a
    /// sentence saying what became of the push.
    let lines: [String]

    /// Reads the result of one send to `url`.
    init(_ result: APNsResult, url: URL) {
        var lines: [String] = []
        guard let response = result.response else {
            let why = result.error.map { $0.message } ?? "no answer came"
            var sentence = "Not delivered: APNs at \(url.absoluteString) could not be reached; \(why)."
            if result.error?.code == .transport, why.contains("certificate is not trusted") {
                sentence += " For a server with a CA of its own, such as islet sim, pass it with --ca."
            }
            lines.append(sentence)
            status = result.error?.code == .invalidConfiguration ? Self.notSent : Self.unreachable
            self.lines = lines
            return
        }
        var answer = "\(response.status)"
        if let reason = response.reason { answer += " \(reason)" }
        if let apnsID = response.apnsID { answer += " apns-id: \(apnsID)" }
        if let uniqueID = response.uniqueID { answer += " apns-unique-id: \(uniqueID)" }
        if let timestamp = response.timestamp { answer += " timestamp: \(Int64(timestamp.timeIntervalSince1970))" }
        lines.append(answer)
        if result.disposition == .delivered {
            lines.append("Delivered: APNs accepted the push.")
            status = Self.delivered
        } else {
            let reason = response.reason.map { " (\($0))" } ?? ""
            lines.append("Refused by APNs\(reason): \(Self.explanation(result.disposition)).")
            status = Self.refused
        }
        self.lines = lines
    }

    /// What a refusal means for the person who sent the push.
    static func explanation(_ disposition: TransportDisposition) -> String {
        switch disposition {
        case .delivered: "it was accepted"
        case .retry, .retryNow: "APNs failed for a moment; sending it again later may work"
        case .retryLater: "too many pushes, or provider tokens, too fast; wait before sending again"
        case .tokenDead(let since):
            if let since {
                "the token is no longer valid (since \(Int64(since.timeIntervalSince1970))); the app must register a new one"
            } else {
                "the token is no longer valid; the app must register a new one"
            }
        case .tokenUnknownInEnvironment:
            "the token is not valid here; it may be malformed or belong to the other environment (--sandbox or not)"
        case .wrongTopic: "the token does not belong to this topic or push type; check --topic and --event"
        case .credentialsRejected:
            "the provider token was refused; check --key, --key-id and --team-id against the Apple developer account"
        case .rejected: "the push itself is wrong; sending it again as it is cannot help"
        }
    }
}
