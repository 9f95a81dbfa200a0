import IsletSync

/// What acts when time passes, without a request: activities whose `end_at` has
/// come are ended, and schedule items, timeline entries and renewals whose time has
/// come are fired, through the services as a request would. It looks every quarter
/// second (a due item is queued well within a second), reading time from the
/// services' clock, so that a test can move the clock instead of waiting. The items
/// themselves stay in the database.
public final class Timekeeper: Sendable {
    private let activities: ActivityService
    private let schedules: ScheduleService
    private let task = Lock<Task<Void, Never>?>(nil)

    /// Creates the runner; nothing happens until `start`.
    public init(services: Services) {
        activities = services.activities
        schedules = services.schedules
    }

    /// Starts looking (once).
    public func start() {
        let activities = self.activities
        let schedules = self.schedules
        task.withLock { task in
            guard task == nil else { return }
            task = Task {
                while !Task.isCancelled {
                    await schedules.fireDue()
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
