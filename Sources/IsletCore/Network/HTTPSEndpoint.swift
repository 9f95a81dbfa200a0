import Foundation

/// An endpoint Islet posts to on an app's behalf (a service account's token URI):
/// an absolute `https` URL with a host and no credentials, and the host and port it
/// connects to. Whether the host's addresses may be reached is decided apart: by
/// ``literalRefusal(allowPrivate:)`` for a numeric host, by a lookup for a name.
public struct HTTPSEndpoint: Sendable, Hashable {
    /// The host, as the URL names it (an IPv6 address without its brackets).
    public let host: String
    /// The port (443 when the URL names none).
    public let port: Int

    /// The endpoint of `text`, or why it is none, as the end of a sentence that
    /// starts "The field … " (it starts "must be").
    public static func parse(_ text: String) -> Result<HTTPSEndpoint, Refusal> {
        guard let components = URLComponents(string: text), components.scheme?.lowercased() == "https",
            var host = components.host, !host.isEmpty
        else { return .failure(Refusal(message: "must be an absolute https URL")) }
        guard components.user == nil, components.password == nil else {
            return .failure(Refusal(message: "must be an https URL without credentials (no user or password before the host)"))
        }
        if host.hasPrefix("[") && host.hasSuffix("]") { host = String(host.dropFirst().dropLast()) }
        return .success(HTTPSEndpoint(host: host, port: components.port ?? 443))
    }

    /// Why the host may not be connected to, when it is a numeric address that is
    /// not public (private ones pass with `allowPrivate`; a metadata service's never);
    /// `nil` for a public address or a name.
    public func literalRefusal(allowPrivate: Bool) -> String? {
        NetworkAddress(host)?.refusalReason(allowPrivate: allowPrivate)
    }

    /// Why a text is no endpoint.
    public struct Refusal: Error, Sendable, Hashable {
        /// What the text must be, starting "must be".
        public let message: String
    }
}
