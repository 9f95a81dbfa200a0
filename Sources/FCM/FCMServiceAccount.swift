import Foundation
public import IsletCore
import IsletCrypto

/// A Google service account, as the JSON a team downloads from the Firebase
/// console: what Islet needs of it to send through FCM's HTTP v1 API (the project,
/// the account's email, its RSA key, and where its assertions are exchanged for
/// access tokens).
public struct FCMServiceAccount: Sendable, Hashable {
    /// The Firebase project (`project_id`).
    public var projectID: String
    /// The account (`client_email`): the assertion's issuer.
    public var clientEmail: String
    /// The RSA private key in PEM (`private_key`).
    public var privateKeyPEM: String
    /// The key's id (`private_key_id`), sent as the assertion's `kid` when given.
    public var privateKeyID: String?
    /// Where an assertion is exchanged for an access token (`token_uri`).
    public var tokenURI: String

    /// Google's token endpoint, used when the JSON names none.
    public static let googleTokenURI = "https://oauth2.googleapis.com/token"

    /// Creates an account.
    public init(projectID: String, clientEmail: String, privateKeyPEM: String, privateKeyID: String?, tokenURI: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyPEM = privateKeyPEM
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
    }

    /// A fault of a service account's JSON: the member and what is wrong with it.
    public struct Fault: Error, Sendable, Hashable {
        /// The member (`project_id`, `client_email`, `private_key`, `token_uri`).
        public var field: String
        /// What is wrong, as a phrase (`is required`).
        public var message: String
    }

    /// The account in `json`, checked as one group: every fault is listed, each
    /// naming its member. The key must be an RSA private key; the token URI an
    /// absolute `https` URL (`http` only with `allowHTTP`, for a local simulator).
    public static func parse(_ json: JSONValue, allowHTTP: Bool = false) throws(FaultList) -> FCMServiceAccount {
        var faults: [Fault] = []
        func text(_ field: String) -> String? {
            guard let member = json[field] else {
                faults.append(Fault(field: field, message: "is required"))
                return nil
            }
            guard let value = member.stringValue, !value.isEmpty else {
                faults.append(Fault(field: field, message: "must be a non-empty string"))
                return nil
            }
            return value
        }
        guard json.objectValue != nil else {
            throw FaultList([Fault(field: "service_account", message: "must be the service account's JSON object")])
        }
        if let type = json["type"], type.stringValue != "service_account" {
            faults.append(Fault(field: "type", message: "must be service_account"))
        }
        let projectID = text("project_id")
        if let projectID, !Self.isProjectID(projectID) {
            faults.append(Fault(field: "project_id", message: "must be a Firebase project id (lowercase letters, digits and hyphens)"))
        }
        let email = text("client_email")
        if let email, email.split(separator: "@").count != 2 || email.contains(where: \.isWhitespace) {
            faults.append(Fault(field: "client_email", message: "must be the service account's email address"))
        }
        let key = text("private_key")
        if let key {
            do {
                _ = try RSA.SigningKey(pemRepresentation: key)
            } catch {
                faults.append(Fault(field: "private_key", message: "must be the account's RSA private key in PEM: \(error.reason)"))
            }
        }
        var tokenURI = Self.googleTokenURI
        if json["token_uri"] != nil, let given = text("token_uri") {
            if let url = URL(string: given), url.host != nil, url.scheme == "https" || (allowHTTP && url.scheme == "http") {
                tokenURI = given
            } else {
                faults.append(Fault(field: "token_uri", message: "must be an absolute https URL"))
            }
        }
        let keyID = json["private_key_id"]?.stringValue
        guard faults.isEmpty, let projectID, let email, let key else { throw FaultList(faults) }
        return FCMServiceAccount(
            projectID: projectID, clientEmail: email, privateKeyPEM: key, privateKeyID: keyID, tokenURI: tokenURI)
    }

    /// The faults of a service account's JSON, in the order of its members.
    public struct FaultList: Error, Sendable, Hashable {
        /// Each fault.
        public var faults: [Fault]

        init(_ faults: [Fault]) { self.faults = faults }
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

    /// The JSON a team would download for this account (`type`, the project, the
    /// email, the key and its id, and the token URI).
    public var json: JSONValue {
        var members: [String: JSONValue] = [
            "type": "service_account", "project_id": .string(projectID), "client_email": .string(clientEmail),
            "private_key": .string(privateKeyPEM), "token_uri": .string(tokenURI),
        ]
        if let privateKeyID { members["private_key_id"] = .string(privateKeyID) }
        return .object(members)
    }
}
