public import Foundation
public import IsletCore

/// FCM's answer to one `messages:send`, read: the HTTP status, FCM's error code
/// (`UNREGISTERED`, …) or the API's status (`INVALID_ARGUMENT`, …), the message name
/// of a sent message, whether an `INVALID_ARGUMENT` names the token, and the
/// `Retry-After` FCM gave.
public struct FCMResponse: Sendable, Hashable {
    /// The HTTP status.
    public var status: Int
    /// The message's name (`projects/p/messages/0:123…`) when FCM took it.
    public var messageName: String?
    /// FCM's own error code (`details[].errorCode`), else the API's status.
    public var errorCode: String?
    /// The error's message, as FCM wrote it.
    public var errorMessage: String?
    /// Whether the fault is the token (`message.token` among the field violations,
    /// or the message says so).
    public var tokenInvalid: Bool
    /// Seconds FCM asks to wait (`Retry-After`).
    public var retryAfter: TimeInterval?

    /// Creates a response.
    public init(
        status: Int, messageName: String? = nil, errorCode: String? = nil, errorMessage: String? = nil,
        tokenInvalid: Bool = false, retryAfter: TimeInterval? = nil
    ) {
        self.status = status
        self.messageName = messageName
        self.errorCode = errorCode
        self.errorMessage = errorMessage
        self.tokenInvalid = tokenInvalid
        self.retryAfter = retryAfter
    }

    /// Reads FCM's answer: its status, body and `Retry-After` (seconds, or an HTTP
    /// date relative to `now`).
    public init(status: Int, body: Data, retryAfter header: String?, now: Date) {
        self.init(status: status)
        let json = try? JSONValue(parsing: body)
        if status == 200 {
            messageName = json?["name"]?.stringValue
        } else if let error = json?["error"] {
            errorMessage = error["message"]?.stringValue
            var code = error["status"]?.stringValue
            var violations: [String] = []
            for detail in error["details"]?.arrayValue ?? [] {
                if let fcm = detail["errorCode"]?.stringValue { code = fcm }
                for violation in detail["fieldViolations"]?.arrayValue ?? [] {
                    if let field = violation["field"]?.stringValue { violations.append(field) }
                }
            }
            errorCode = code
            tokenInvalid = violations.contains("message.token")
                || (errorMessage?.lowercased().contains("registration token") ?? false)
        }
        if let header {
            retryAfter = Self.retryAfter(header, now: now)
        }
    }
}

extension FCMResponse {
    /// The seconds a `Retry-After` value asks for at `now`: a number of seconds, or
    /// an HTTP date (RFC 9110); nil when it is neither.
    static func retryAfter(_ value: String, now: Date) -> TimeInterval? {
        let text = value.trimmingCharacters(in: .whitespaces)
        if let seconds = Int(text) { return seconds >= 0 ? TimeInterval(seconds) : nil }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text).map { max(0, $0.timeIntervalSince(now)) }
    }
}

/// The one map from FCM's answers to the transport-neutral `TransportDisposition`:
/// the only place where FCM's statuses and error codes are interpreted.
public enum FCMFailurePolicy {
    /// The least wait after `QUOTA_EXCEEDED`, whatever FCM says.
    public static let quotaBackoff: TimeInterval = 60

    /// Whether `response` refuses the access token the message carried (a 401, but
    /// `THIRD_PARTY_AUTH_ERROR`, which is about credentials behind FCM, not ours):
    /// the token is then dropped, and `classify` told whether another may be tried.
    public static func refusesAccessToken(_ response: FCMResponse) -> Bool {
        response.status == 401 && response.errorCode != "THIRD_PARTY_AUTH_ERROR"
    }

    /// The disposition of `response`. `tokenRefreshed` says whether the access token
    /// FCM refused (`UNAUTHENTICATED`, a 401) was dropped and another may be fetched
    /// (`FCMAccessTokens.invalidate`): then the message may go again at once;
    /// otherwise (the refused token was itself a fresh replacement) the credentials
    /// are refused.
    public static func classify(_ response: FCMResponse, tokenRefreshed: Bool = false) -> TransportDisposition {
        if response.status == 200 { return .delivered }
        switch response.errorCode {
        case "UNREGISTERED"?:
            return .tokenDead(since: nil)
        case "INVALID_ARGUMENT"? where response.tokenInvalid:
            return .tokenDead(since: nil)
        case "SENDER_ID_MISMATCH"?, "THIRD_PARTY_AUTH_ERROR"?, "PERMISSION_DENIED"?:
            return .credentialsRejected
        case "UNAUTHENTICATED"?:
            return tokenRefreshed ? .retryNow : .credentialsRejected
        case "QUOTA_EXCEEDED"?, "RESOURCE_EXHAUSTED"?:
            return .retryLater(after: max(quotaBackoff, response.retryAfter ?? 0))
        case "UNAVAILABLE"?:
            return response.retryAfter.map { .retryLater(after: $0) } ?? .retry
        case "INTERNAL"?:
            return .retry
        case "INVALID_ARGUMENT"?:
            return .rejected
        default:
            break
        }
        switch response.status {
        // A 404 in Google's error format names a missing entity (the token); a bare
        // one (a wrong URL, a proxy) says nothing about the token.
        case 404: return response.errorCode == nil ? .rejected : .tokenDead(since: nil)
        case 401: return tokenRefreshed ? .retryNow : .credentialsRejected
        case 403: return .credentialsRejected
        case 429: return .retryLater(after: max(quotaBackoff, response.retryAfter ?? 0))
        case 503: return response.retryAfter.map { .retryLater(after: $0) } ?? .retry
        case 500...599: return .retry
        default: return .rejected
        }
    }
}
