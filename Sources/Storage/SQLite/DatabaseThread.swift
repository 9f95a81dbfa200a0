import Foundation
import Synchronization

/// A thread of its own that runs database work in order, so that async callers
/// never block the cooperative thread pool on a disk sync.
final class DatabaseThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
    }

    private let state = Mutex(State())
    private let condition = NSCondition()

    init(name: String) {
        let thread = Thread { [self] in
            // Named from inside: on Linux a name given before `start` never reaches
            // the system (`top -H`, `perf`), which takes at most 15 bytes.
            Thread.current.name = name
            self.loop()
        }
        thread.start()
    }

    /// Runs `job` on the thread, after every job submitted before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        condition.lock()
        let accepted = state.withLock { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        condition.signal()
        condition.unlock()
        // After `stop`, work runs on the caller's thread: it then fails on the closed
        // connection rather than waiting forever.
        if !accepted { job() }
    }

    /// Lets the thread finish the jobs it has and exit.
    func stop() {
        condition.lock()
        state.withLock { $0.stopping = true }
        condition.signal()
        condition.unlock()
    }

    private func loop() {
        while true {
            condition.lock()
            var batch: [@Sendable () -> Void] = []
            var stopping = false
            while true {
                (batch, stopping) = state.withLock { state in
                    defer { state.jobs.removeAll(keepingCapacity: true) }
                    return (state.jobs, state.stopping)
                }
                if !batch.isEmpty || stopping { break }
                condition.wait()
            }
            condition.unlock()
            for job in batch { job() }
            if stopping && batch.isEmpty { return }
        }
    }
}
