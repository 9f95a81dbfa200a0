import Foundation
import HTTPServer

/// The dashboard's session cookie: `islet_session`, `HttpOnly`, `SameSite=Strict`,
/// `Path=/`, and `Secure` when the request came over TLS (as a proxy says with
/// `X-Forwarded-Proto: https`) or the configured public URL is `https`.
enum DashboardCookie {
    /// The cookie's name.
    static let name = "islet_session"

    /// The session token a request's `Cookie` header carries, if any.
    static func token(_ request: HTTPRequest) -> String? {
        for (field, value) in request.headers where field.lowercased() == "cookie" {
            for pair in value.split(separator: ";") {
                let parts = pair.split(separator: "=", maxSplits: 1)
                guard parts.count == 2, parts[0].trimmingCharacters(in: .whitespaces) == name else { continue }
                let token = parts[1].trimmingCharacters(in: .whitespaces)
                if !token.isEmpty { return token }
            }
        }
        return nil
    }

    /// Whether the cookie must be `Secure` for `request`.
    static func secure(_ request: HTTPRequest, publicURLIsHTTPS: Bool) -> Bool {
        publicURLIsHTTPS || request.headers["X-Forwarded-Proto"]?.lowercased().split(separator: ",").first?
            .trimmingCharacters(in: .whitespaces) == "https"
    }

    /// The `Set-Cookie` value that stores `token` for `maxAge` seconds.
    static func setting(_ token: String, maxAge: Int, secure: Bool) -> String {
        "\(name)=\(token); Path=/; Max-Age=\(max(0, maxAge)); HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }

    /// The `Set-Cookie` value that removes the cookie.
    static func clearing(secure: Bool) -> String {
        "\(name)=; Path=/; Max-Age=0; HttpOnly; SameSite=Strict" + (secure ? "; Secure" : "")
    }
}
