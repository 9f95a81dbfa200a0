import IsletSync

/// What acts when time passes, without a request: activities whose `end_at` has
/// come are ended, schedule items, timeline entries and renewals whose time has
/// come are fired, push-to-starts never confirmed are reported and old events
/// purged, through the services as a request would. It looks every quarter
/// second (a due item is queued well within a second), reading time from the
/// services' clock, so that a test can move the clock instead of waiting. The items
/// themselves stay in the database.
public final class Timekeeper: Sendable {
    private let activities: ActivityService
    private let schedules: ScheduleService
    private let events: EventService
    private let task = Lock<Task<Void, Never>?>(nil)

    /// Creates the runner; nothing happens until `start`.
    public init(services: Services) {
        activities = services.activities
        schedules = services.schedules
        events = services.events
    }

    /// Starts looking (once).
    public func start() {
        let activities = self.activities
        let schedules = self.schedules
        let events = self.events
        task.withLock { task in
            guard task == nil else { return }
            task = Task {
                var lastPurge = ContinuousClock.now - .seconds(3_600)
                while !Task.isCancelled {
                    await schedules.fireDue()
                    await activities.endDue()
                    await events.reportUnconfirmedStarts()
                    if ContinuousClock.now - lastPurge >= .seconds(events.purgeInterval) {
                        lastPurge = ContinuousClock.now
                        await events.purgeExpired()
                    }
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
