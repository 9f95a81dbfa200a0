import Foundation
import HTTPServer

/// Keeps web pages away from the inspection API, which has no authentication: a page
/// in the user's browser may send requests to 127.0.0.1, and by DNS rebinding (its own
/// name made to point at 127.0.0.1) read the answers too.
/// - `Host` must name this server: a loopback name (`localhost`, `127.0.0.1`,
///   `[::1]`), the address it listens on, or, when it listens on every address
///   (`0.0.0.0`, `::`), any IP address. A rebinding page's requests carry the page's
///   own name, which is none of these. The port is not checked: only a name can be
///   rebound, and a forwarded port keeps working.
/// - A request that changes state (any method but `GET` and `HEAD`) must not carry a
///   foreign `Origin`, and its content type, when it has one or a body, must be
///   `application/json`: a cross-site form or a fetch without a preflight sends
///   `text/plain`, `application/x-www-form-urlencoded` or `multipart/form-data`.
/// A request without `Host` or `Origin` (curl, scripts, HTTP/1.0) is no browser's and
/// passes those checks.
struct InspectionGuard: Sendable {
    /// The address the inspection API listens on, lowercased, IPv6 in brackets.
    private let listeningHost: String
    /// Whether it listens on every address of the machine.
    private let listensEverywhere: Bool
    /// The names of this machine no DNS answer can move.
    static let loopbackNames: Set = ["localhost", "127.0.0.1", "[::1]"]

    init(listeningHost: String) {
        var host = listeningHost.lowercased()
        if host.contains(":") && !host.hasPrefix("[") { host = "[\(host)]" }
        self.listeningHost = host
        listensEverywhere = ["", "0.0.0.0", "[::]", "[::0]", "*"].contains(host)
    }

    /// Why `request` is refused, as the answer to give; nil when it may go on.
    func refusal(_ request: HTTPRequest) -> HTTPResponse? {
        if let host = request.headers["Host"], !allows(hostField: host) {
            let own = Self.loopbackNames.contains(listeningHost) ? "" : (listensEverywhere ? ", or an IP address" : ", or \(listeningHost)")
            return InspectionAPI.problem(
                403, "Host: \"\(host)\" does not name this server, which answers to localhost, 127.0.0.1 and [::1]\(own) only.")
        }
        if request.method == "GET" || request.method == "HEAD" { return nil }
        if let origin = request.headers["Origin"], !allows(origin: origin) {
            return InspectionAPI.problem(403, "Origin: \"\(origin)\" is not this server; requests from web pages are refused.")
        }
        let contentType = request.headers["Content-Type"]
        if contentType != nil || !request.body.isEmpty {
            guard let contentType, Self.isJSON(contentType) else {
                return InspectionAPI.problem(
                    415, "Content-Type: \(contentType.map { "\"\($0)\"" } ?? "none") is not application/json; a request that changes the simulator sends JSON.")
            }
        }
        return nil
    }

    /// Whether a `Host` field (`name`, `name:port`, `[v6]`, `[v6]:port`) names this
    /// server.
    func allows(hostField: String) -> Bool {
        guard let name = Self.hostName(hostField.lowercased()) else { return false }
        if Self.loopbackNames.contains(name) { return true }
        if name == listeningHost { return true }
        return listensEverywhere && Self.isIPAddress(name)
    }

    /// Whether an `Origin` field (`scheme://host[:port]`) is this server's.
    func allows(origin: String) -> Bool {
        let lowered = origin.lowercased()
        for scheme in ["http://", "https://"] where lowered.hasPrefix(scheme) {
            let rest = lowered.dropFirst(scheme.count)
            return !rest.contains("/") && allows(hostField: String(rest))
        }
        return false
    }

    /// The name of a host field without its port; nil when it is malformed.
    static func hostName(_ field: String) -> String? {
        let field = field.trimmingCharacters(in: [" ", "\t"])
        if field.hasPrefix("[") {
            guard let close = field.firstIndex(of: "]") else { return nil }
            let after = field[field.index(after: close)...]
            guard after.isEmpty || (after.hasPrefix(":") && isPort(after.dropFirst())) else { return nil }
            return String(field[...close])
        }
        let parts = field.split(separator: ":", omittingEmptySubsequences: false)
        guard let name = parts.first, !name.isEmpty, parts.count <= 2 else { return nil }
        if parts.count == 2 && !isPort(parts[1]) { return nil }
        return String(name)
    }

    private static func isPort(_ text: Substring) -> Bool {
        !text.isEmpty && text.count <= 5 && text.allSatisfy { $0.isASCII && $0.isNumber }
    }

    /// Whether `name` is a dotted IPv4 address or a bracketed IPv6 address: names
    /// no DNS answer can move.
    private static func isIPAddress(_ name: String) -> Bool {
        if name.hasPrefix("[") && name.hasSuffix("]") {
            return name.dropFirst().dropLast().allSatisfy { $0.isHexDigit || $0 == ":" || $0 == "." }
        }
        let octets = name.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets.allSatisfy { octet in
            !octet.isEmpty && octet.count <= 3 && octet.allSatisfy { $0.isASCII && $0.isNumber } && Int(octet)! <= 255
        }
    }

    /// Whether a content type is `application/json` (parameters such as `charset`
    /// allowed).
    private static func isJSON(_ contentType: String) -> Bool {
        let media = contentType.split(separator: ";", maxSplits: 1).first ?? ""
        return media.trimmingCharacters(in: [" ", "\t"]).lowercased() == "application/json"
    }
}
