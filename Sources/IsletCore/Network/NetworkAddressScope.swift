/// Where an IP address leads, as far as its number tells: the classes an outbound
/// request (a webhook) must be kept away from, and `public` for the rest.
public enum NetworkAddressScope: Hashable, Sendable, CustomStringConvertible {
    /// Reachable on the internet: nothing below.
    case `public`
    /// This host: 127.0.0.0/8, ::1.
    case loopback
    /// A private or shared network: 10/8, 172.16/12, 192.168/16, 100.64/10 (carrier-grade
    /// NAT), fc00::/7 (unique local), fec0::/10 (site-local), 64:ff9b:1::/48 (local NAT64).
    case privateNetwork
    /// The local link: 169.254.0.0/16, fe80::/10.
    case linkLocal
    /// A cloud provider's instance metadata service, which hands out credentials:
    /// 169.254.169.254, fd00:ec2::254, 100.100.100.200.
    case metadata
    /// No address at all ("this host on this network"): 0.0.0.0/8, ::. Connecting to
    /// it reaches this host on Linux.
    case unspecified
    /// A group of hosts: 224.0.0.0/4, ff00::/8.
    case multicast
    /// The limited broadcast address 255.255.255.255.
    case broadcast
    /// Not used on the internet: 240.0.0.0/4, the documentation and benchmarking
    /// ranges (192.0.2/24, 198.51.100/24, 203.0.113/24, 198.18/15, 2001:db8::/32),
    /// 192.0.0/24, the deprecated IPv4-compatible ::/96, 100::/64, and IPv6 outside
    /// 2000::/3 that nothing above names.
    case reserved

    /// Whether a webhook may not be sent to an address of this scope. Public addresses
    /// are always allowed; loopback, private and link-local ones only with
    /// `allowPrivate` (a receiver on the same host or network, in development or a
    /// closed deployment); metadata, unspecified, multicast, broadcast and reserved
    /// addresses never.
    public func isRefusedForWebhooks(allowPrivate: Bool) -> Bool {
        switch self {
        case .public: false
        case .loopback, .privateNetwork, .linkLocal: !allowPrivate
        case .metadata, .unspecified, .multicast, .broadcast, .reserved: true
        }
    }

    /// The scope as a phrase that follows "is", for example "a loopback address".
    public var phrase: String {
        switch self {
        case .public: "a public address"
        case .loopback: "a loopback address"
        case .privateNetwork: "a private network address"
        case .linkLocal: "a link-local address"
        case .metadata: "a cloud metadata service address"
        case .unspecified: "an unspecified address"
        case .multicast: "a multicast address"
        case .broadcast: "the broadcast address"
        case .reserved: "a reserved address"
        }
    }

    /// The scope's name.
    public var description: String {
        switch self {
        case .public: "public"
        case .loopback: "loopback"
        case .privateNetwork: "private"
        case .linkLocal: "link-local"
        case .metadata: "metadata"
        case .unspecified: "unspecified"
        case .multicast: "multicast"
        case .broadcast: "broadcast"
        case .reserved: "reserved"
        }
    }
}
