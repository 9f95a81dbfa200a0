import IsletSync

/// A condition the code under test sets and a test awaits: the wait ends the moment
/// it is set, with no polling, however slow the machine. Its deadline is only a
/// backstop, so that a test whose condition never comes fails instead of hanging.
public final class TestSignal: Sendable {
    private struct State {
        var isSet = false
        var nextWaiter = 0
        var waiters: [Int: CheckedContinuation<Bool, Never>] = [:]
        /// Waiters whose deadline passed before they were registered.
        var expired: Set<Int> = []
    }

    private let state = Lock(State())

    /// A signal not yet set.
    public init() {}

    /// Sets the signal: every wait, now and later, ends with `true`.
    public func set() {
        let waiting = state.withLock { state -> [CheckedContinuation<Bool, Never>] in
            state.isSet = true
            defer { state.waiters = [:] }
            return Array(state.waiters.values)
        }
        for continuation in waiting { continuation.resume(returning: true) }
    }

    /// Whether the signal is set now.
    public var isSet: Bool { state.withLock { $0.isSet } }

    /// Waits until the signal is set (`true`), or until `deadline` (scaled by
    /// `TestTime`) passes without it (`false`).
    public func wait(within deadline: Duration = .seconds(120)) async -> Bool {
        let id = state.withLock { state -> Int in
            defer { state.nextWaiter += 1 }
            return state.nextWaiter
        }
        let backstop = Task { [self] in
            try? await Task.sleep(for: TestTime.scaled(deadline))
            if !Task.isCancelled { expire(id) }
        }
        defer { backstop.cancel() }
        return await withCheckedContinuation { continuation in
            let answer = state.withLock { state -> Bool? in
                if state.isSet { return true }
                if state.expired.remove(id) != nil { return false }
                state.waiters[id] = continuation
                return nil
            }
            if let answer { continuation.resume(returning: answer) }
        }
    }

    /// Ends waiter `id` with `false`, if it still waits; one not yet registered
    /// finds itself expired when it registers.
    private func expire(_ id: Int) {
        let waiting = state.withLock { state -> CheckedContinuation<Bool, Never>? in
            guard !state.isSet else { return nil }
            guard let continuation = state.waiters.removeValue(forKey: id) else {
                state.expired.insert(id)
                return nil
            }
            return continuation
        }
        waiting?.resume(returning: false)
    }
}
