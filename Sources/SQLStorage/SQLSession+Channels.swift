import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    private static let channelColumns: SQL =
        "channel_id, apns_channel_id, environment, message_storage_policy, activity_id, created_at"

    /// Adds a channel of `appID`; `conflict` when its id is taken.
    public func insertChannel(appID: String, _ channel: ChannelRecord) throws {
        try recoveringFromConflict { try run(
            """
            INSERT INTO channels (app_id, \(sql: Self.channelColumns))
            VALUES (\(appID), \(channel.channelID), \(channel.apnsChannelID), \(channel.environment.rawValue),
                \(channel.storesMostRecent ? "most_recent" : "none"), \(channel.activityID),
                \(channel.createdAt.unixMilliseconds))
            """) }
    }

    /// A page of the app's channels in the order of their ids, after `afterChannelID`.
    public func channels(appID: String, afterChannelID: String?, limit: Int) throws -> [ChannelRecord] {
        let after: SQL = afterChannelID.map { " AND channel_id > \($0)" } ?? ""
        return try query(
            """
            SELECT \(sql: Self.channelColumns) FROM channels WHERE app_id = \(appID)\(sql: after)
            ORDER BY channel_id LIMIT \(limit)
            """
        ).map(Self.channelRecord)
    }

    /// The channel `channelID` of `appID`.
    public func channel(appID: String, channelID: String) throws -> ChannelRecord? {
        try query(
            "SELECT \(sql: Self.channelColumns) FROM channels WHERE app_id = \(appID) AND channel_id = \(channelID)"
        ).first.map(Self.channelRecord)
    }

    /// Forgets a channel. Answers whether there was one.
    public func deleteChannel(appID: String, channelID: String) throws -> Bool {
        try run("DELETE FROM channels WHERE app_id = \(appID) AND channel_id = \(channelID)") > 0
    }

    /// How many channels the app has in `environment`.
    public func channelCount(appID: String, environment: APNsEnvironment) throws -> Int {
        let rows = try query(
            "SELECT count(*) AS n FROM channels WHERE app_id = \(appID) AND environment = \(environment.rawValue)")
        return Int(try rows.first?.int64("n") ?? 0)
    }

    private static func channelRecord(_ row: SQLRow) throws -> ChannelRecord {
        ChannelRecord(
            channelID: try row.string("channel_id"), apnsChannelID: try row.string("apns_channel_id"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            storesMostRecent: try row.string("message_storage_policy") == "most_recent",
            activityID: row.optionalString("activity_id"), createdAt: try row.date("created_at"))
    }
}
