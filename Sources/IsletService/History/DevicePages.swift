public import Storage

extension HistoryService {
    /// The most copies and pushes a device's page shows.
    public static let deviceHistoryLimit = 50
    /// The most devices a page of the app's devices holds.
    public static let devicePageLimit = 1...500

    /// The device `deviceID` of `appID`, with its push-to-start tokens, newest
    /// copies and newest pushes with rows; `notFound` when there is none.
    public func device(appID: String, deviceID: String) async throws(ServiceError) -> DeviceHistory {
        let limit = Self.deviceHistoryLimit
        let found = try await environment.read { (session: any Stores) in
            try session.deviceHistory(appID: appID, deviceID: deviceID, limit: limit)
        }
        guard let found else { throw ServiceError(.notFound, "There is no device \(deviceID).") }
        return found
    }

    /// A page of the app's devices, by id, after `cursor` (`nil`: from the first);
    /// answers them and the cursor of the next page (`nil` on the last).
    public func devices(
        appID: String, cursor: String?, limit: Int
    ) async throws(ServiceError) -> (devices: [DeviceRecord], nextCursor: String?) {
        let limit = min(max(limit, Self.devicePageLimit.lowerBound), Self.devicePageLimit.upperBound)
        let found = try await environment.read { (session: any Stores) in
            try session.devices(appID: appID, afterDeviceID: cursor, limit: limit)
        }
        return (found, found.count == limit ? found.last?.deviceID : nil)
    }
}

extension HistoryService {
    /// The most push rows a page holds.
    public static let pushRowLimit = 1...1_000

    /// A page of the app's push rows over `period` (ending with the bucket that holds
    /// now, as the overview counts them) that `reason`, `failedOnly` and `activityID`
    /// keep, newest first, before row `cursor`.
    public func pushRows(
        appID: String, period: OverviewPeriod, activityID: String?, reason: String?, failedOnly: Bool, cursor: Int64?,
        limit: Int
    ) async throws(ServiceError) -> (items: [DeviceHistory.Push], nextCursor: Int64?) {
        let limit = min(max(limit, Self.pushRowLimit.lowerBound), Self.pushRowLimit.upperBound)
        let (from, to) = period.range(endingAt: environment.clock.now())
        let filter = PushRowFilter(from: from, to: to, activityID: activityID, reason: reason, failedOnly: failedOnly)
        let found = try await environment.read { (session: any Stores) in
            try session.pushRows(appID: appID, filter: filter, beforeID: cursor, limit: limit)
        }
        return (found, found.count == limit ? found.last?.item.id : nil)
    }
}
