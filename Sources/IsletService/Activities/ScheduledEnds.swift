import IsletSync

/// Ends activities whose `end_at` has come, through the activity service as an end
/// command would. It looks every quarter second, reading time from the service's
/// clock, so that a test can move the clock instead of waiting.
public final class ScheduledEnds: Sendable {
    private let activities: ActivityService
    private let task = Lock<Task<Void, Never>?>(nil)

    /// Creates the runner; nothing happens until `start`.
    public init(activities: ActivityService) {
        self.activities = activities
    }

    /// Starts looking (once).
    public func start() {
        let activities = self.activities
        task.withLock { task in
            guard task == nil else { return }
            task = Task {
                while !Task.isCancelled {
                    await activities.endDue()
                    try? await Task.sleep(for: .milliseconds(250))
                }
            }
        }
    }

    /// Stops, waiting for a round in progress.
    public func stop() async {
        let running = task.withLock { task -> Task<Void, Never>? in
            defer { task = nil }
            return task
        }
        running?.cancel()
        await running?.value
    }
}
