import Foundation
import Glibc
import IsletSync
import IsletThreads

/// A thread of its own that runs database work in order, so that async callers
/// never block the cooperative thread pool on a disk sync.
final class DatabaseThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        var finished = false
        /// The thread's `pthread_self()`, once it runs.
        var thread: pthread_t?
    }

    private let state = ConditionLock(State())

    init(name: String) {
        let thread = Thread { [self] in
            // Named from inside: on Linux a name given before `start` never reaches
            // the system (`top -H`, `perf`), which takes at most 15 bytes.
            nameCurrentThread(name)
            self.loop()
        }
        thread.start()
    }

    /// Runs `job` on the thread, after every job submitted before it.
    func submit(_ job: @escaping @Sendable () -> Void) {
        let accepted = state.withLockBroadcasting { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        // After `stop`, work runs on the caller's thread: it then fails on the closed
        // connection rather than waiting forever.
        if !accepted { job() }
    }

    /// Lets the thread finish the jobs it has, and waits for it to exit (unless
    /// called from one of those jobs).
    func stop() {
        let onThread = state.withLockBroadcasting { state -> Bool in
            state.stopping = true
            return state.thread.map { pthread_equal($0, pthread_self()) != 0 } ?? false
        }
        if !onThread { state.wait(until: { $0.finished }) { _ in } }
    }

    private func loop() {
        state.withLock { $0.thread = pthread_self() }
        while true {
            let (batch, stopping) = state.wait(until: { !$0.jobs.isEmpty || $0.stopping }) { state in
                defer { state.jobs.removeAll(keepingCapacity: true) }
                return (state.jobs, state.stopping)
            }
            for job in batch { job() }
            if stopping && batch.isEmpty { break }
        }
        state.withLockBroadcasting { $0.finished = true }
    }
}
