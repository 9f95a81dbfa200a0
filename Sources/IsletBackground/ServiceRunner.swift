import IsletSync

/// Starts background services in a declared order and stops them in reverse: each
/// stop cancels a service's task and waits for its `run` to return before the next
/// is stopped, so that what a service leans on (a client, the database) is still
/// there while it stops.
public final class ServiceRunner: Sendable {
    private let services: [any BackgroundService]
    private let tasks = Lock<[Task<Void, Never>]>([])

    /// A runner of `services`, in the order they start.
    public init(_ services: [any BackgroundService]) {
        self.services = services
    }

    /// Prepares and starts, in order, each service not started yet, up to the first
    /// `count` (all when nil). When a preparation throws, the start stops there and
    /// the error is thrown; `stop` stops those started.
    public func start(upTo count: Int? = nil) throws {
        let started = tasks.withLock { $0.count }
        for service in services[min(started, count ?? services.count)..<(count ?? services.count)] {
            try service.prepare()
            let task = Task { await service.run() }
            tasks.withLock { $0.append(task) }
        }
    }

    /// Stops the services started, the last started first, each to its end.
    public func stop() async {
        while let task = tasks.withLock({ $0.popLast() }) {
            task.cancel()
            await task.value
        }
    }
}
