import Foundation
public import IsletCore
import IsletCrypto
public import Storage

/// What a Google service account's JSON must hold for Islet to send through FCM
/// with it, checked as one group: every fault is named (`fcm.service_account.…`).
/// The key must be an RSA private key; the token URI an absolute `https` URL without
/// credentials (Google's when the JSON names none), on a public host unless the
/// ``FCMTokenURIPolicy`` allows others (``checkTokenURI(_:policy:)``).
public enum FCMAccountRules {
    /// Google's token endpoint.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"
    /// The prefix of every field named.
    static let prefix = "fcm.service_account."

    /// The credentials in `json`, or `invalid` naming each fault.
    public static func credentials(from json: JSONValue) throws(ServiceError) -> FCMCredentials {
        var faults: [ServiceError.FieldError] = []
        func fault(_ field: String, _ message: String) { faults.append(ServiceError.FieldError(field: prefix + field, message: message)) }
        func text(_ field: String) -> String? {
            guard let member = json[field] else {
                fault(field, "is required")
                return nil
            }
            guard let value = member.stringValue, !value.isEmpty else {
                fault(field, "must be a non-empty string")
                return nil
            }
            return value
        }
        guard json.objectValue != nil else {
            let message = "must be the service account's JSON object"
            throw ServiceError.invalid(
                "The field fcm.service_account is invalid: \(ServiceError.sentence(message))", field: "fcm.service_account", message)
        }
        if let type = json["type"], type.stringValue != "service_account" { fault("type", "must be service_account") }
        let projectID = text("project_id")
        if let projectID, !isProjectID(projectID) {
            fault("project_id", "must be a Firebase project id (6 to 30 lowercase letters, digits and hyphens)")
        }
        let email = text("client_email")
        if let email, email.split(separator: "@", omittingEmptySubsequences: false).count != 2 || email.contains(where: \.isWhitespace) {
            fault("client_email", "must be the service account's email address")
        }
        let key = text("private_key")
        if let key {
            do {
                _ = try RSA.SigningKey(pemRepresentation: key)
            } catch {
                fault("private_key", "must be the account's RSA private key in PEM: \(error.reason)")
            }
        }
        var tokenURI = googleTokenURI
        if json["token_uri"] != nil, let given = text("token_uri") {
            switch HTTPSEndpoint.parse(given) {
            case .success: tokenURI = given
            case .failure(let refusal): fault("token_uri", refusal.message)
            }
        }
        guard faults.isEmpty, let projectID, let email, let key else {
            let fields = faults.map(\.field).joined(separator: ", ")
            throw ServiceError(.invalid, "The service account is invalid: \(fields).", fields: faults)
        }
        return FCMCredentials(
            projectID: projectID, clientEmail: email, privateKeyPEM: key, privateKeyID: json["private_key_id"]?.stringValue,
            tokenURI: tokenURI)
    }

    /// Refuses a token URI (other than Google's) whose host is not public: a
    /// numeric address in a refused range, or a name that does not resolve or
    /// resolves to one, unless `policy` allows private addresses. `invalid`, naming
    /// `fcm.service_account.token_uri`. The token client checks every connection
    /// again.
    public static func checkTokenURI(_ credentials: FCMCredentials, policy: FCMTokenURIPolicy) async throws(ServiceError) {
        guard credentials.tokenURI != googleTokenURI, case .success(let endpoint) = HTTPSEndpoint.parse(credentials.tokenURI)
        else { return }
        var reason = endpoint.literalRefusal(allowPrivate: policy.allowPrivate)
        if reason == nil, !policy.allowPrivate { reason = await policy.addressRefusal(endpoint.host, endpoint.port) }
        guard let reason else { return }
        let message = "must be a public https host: \(reason) (private addresses need --fcm-allow-private)"
        throw ServiceError.invalid(
            "The field \(prefix)token_uri is invalid: \(ServiceError.sentence(message))", field: prefix + "token_uri", message)
    }

    /// Whether `text` is shaped as a Firebase project id: 6 to 30 characters of
    /// lowercase letters, digits and hyphens, starting with a letter.
    static func isProjectID(_ text: String) -> Bool {
        let bytes = Array(text.utf8)
        guard (6...30).contains(bytes.count), let first = bytes.first, (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(first)
        else { return false }
        return bytes.allSatisfy {
            (UInt8(ascii: "a")...UInt8(ascii: "z")).contains($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0)
                || $0 == UInt8(ascii: "-")
        }
    }
}

/// Which token URIs a service account may name besides Google's: those on public
/// hosts, and (`--fcm-allow-private`, or `--simulator`) loopback, private and
/// link-local ones too.
public struct FCMTokenURIPolicy: Sendable {
    /// Whether loopback, private and link-local addresses are accepted.
    public var allowPrivate: Bool
    /// Why `host` (resolved, at `port`) may not be reached, or nil when it may:
    /// resolution and address ranges, as webhooks are checked.
    public var addressRefusal: @Sendable (_ host: String, _ port: Int) async -> String?

    /// A policy.
    public init(
        allowPrivate: Bool = false,
        addressRefusal: @escaping @Sendable (_ host: String, _ port: Int) async -> String? = { _, _ in nil }
    ) {
        self.allowPrivate = allowPrivate
        self.addressRefusal = addressRefusal
    }
}
