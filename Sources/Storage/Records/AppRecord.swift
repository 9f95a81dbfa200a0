public import Foundation
public import IsletCore

/// An app as stored: its identity, bundle id, APNs credentials (all three or none)
/// and the hashes of its two keys.
public struct AppRecord: Sendable, Hashable {
    /// `app_…`.
    public var id: String
    /// A display name.
    public var name: String
    /// The iOS bundle id, the base of every `apns-topic`.
    public var bundleID: String
    /// The APNs signing key, when the app has one.
    public var credentials: APNsCredentials?
    /// The FCM service account, when the app has one (its Android devices).
    public var fcm: FCMCredentials?
    /// Whether a start for a type without a registered schema is refused.
    public var strictActivityTypes: Bool = false
    /// Whether device routes need the device's secret. A record starts `off`, as
    /// the column does for apps older than secrets; `AppService` creates apps
    /// `required`.
    public var deviceSecrets: DeviceSecretPolicy = .off
    /// Who may follow an activity its devices created themselves.
    public var localJoin: LocalJoinRule = .anyone
    /// The app's own figures for the budgets Islet keeps to for its devices.
    public var budget = BudgetOverrides()
    /// The app's own rate limits.
    public var rateLimits = RateLimitOverrides()
    /// Days the app's history is kept, when shorter than the server's retention
    /// (see ``HistoryRetention``); `nil`: the server's.
    public var historyRetentionDays: Double?
    /// SHA-256 of the server key.
    public var serverKeyHash: Data
    /// SHA-256 of the device key.
    public var deviceKeyHash: Data
    /// When it was created.
    public var createdAt: Date
    /// When it last changed.
    public var updatedAt: Date

    /// Creates a record.
    public init(
        id: String, name: String, bundleID: String, credentials: APNsCredentials?, serverKeyHash: Data,
        deviceKeyHash: Data, createdAt: Date, updatedAt: Date
    ) {
        self.id = id
        self.name = name
        self.bundleID = bundleID
        self.credentials = credentials
        self.serverKeyHash = serverKeyHash
        self.deviceKeyHash = deviceKeyHash
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}

/// An APNs token-auth signing key: team id, key id and the `.p8` private key (PEM).
public struct APNsCredentials: Sendable, Hashable {
    /// The team id (the JWT's `iss`).
    public var teamID: String
    /// The key id (the JWT's `kid`).
    public var keyID: String
    /// The PKCS#8 PEM private key.
    public var privateKeyPEM: String

    /// Creates credentials.
    public init(teamID: String, keyID: String, privateKeyPEM: String) {
        self.teamID = teamID
        self.keyID = keyID
        self.privateKeyPEM = privateKeyPEM
    }
}

/// A Google service account for FCM's HTTP v1 API: the Firebase project, the
/// account's email, its RSA private key (PEM) and key id, and its token URI.
public struct FCMCredentials: Sendable, Hashable {
    /// `project_id`.
    public var projectID: String
    /// `client_email`.
    public var clientEmail: String
    /// `private_key` (PKCS#8 PEM).
    public var privateKeyPEM: String
    /// `private_key_id`, when given.
    public var privateKeyID: String?
    /// `token_uri`.
    public var tokenURI: String

    /// Creates credentials.
    public init(projectID: String, clientEmail: String, privateKeyPEM: String, privateKeyID: String?, tokenURI: String) {
        self.projectID = projectID
        self.clientEmail = clientEmail
        self.privateKeyPEM = privateKeyPEM
        self.privateKeyID = privateKeyID
        self.tokenURI = tokenURI
    }
}

/// Which of an app's two keys a bearer key is.
public enum AppKeyKind: String, Sendable, Hashable, CaseIterable {
    /// The server key: the backend's routes.
    case server
    /// The device key: the routes the app calls from devices.
    case device
}
