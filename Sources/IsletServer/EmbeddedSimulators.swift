public import Foundation
public import Storage

/// The simulators, an APNs and an FCM, running in the same process (`--simulator`): the
/// executable provides it (the server library does not link one), the application
/// starts it before anything sends, tells it which signing keys and service
/// accounts to trust, and stops it last.
public protocol EmbeddedSimulators: Sendable {
    /// Starts listening; answers where the APNs client (and the FCM client) sends.
    func start() throws -> EmbeddedSimulatorEndpoints
    /// Trusts the signing key of `credentials` (an app was given them).
    func trust(_ credentials: APNsCredentials)
    /// Trusts the service account of `credentials` (an app was given them).
    func trust(_ credentials: FCMCredentials)
    /// A new service account the embedded FCM trusts, or `nil` without one.
    func makeFCMAccount() throws -> FCMCredentials?
    /// Stops.
    func shutdown() async
}

/// Where the embedded simulators listen: the APNs's endpoints, and the FCM's.
public struct EmbeddedSimulatorEndpoints: Sendable {
    /// Its APNs URL (both environments go there).
    public var url: URL
    /// The CA certificate (PEM) the client must trust for it.
    public var trustRootsPEM: String?
    /// Its inspection API, if it has one.
    public var inspectURL: String?
    /// Its channel management API (broadcast channels), if it has one.
    public var channelsURL: URL?
    /// Its FCM (HTTP/2 and TLS), if it has one.
    public var fcmURL: URL?
    /// The CA certificate (PEM) the FCM client must trust for it.
    public var fcmTrustRootsPEM: String?
    /// Its FCM's inspection API, if it has one.
    public var fcmInspectURL: String?

    /// Creates an endpoint.
    public init(url: URL, trustRootsPEM: String?, inspectURL: String?, channelsURL: URL? = nil) {
        self.url = url
        self.trustRootsPEM = trustRootsPEM
        self.inspectURL = inspectURL
        self.channelsURL = channelsURL
    }
}
