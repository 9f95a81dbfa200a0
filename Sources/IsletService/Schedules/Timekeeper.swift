public import Foundation
public import IsletBackground
import IsletSync
import Storage

/// The one service that acts when time passes, without a request: schedule items,
/// timeline entries and renewals whose time has come are fired, activities whose
/// `end_at` has come are ended, push-to-starts never confirmed are reported,
/// activities past ActivityKit's windows are ended by the clock, old events purged,
/// the channels of activities that are over deleted, and nodes and idempotency
/// answers no longer needed forgotten: each through its service, as a request
/// would, and each once across the nodes of a shared database.
///
/// It sleeps until the next moment something is due: the earliest timed item in the
/// database (`nextTimedWork`: a schedule item, a renewal, an end time), or the next
/// turn of a periodic job, whichever comes first. A write that adds or moves a timed
/// item rings its doorbell (the services' `timersChanged`, on this node; the store's
/// `timersChanged` notice, from another), so a new item due sooner is seen at once.
/// It never sleeps longer than ``longestSleep`` (a notice lost, a clock stepped),
/// nor less than ``shortestSleep`` when something is due (another node is firing
/// it: it looks again shortly rather than spin). Times are read on the services'
/// clock and slept on the sleeper's; the items themselves stay in the database.
public final class Timekeeper: BackgroundService {
    /// The longest sleep, whatever is due.
    public static let longestSleep: TimeInterval = 60
    /// The shortest sleep after a look that left something due.
    public static let shortestSleep: TimeInterval = 0.25
    /// How often unconfirmed push-to-starts are looked for: a start is reported at
    /// most this long after its confirmation window closed.
    public static let unconfirmedInterval: TimeInterval = 5
    /// How often activities past their windows are ended, and stale records forgotten.
    public static let expiryInterval: TimeInterval = 60

    private let activities: ActivityService
    private let schedules: ScheduleService
    private let events: EventService
    private let channels: ChannelService
    private let nodes: NodeService
    private let environment: ServiceEnvironment
    private let sleeper: any Sleeper
    private let doorbell: Doorbell
    private let looked = Lock(0)

    /// A timekeeper pacing itself on `sleeper`, woken early by `doorbell` (the one
    /// the services' `timersChanged` rings); nothing happens until `run`.
    public init(services: Services, sleeper: any Sleeper = SystemSleeper(), doorbell: Doorbell = Doorbell()) {
        activities = services.activities
        schedules = services.schedules
        events = services.events
        channels = services.channels
        nodes = services.nodes
        environment = services.environment
        self.sleeper = sleeper
        self.doorbell = doorbell
    }

    /// The looks made so far (the first at `run`'s start).
    public var looks: Int { looked.withLock { $0 } }

    /// Looks, then sleeps until the next due moment, until cancelled (a look in
    /// progress finishes first).
    public func run() async {
        var jobs = PeriodicJobs(purgeInterval: events.purgeInterval)
        while !Task.isCancelled {
            looked.withLock { $0 += 1 }
            await schedules.fireDue()
            await activities.endDue()
            let now = sleeper.now()
            if jobs.unconfirmed.take(at: now) { await events.reportUnconfirmedStarts() }
            if jobs.expiry.take(at: now) {
                await activities.expireOverdue()
                await nodes.forgetStale()
            }
            if jobs.purge.take(at: now) { await events.purgeExpired() }
            if jobs.retire.take(at: now) { await channels.retireEnded() }
            let due = await nextTimedWork()
            await sleeper.sleep(until: Self.wakeTime(due: due, jobs: jobs.next, now: sleeper.now()), doorbell: doorbell)
        }
    }

    /// The periodic jobs, each with its next turn.
    private struct PeriodicJobs {
        var unconfirmed = Periodic(every: Timekeeper.unconfirmedInterval)
        var expiry = Periodic(every: Timekeeper.expiryInterval)
        var purge: Periodic
        var retire = Periodic(every: ChannelService.retireInterval)

        init(purgeInterval: TimeInterval) {
            purge = Periodic(every: purgeInterval)
        }

        /// The soonest next turn.
        var next: Date? { [unconfirmed.next, expiry.next, purge.next, retire.next].compactMap { $0 }.min() }
    }

    /// When the next timed item is due, as a time of the sleeper's clock (the store
    /// answers on the services' clock); now when the store cannot tell (it is looked
    /// at again after the shortest sleep).
    private func nextTimedWork() async -> Date? {
        do {
            guard let due = try await environment.store.read({ (session: any ScheduleStore) in try session.nextTimedWork() }) else {
                return nil
            }
            return sleeper.now().addingTimeInterval(due.timeIntervalSince(environment.clock.now()))
        } catch {
            environment.logger.error("reading the next timed item failed", ("error", .string("\(error)")))
            return sleeper.now()
        }
    }

    /// When to look next, at `now`: the earliest of `due` (the next timed item) and
    /// `jobs` (the next periodic turn), no later than ``longestSleep`` from now and,
    /// when that moment has come already, ``shortestSleep`` from now. Pure.
    public static func wakeTime(due: Date?, jobs: Date?, now: Date) -> Date {
        let soonest = [due, jobs, now.addingTimeInterval(longestSleep)].compactMap { $0 }.min()!
        return soonest > now ? soonest : now.addingTimeInterval(shortestSleep)
    }
}
