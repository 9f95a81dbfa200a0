public import IsletCore

/// A Google service account, as FCM's HTTP v1 API needs it: the project, the
/// account's email, its RSA key, and where its assertions are exchanged for access
/// tokens. (What a valid account is, is checked where an app is given one.)
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
