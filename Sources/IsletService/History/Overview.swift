public import Foundation
import IsletCore
public import Storage

/// The periods an app's overview covers, each in buckets of a fixed length.
public enum OverviewPeriod: String, Sendable, Hashable, CaseIterable {
    case hour, day, week

    /// The period's length.
    public var seconds: Int64 {
        switch self {
        case .hour: 3_600
        case .day: 86_400
        case .week: 604_800
        }
    }

    /// One bucket's length: 12 buckets of 5 minutes, 24 of an hour, 28 of 6 hours.
    public var bucketSeconds: Int64 {
        switch self {
        case .hour: 300
        case .day: 3_600
        case .week: 21_600
        }
    }

    /// The period that ends with the bucket holding `now`: whole buckets (counted
    /// from the Unix epoch), so that two looks within a bucket see the same ones.
    public func range(endingAt now: Date) -> (from: Date, to: Date) {
        let length = bucketSeconds * 1_000
        let end = (now.unixMilliseconds / length + 1) * length
        return (Date(unixMilliseconds: end - seconds * 1_000), Date(unixMilliseconds: end))
    }
}

/// An app's overview as the API and the dashboard show it.
public struct OverviewView: Sendable, Hashable {
    public let period: OverviewPeriod
    public let from: Date
    public let to: Date
    public let overview: AppOverview

    /// The buckets' sums.
    public var totals: OverviewBucket {
        overview.buckets.reduce(into: OverviewBucket(start: from)) { total, bucket in
            total.sends += bucket.sends
            total.targets += bucket.targets
            total.delivered += bucket.delivered
            total.failed += bucket.failed
            total.received += bucket.received
            total.taps += bucket.taps
            total.downgraded += bucket.downgraded
            total.deferred += bucket.deferred
            total.refused += bucket.refused
            total.deadTokens += bucket.deadTokens
        }
    }
}

extension HistoryService {
    /// What `appID`'s sends over `period`, up to now, came to, in buckets: read from
    /// each send's counters and the rows of what differed, so that a period of a
    /// million pushes costs its sends, not its pushes.
    public func overview(appID: String, period: OverviewPeriod) async throws(ServiceError) -> OverviewView {
        let (from, to) = period.range(endingAt: environment.clock.now())
        let overview = try await environment.read { (session: any Stores) in
            try session.overview(appID: appID, from: from, to: to, bucketSeconds: period.bucketSeconds)
        }
        return OverviewView(period: period, from: from, to: to, overview: overview)
    }
}

extension HistoryService {
    /// The most of each kind a lookup answers.
    public static let lookupLimit = 20

    /// The records of `appID` that `text` names (see ``PushHistory/lookup(appID:text:limit:)``):
    /// the text trimmed, and tokens lowercased; nothing for text of spaces alone.
    public func lookup(appID: String, text: String) async throws(ServiceError) -> LookupResult {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return LookupResult() }
        let limit = Self.lookupLimit
        let lowered = trimmed.lowercased()
        return try await environment.read { (session: any Stores) in
            var found = try session.lookup(appID: appID, text: trimmed, limit: limit)
            // A token typed in capitals: its prefix again, lowercased.
            if lowered != trimmed {
                let more = try session.lookup(appID: appID, text: lowered, limit: limit)
                for device in more.devices where found.devices.count < limit
                    && !found.devices.contains(where: { $0.deviceID == device.deviceID }) && device.matched.hasSuffix("token")
                {
                    found.devices.append(device)
                }
                if found.copies.isEmpty { found.copies = more.copies }
            }
            return found
        }
    }
}
