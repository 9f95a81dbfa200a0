import IsletSync

/// Holds the simulator's answers while closed: pushes are received and delivered to
/// the simulated devices at once, but their answers wait until the gate opens. A test
/// closes it to keep a push in flight for exactly as long as it needs (say, while it
/// queues the pushes that must wait behind it), however slow the machine.
public final class AnswerGate: Sendable {
    private let closed: Lock<Bool>

    /// A gate, closed or open.
    public init(closed: Bool = true) {
        self.closed = Lock(closed)
    }

    /// Holds the answers from now on.
    public func close() { closed.withLock { $0 = true } }
    /// Lets the held answers go, and the ones after them.
    public func open() { closed.withLock { $0 = false } }
    /// Whether answers are held now.
    public var isClosed: Bool { closed.withLock { $0 } }
}
