import IsletSync

/// One wait's end, fired once by whichever comes first: its deadline, a doorbell,
/// the task's cancellation. An async task awaits it; a thread blocks on it.
final class Alarm: Sendable {
    private struct State {
        var fired = false
        var continuation: CheckedContinuation<Void, Never>?
    }

    private let state = ConditionLock(State())

    /// Ends the wait (later calls change nothing).
    func fire() {
        let continuation = state.withLockBroadcasting { state -> CheckedContinuation<Void, Never>? in
            state.fired = true
            defer { state.continuation = nil }
            return state.continuation
        }
        continuation?.resume()
    }

    /// Whether it fired.
    var fired: Bool { state.withLock { $0.fired } }

    /// Returns once fired, or once the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                let fired = state.withLock { state -> Bool in
                    if state.fired { return true }
                    state.continuation = continuation
                    return false
                }
                if fired { continuation.resume() }
            }
        } onCancel: {
            fire()
        }
    }

    /// Blocks the calling thread until fired, or until `timeout` passed (system time).
    func block(timeout: Duration?) {
        state.wait(until: { $0.fired }, timeout: timeout) { _ in }
    }
}
