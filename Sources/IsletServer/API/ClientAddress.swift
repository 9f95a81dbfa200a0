import Foundation
import HTTPServer

/// The address a request came from, as logs and per-address limits see it: the
/// connection's peer, or, when Islet is told it sits behind a proxy that writes
/// `X-Forwarded-For` (`--trust-forwarded-for`), the last address of that header's
/// last line (the one the proxy itself appended; entries before it are the
/// client's word).
enum ClientAddress {
    /// The client address of `request`; `unknown` when the server could not tell.
    static func of(_ request: HTTPRequest, trustForwardedFor: Bool) -> String {
        // The last entry of the last line: a proxy that adds a line of its own
        // leaves the client's forged lines before it.
        if trustForwardedFor, let forwarded = request.headers.values(of: "X-Forwarded-For").last,
            let last = forwarded.split(separator: ",").last
        {
            let address = String(last.trimmingOptionalWhitespace())
            if acceptable(address) { return address }
        }
        return request.remoteHost ?? "unknown"
    }

    /// An address as a proxy writes it: 1 to 64 hex digits, digits, `.`, `:`, `[`
    /// and `]` (anything else could forge log fields, or spread one client over
    /// many limits).
    static func acceptable(_ address: String) -> Bool {
        (1...64).contains(address.utf8.count) && address.utf8.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x46).contains(byte) || (0x61...0x66).contains(byte)
                || byte == 0x2E || byte == 0x3A || byte == 0x5B || byte == 0x5D
        }
    }
}
