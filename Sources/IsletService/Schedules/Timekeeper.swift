public import IsletBackground

/// What acts when time passes, without a request: activities whose `end_at` has
/// come are ended, schedule items, timeline entries and renewals whose time has
/// come are fired, push-to-starts never confirmed are reported, old events
/// purged and the channels of activities that are over deleted, through the services as a request would. It looks every quarter second
/// of its sleeper's clock (a due item is queued well within a second); what is due
/// is read on the services' clock. The items themselves stay in the database.
public final class Timekeeper: BackgroundService {
    /// Time between two looks, on the sleeper's clock.
    public static let interval = 0.25

    private let activities: ActivityService
    private let schedules: ScheduleService
    private let events: EventService
    private let channels: ChannelService
    private let sleeper: any Sleeper

    /// A timekeeper pacing itself on `sleeper`; nothing happens until `run`.
    public init(services: Services, sleeper: any Sleeper = SystemSleeper()) {
        activities = services.activities
        schedules = services.schedules
        events = services.events
        channels = services.channels
        self.sleeper = sleeper
    }

    /// Looks, then sleeps, until cancelled (a look in progress finishes first).
    public func run() async {
        var purge = Periodic(every: events.purgeInterval)
        var retire = Periodic(every: ChannelService.retireInterval)
        while !Task.isCancelled {
            await schedules.fireDue()
            await activities.endDue()
            await events.reportUnconfirmedStarts()
            if purge.take(at: sleeper.now()) { await events.purgeExpired() }
            if retire.take(at: sleeper.now()) { await channels.retireEnded() }
            await sleeper.sleep(for: Self.interval)
        }
    }
}
