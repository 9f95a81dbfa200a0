import IsletSync

/// Starts background services in a declared order and stops them in reverse: each
/// stop cancels a service's task and waits for its `run` to return before the next
/// is stopped, so that what a service leans on (a client, the database) is still
/// there while it stops. Nothing runs before `start`; a service a stop finds not
/// started is released by its `stopUnstarted` (a `ClosingService` closes) in its
/// turn, so that a runner stopped without a start still closes what it was given.
public final class ServiceRunner: Sendable {
    private let services: [any BackgroundService]
    private let state = Lock(State())

    private struct State {
        /// The tasks of the services started: `services[0..<tasks.count]`.
        var tasks: [Task<Void, Never>] = []
        /// Whether a `start` is under way.
        var starting = false
        /// The stop, once one was asked for: later calls wait for the same.
        var stop: Task<Void, Never>?
        /// Stops waiting for a `start` under way to end.
        var startEnded: [CheckedContinuation<Void, Never>] = []
    }

    /// What `start` throws once a stop was asked for: a stopped runner starts nothing.
    public struct Stopped: Error, Equatable {}

    /// A runner of `services`, in the order they start.
    public init(_ services: [any BackgroundService]) {
        self.services = services
    }

    /// Prepares and starts, in order, each service not started yet, up to the first
    /// `count` (all when nil; a count beyond the services is all of them). When a
    /// preparation throws, the start stops there and the error is thrown; `stop`
    /// stops those started. Throws `Stopped` once a stop was asked for (a stop asked
    /// for during a start lets the service being prepared start, then waits for the
    /// start to end). One start at a time.
    public func start(upTo count: Int? = nil) throws {
        let limit = min(max(count ?? services.count, 0), services.count)
        try state.withLock { (state) throws(Stopped) in
            guard state.stop == nil else { throw Stopped() }
            precondition(!state.starting, "ServiceRunner.start called while another start runs")
            state.starting = true
        }
        defer {
            let waiting = state.withLock { state -> [CheckedContinuation<Void, Never>] in
                state.starting = false
                defer { state.startEnded = [] }
                return state.startEnded
            }
            for stop in waiting { stop.resume() }
        }
        while true {
            let next = try state.withLock { (state) throws(Stopped) -> Int? in
                guard state.stop == nil else { throw Stopped() }
                return state.tasks.count < limit ? state.tasks.count : nil
            }
            guard let next else { return }
            let service = services[next]
            try service.prepare()
            let task = Task { await service.run() }
            state.withLock { $0.tasks.append(task) }
        }
    }

    /// Stops the services, the last first, each to its end: a started one by
    /// cancelling its task, one never started by its `stopUnstarted`. Once: a second
    /// call, concurrent or later, waits for the first stop to end.
    public func stop() async {
        let stopping = state.withLock { state -> Task<Void, Never> in
            if let stop = state.stop { return stop }
            let stop = Task { [self] in await stopAll() }
            state.stop = stop
            return stop
        }
        await stopping.value
    }

    private func stopAll() async {
        // A start under way ends first (it starts nothing more once a stop is asked for).
        await withCheckedContinuation { (ended: CheckedContinuation<Void, Never>) in
            let starting = state.withLock { state -> Bool in
                if state.starting { state.startEnded.append(ended) }
                return state.starting
            }
            if !starting { ended.resume() }
        }
        let tasks = state.withLock { $0.tasks }
        for index in services.indices.reversed() {
            if index < tasks.count {
                tasks[index].cancel()
                await tasks[index].value
            } else {
                await services[index].stopUnstarted()
            }
        }
    }
}
