import IsletSync

/// The receipts this node recorded, by app, for `/metrics`.
public final class ReceiptMetrics: Sendable {
    private let counts = Lock([String: Int]())

    /// Counters that start at zero.
    public init() {}

    /// Counts a receipt of `appID`.
    func recorded(appID: String) {
        counts.withLock { $0[appID, default: 0] += 1 }
    }

    /// The counts so far, by app.
    public func snapshot() -> [(String, Int)] {
        counts.withLock { counts in counts.sorted { $0.key < $1.key }.map { ($0.key, $0.value) } }
    }
}
