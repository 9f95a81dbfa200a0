import Foundation
import IsletSync
import IsletThreads

/// Threads of their own that run database work for async callers, so that a
/// request never blocks the cooperative thread pool on a round trip to PostgreSQL.
/// As many threads as the pool has connections: each job takes one.
///
/// It is no `BackgroundService`: it has no pace and no clock (a thread waits for a
/// job, never for a time), and it lives and dies with the store, whose `init` starts
/// it and whose `close` stops it. Every service still calls the store while it stops,
/// and the store is closed after them, in its own turn.
final class WorkerThreads: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopping = false
        var running = 0
    }

    private let state = ConditionLock(State())

    init(count: Int, name: String) {
        state.withLock { $0.running = count }
        for _ in 0..<count {
            let thread = Thread { [self] in
                // Named from inside: on Linux a name given before `start` never
                // reaches the system; it takes at most 15 bytes.
                nameCurrentThread(name)
                self.loop()
            }
            thread.start()
        }
    }

    /// Runs `job` on one of the threads. After `stop`, it runs on the caller's
    /// thread (and fails there on the closed pool) rather than never.
    func submit(_ job: @escaping @Sendable () -> Void) {
        // One job wakes one thread; until `stop`, only the threads wait here.
        let accepted = state.withLockSignaling { state -> Bool in
            guard !state.stopping else { return false }
            state.jobs.append(job)
            return true
        }
        if !accepted { job() }
    }

    /// Lets the threads finish the jobs they have, and waits for them to exit.
    func stop() {
        state.withLockBroadcasting { $0.stopping = true }
        state.wait(until: { $0.running == 0 }) { _ in }
    }

    private func loop() {
        while true {
            let job = state.wait(until: { !$0.jobs.isEmpty || $0.stopping }) { state -> (@Sendable () -> Void)? in
                state.jobs.isEmpty ? nil : state.jobs.removeFirst()
            }
            guard let job else { break }
            job()
        }
        state.withLockBroadcasting { $0.running -= 1 }
    }
}
