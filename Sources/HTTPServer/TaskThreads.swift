import Foundation
import IsletSync
import IsletThreads

/// The threads that run a server's tasks: its async handlers, its admission checks
/// and the producers of its streamed responses, with everything they await that has
/// no executor of its own (`Task.sleep`, continuations, task groups).
///
/// Not the concurrency pool: the pool has as many threads as the machine has cores,
/// two here, and anything in the process that waits on them (a child process, a
/// database call or a thread's join, made from an async function) holds them all up.
/// A server whose answers and streams needed the pool would stop answering
/// meanwhile, for as long as the wait lasts (a minute was seen), while its clients'
/// deadlines ran out. On threads of its own it answers whatever the pool is doing.
///
/// Once stopped, jobs still queued and jobs that come later (a handler still
/// running when the server stopped, resumed afterwards) go to the global executor:
/// no task is lost.
///
/// `@unchecked Sendable`: the queue and the thread count are behind `state`.
final class TaskThreads: TaskExecutor, @unchecked Sendable {
    private let count: Int
    private let name: String
    private let state = ConditionLock(State())

    private struct State {
        var jobs: [UnownedJob] = []
        var head = 0
        var started = false
        var stopped = false
        var running = 0

        var hasJob: Bool { head < jobs.count }

        mutating func take() -> UnownedJob {
            let job = jobs[head]
            head += 1
            if head == jobs.count {
                jobs.removeAll(keepingCapacity: jobs.count <= 1_024)
                head = 0
            }
            return job
        }
    }

    /// `count` threads named `name`, started by `start`.
    init(count: Int, name: String) {
        self.count = max(1, count)
        self.name = name
    }

    /// Threads running now (they end soon after `stop`).
    var runningThreads: Int { state.withLock { $0.running } }

    /// Starts the threads; calling it again, or after `stop`, does nothing.
    func start() {
        let start = state.withLock { s -> Bool in
            guard !s.started, !s.stopped else { return false }
            s.started = true
            s.running = count
            return true
        }
        guard start else { return }
        for _ in 0..<count {
            let thread = Thread { [self] in
                nameCurrentThread(name)
                run()
            }
            thread.stackSize = 1 << 20
            thread.start()
        }
    }

    /// Lets the threads end once the queue is empty; from now on jobs go to the global
    /// executor. Does not wait for the threads: it may be called on one of them (by a
    /// server released inside its own handler).
    func stop() {
        let orphans = state.withLockBroadcasting { s -> [UnownedJob] in
            s.stopped = true
            // Never started: no thread will take what is queued.
            guard !s.started else { return [] }
            defer { s.jobs = []; s.head = 0 }
            return Array(s.jobs[s.head...])
        }
        for job in orphans { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        let queued = state.withLockSignaling { s -> Bool in
            // Before `start` the jobs wait for the threads; after `stop` none will run them.
            guard !s.stopped else { return false }
            s.jobs.append(job)
            return true
        }
        if !queued { globalConcurrentExecutor.enqueue(ExecutorJob(job)) }
    }

    private func run() {
        let executor = asUnownedTaskExecutor()
        while true {
            let job = state.wait(until: { $0.hasJob || $0.stopped }) { s -> UnownedJob? in
                if s.hasJob { return s.take() }
                s.running -= 1
                return nil
            }
            guard let job else { return }
            job.runSynchronously(on: executor)
        }
    }
}
