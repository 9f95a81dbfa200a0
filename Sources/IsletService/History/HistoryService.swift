public import Foundation
public import IsletBackground
import IsletCore
import IsletLog
public import Storage

/// How the history's purge runs.
public struct HistorySettings: Sendable, Hashable {
    /// Time between two purges of every app's history, on the keeper's clock.
    public var interval: TimeInterval = 60
    /// Rows one transaction deletes, at most: a batch holds the writer for a few
    /// milliseconds.
    public var batchSize = 500
    /// Time between two batches while more is left to delete, so that the other
    /// writers get the database in between.
    public var pause: TimeInterval = 0.02

    /// The defaults.
    public init() {}
}

/// An app's history as `GET /v1/apps/{app_id}` shows it.
public struct HistoryView: Sendable, Hashable {
    /// Days it is kept: the app's own retention, or the server's.
    public let retentionDays: Double
    /// What it holds.
    public let summary: HistorySummary
}

/// The history's retention: each app's activities that ended and sends that
/// settled are deleted once older than its retention (its own when it set a
/// shorter one, else the server's), a batch per transaction, one node at a time;
/// and what an app's history holds.
public struct HistoryService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = AppStore & HistoryStore & NodeCoordination & PushHistory

    let environment: ServiceEnvironment
    /// How the purge runs.
    public let settings: HistorySettings

    /// Creates the service.
    public init(environment: ServiceEnvironment, settings: HistorySettings = HistorySettings()) {
        self.environment = environment
        self.settings = settings
    }

    /// Days `app`'s history is kept: its own retention when shorter than the
    /// server's, else the server's.
    public func retentionDays(of app: AppRecord) -> Double {
        HistoryRetention.seconds(serverDays: environment.historyRetentionDays, appDays: app.historyRetentionDays) / 86_400
    }

    /// What `app`'s history holds now, and how long it is kept.
    public func view(of app: AppRecord) async throws(ServiceError) -> HistoryView {
        let appID = app.id
        let summary = try await environment.read { (session: any Stores) in try session.historySummary(appID: appID) }
        return HistoryView(retentionDays: retentionDays(of: app), summary: summary)
    }

    /// Deletes, app by app, the history older than each app's retention, a batch
    /// per transaction; while a batch comes back full, waits
    /// ``HistorySettings/pause`` on `sleeper` (when given, and the pause is not 0)
    /// and deletes the next. Stops at the first failure (logged; the next purge goes
    /// on from there), when another node is purging (it holds the job), or when the
    /// task is cancelled. Answers what it deleted.
    @discardableResult
    public func purge(pausingOn sleeper: (any Sleeper)? = nil) async -> PurgedHistory {
        let logger = environment.logger
        let apps: [AppRecord]
        do {
            apps = try await environment.store.read { (session: any Stores) in try session.apps() }
        } catch {
            logger.error("cannot read the apps whose history to purge", ("error", .string("\(error)")))
            return PurgedHistory()
        }
        var total = PurgedHistory()
        for app in apps where !Task.isCancelled {
            let before = environment.clock.now().addingTimeInterval(-retentionDays(of: app) * 86_400)
            var purged = PurgedHistory()
            while !Task.isCancelled {
                let batch: PurgedHistory
                do {
                    batch = try await purgeBatch(appID: app.id, before: before)
                } catch {
                    logger.error(
                        "purging old history failed", ("app", .string(app.id)), ("error", .string("\(error)")))
                    return total + purged
                }
                purged = purged + batch
                guard batch.total >= settings.batchSize else { break }
                if let sleeper, settings.pause > 0 { await sleeper.sleep(for: settings.pause) }
            }
            if purged.total > 0 {
                logger.debug(
                    "history purged", ("app", .string(app.id)), ("activities", .int(purged.activities)),
                    ("copies", .int(purged.copies)), ("audience", .int(purged.audience)), ("taps", .int(purged.taps)),
                    ("schedules", .int(purged.schedules)), ("sends", .int(purged.sends)), ("pushes", .int(purged.pushes)))
            }
            total = total + purged
        }
        if total.total > 0 {
            logger.info(
                "old history deleted", ("activities", .int(total.activities)), ("sends", .int(total.sends)),
                ("pushes", .int(total.pushes)), ("rows", .int(total.total)))
        }
        return total
    }

    /// One transaction of an app's purge, at most a batch of rows: the settled
    /// sends first (an activity goes once no send of it is left), then the ended
    /// activities with what the batch leaves. Nothing when another node holds the
    /// job.
    func purgeBatch(appID: String, before: Date) async throws -> PurgedHistory {
        let limit = settings.batchSize
        return try await environment.store.write { (session: any Stores) -> PurgedHistory in
            guard try session.claimPeriodicJob("history-retention") else { return PurgedHistory() }
            let sends = try session.purgeSettledSends(appID: appID, before: before, limit: limit)
            let left = limit - sends.total
            guard left > 0 else { return sends }
            return sends + (try session.purgeEndedActivities(appID: appID, endedBefore: before, limit: left))
        }
    }
}

/// The loop that purges old history: a purge of every app's, then a sleep of
/// ``HistorySettings/interval`` on its sleeper, until cancelled. Apart from the
/// timekeeper, so that a long purge (a database's first, after a year of history)
/// never holds up what is due.
public final class HistoryKeeper: BackgroundService {
    private let history: HistoryService
    private let sleeper: any Sleeper

    /// A keeper pacing itself on `sleeper`; nothing happens until `run`.
    public init(history: HistoryService, sleeper: any Sleeper = SystemSleeper()) {
        self.history = history
        self.sleeper = sleeper
    }

    /// Purges, then sleeps, until cancelled (a batch in progress finishes first).
    public func run() async {
        while !Task.isCancelled {
            await history.purge(pausingOn: sleeper)
            await sleeper.sleep(for: history.settings.interval)
        }
    }
}
