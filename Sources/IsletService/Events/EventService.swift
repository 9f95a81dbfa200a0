public import Foundation
public import IsletCore
import IsletLog
public import Storage

/// A page of events, oldest first.
public struct EventPage: Sendable {
    /// The events.
    public let items: [EventRecord]
    /// The id to ask after for the next page, when this one was full.
    public let nextCursor: String?
}

/// How events are kept and watched.
public struct EventSettings: Sendable, Hashable {
    /// How long events are kept (`--event-retention-days`, 7).
    public var retention: TimeInterval = 7 * 86_400
    /// How long after APNs accepted a push-to-start its update token may take before
    /// `activity.start_unconfirmed` (`--start-confirm-minutes`, 10).
    public var startConfirmWindow: TimeInterval = 600
    /// How often old events are purged.
    public var purgeInterval: TimeInterval = 60

    /// The defaults.
    public init() {}
}

/// The outbox read back: pages of an app's events (`?after=`), the sweep that
/// reports push-to-starts never confirmed by an update token, and retention.
public struct EventService: Sendable {
    /// The part of the store this service touches: each of its transactions sees
    /// only these.
    typealias Stores = ActivityStore & NodeCoordination & EventStore

    private let environment: ServiceEnvironment
    private let settings: EventSettings

    /// Events per page, at most.
    public static let maxPage = 1_000
    /// Rows purged or reported per transaction.
    static let batchSize = 1_000

    /// Creates the service.
    public init(environment: ServiceEnvironment, settings: EventSettings) {
        self.environment = environment
        self.settings = settings
    }

    /// Tells the other nodes of a shared database that a stream of `appID` is open
    /// here (see ``EventStreamSlots/wanted(appID:now:)``); nothing on a database one
    /// node uses. A failure is logged: the stream goes on.
    public func announceStream(appID: String) async {
        guard environment.store.isShared else { return }
        do {
            try await environment.store.write(durable: false) { session in
                try session.notifyNodes(.eventsWanted(appID: appID))
            }
        } catch {
            environment.logger.warning(
                "cannot tell the other nodes of an open event stream", ("app", .string(appID)), ("error", .string("\(error)")))
        }
    }

    /// The patterns of a `types` list, or `invalid` naming `field` and the entry.
    public static func patterns(_ types: [String], field: String) throws(ServiceError) -> [EventPattern] {
        var patterns: [EventPattern] = []
        for (index, text) in types.enumerated() {
            guard let pattern = EventPattern(text) else {
                throw ServiceError.invalid(
                    "\(text) is no event type.", field: types.count == 1 ? field : "\(field)[\(index)]",
                    "must be \(EventPattern.explanation)")
            }
            patterns.append(pattern)
        }
        return patterns
    }

    /// The sequence after which to read, from an event id (`evt_…`), or `invalid`.
    public static func sequence(after id: String?, field: String) throws(ServiceError) -> Int64? {
        guard let id else { return nil }
        guard let sequence = EventRecord.sequence(of: id) else {
            throw ServiceError.invalid("\(id) is no event id.", field: field, "must be an event id such as evt_42")
        }
        return sequence
    }

    /// The app's events after `after` (from the oldest kept when nil), of `patterns`.
    public func page(appID: String, after: Int64?, patterns: [EventPattern], limit: Int) async throws(ServiceError) -> EventPage {
        let items = try await environment.read { (session: any Stores) in
            try session.events(appID: appID, after: after ?? 0, patterns: patterns, limit: limit)
        }
        return EventPage(items: items, nextCursor: items.count == limit ? items.last?.id : nil)
    }

    /// The newest event's sequence: where a stream without `Last-Event-ID` starts.
    public func latestSequence() async throws(ServiceError) -> Int64 {
        try await environment.read { (session: any Stores) in try session.latestEventSequence() }
    }

    /// Reports every push-to-start APNs accepted more than `startConfirmWindow` ago
    /// whose device never sent an update token (`activity.start_unconfirmed`, once
    /// per device's copy). Answers how many.
    @discardableResult
    public func reportUnconfirmedStarts() async -> Int {
        let now = environment.clock.now()
        let cutoff = now.addingTimeInterval(-settings.startConfirmWindow)
        do {
            return try await environment.store.write { (session: any Stores) -> Int in
                guard try session.claimPeriodicJob("unconfirmed-starts") else { return 0 }
                let found = try session.claimUnconfirmedStarts(sentBefore: cutoff, now: now, limit: Self.batchSize)
                try session.appendEvents(found.map { start in
                    NewEvent(
                        appID: start.appID, type: .activityStartUnconfirmed, activityID: start.activityID, occurredAt: now,
                        data: [
                            "activity_id": .string(start.activityID), "device_id": .string(start.deviceID),
                            "apns_id": .string(start.apnsID), "sent_at": .string(RFC3339.string(start.sentAt)),
                            "waited_seconds": .integer(Int64(now.timeIntervalSince(start.sentAt).rounded())),
                        ])
                })
                return found.count
            }
        } catch {
            environment.logger.error("checking unconfirmed starts failed", ("error", .string("\(error)")))
            return 0
        }
    }

    /// Deletes events older than the retention period (with their finished webhook
    /// deliveries). Answers how many.
    @discardableResult
    public func purgeExpired() async -> Int {
        let before = environment.clock.now().addingTimeInterval(-settings.retention)
        var total = 0
        do {
            while true {
                let purged = try await environment.store.write { (session: any Stores) -> Int in
                    guard try session.claimPeriodicJob("event-retention") else { return 0 }
                    return try session.purgeEvents(before: before, limit: Self.batchSize)
                }
                total += purged
                if purged < Self.batchSize { break }
            }
        } catch {
            environment.logger.error("purging old events failed", ("error", .string("\(error)")))
        }
        return total
    }

    /// How often the purge runs.
    var purgeInterval: TimeInterval { settings.purgeInterval }
}
