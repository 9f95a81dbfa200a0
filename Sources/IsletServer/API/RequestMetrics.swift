import IsletSync
import Foundation

/// Counts API requests by route pattern, method and status, for `/metrics`.
///
/// Every label value comes from a closed set, so that no request can add series:
/// a method is one of `knownMethods` or `other`, a route is a registered pattern or
/// `unmatched` (the router answers only those), and a status is a code from 100 to
/// 599 (anything else is counted as 0). An invented method or path costs nothing that lasts.
final class RequestMetrics: Sendable {
    struct Key: Hashable, Sendable, Comparable {
        let method: String
        let route: String
        let status: Int

        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.route, lhs.method, lhs.status) < (rhs.route, rhs.method, rhs.status)
        }
    }

    /// The methods counted under their own name (RFC 9110's, and PATCH).
    static let knownMethods: Set<String> = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "TRACE", "CONNECT"]
    /// The route label of a request no route matched.
    static let unmatchedRoute = "unmatched"

    private let counts = Lock<[Key: Int]>([:])

    /// Counts nothing yet.
    init() {}

    /// The label a method is counted under.
    static func methodLabel(_ method: String) -> String {
        knownMethods.contains(method) ? method : "other"
    }

    /// Counts one request. `route` is the pattern the router matched, or
    /// `unmatched`: the router's own closed set.
    func record(method: String, route: String, status: Int) {
        let key = Key(method: Self.methodLabel(method), route: route, status: (100...599).contains(status) ? status : 0)
        counts.withLock { $0[key, default: 0] += 1 }
    }

    func snapshot() -> [Key: Int] { counts.withLock { $0 } }
}
