import IsletSync
import Foundation

/// Counts API requests by route pattern, method and status, for `/metrics`.
final class RequestMetrics: Sendable {
    struct Key: Hashable, Sendable, Comparable {
        let method: String
        let route: String
        let status: Int

        static func < (lhs: Key, rhs: Key) -> Bool {
            (lhs.route, lhs.method, lhs.status) < (rhs.route, rhs.method, rhs.status)
        }
    }

    private let counts = Lock<[Key: Int]>([:])

    func record(method: String, route: String, status: Int) {
        counts.withLock { $0[Key(method: method, route: route, status: status), default: 0] += 1 }
    }

    func snapshot() -> [Key: Int] { counts.withLock { $0 } }
}
