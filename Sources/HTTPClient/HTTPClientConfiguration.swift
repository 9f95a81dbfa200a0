import IsletCore

/// How an ``HTTPClient`` connects.
public struct HTTPClientConfiguration: Sendable {
    /// Whether requests may go to loopback, private and link-local addresses (a
    /// receiver on this host or network). Metadata, unspecified, multicast, broadcast
    /// and reserved addresses are refused even so.
    public var allowPrivateAddresses: Bool = false
    /// Connections held at once to one host and port; more requests wait for one.
    public var maxConnectionsPerHost: Int = 16
    /// Connections held at once in all; also how many idle ones are kept for reuse.
    public var maxTotalConnections: Int = 256
    /// The most connecting (TCP and TLS) may take, within each request's timeout.
    public var connectTimeout: Duration = .seconds(5)
    /// A PEM file of certificate authorities to trust instead of the system's (tests
    /// with a local authority); nil trusts the system's.
    public var caFile: String?
    /// The `User-Agent` sent with every request.
    public var userAgent: String = "Islet/\(IsletVersion.current)"

    /// The defaults.
    /// The clock a response's duration is measured on: the system's monotonic clock,
    /// or a test's.
    public var clock: any Clock<Duration> = ContinuousClock()

    public init() {}
}
