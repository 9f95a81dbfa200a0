public import Foundation
public import IsletCore
public import Storage

extension SQLSession {
    private static let channelColumns: SQL =
        "channel_id, apns_channel_id, environment, message_storage_policy, activity_id, created_at, managed"

    /// Adds a channel of `appID`; `conflict` when its id is taken.
    public func insertChannel(appID: String, _ channel: ChannelRecord) throws {
        try recoveringFromConflict { try run(
            """
            INSERT INTO channels (app_id, \(sql: Self.channelColumns))
            VALUES (\(appID), \(channel.channelID), \(channel.apnsChannelID), \(channel.environment.rawValue),
                \(channel.storesMostRecent ? "most_recent" : "none"), \(channel.activityID),
                \(channel.createdAt.unixMilliseconds), \(channel.managed))
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

    /// Gives the channels `channelIDs` to the activity, whose delivery becomes
    /// `channel`.
    public func assignChannels(
        appID: String, activityID: String, channelIDs: [String], expiredBy: Date
    ) throws -> [String] {
        try run("UPDATE activities SET delivery = 'channel' WHERE app_id = \(appID) AND activity_id = \(activityID)")
        var taken: [String] = []
        for channelID in channelIDs {
            // Checked in the statement that takes it, under the row's lock.
            let changed = try run(
                """
                UPDATE channels SET activity_id = \(activityID)
                WHERE app_id = \(appID) AND channel_id = \(channelID) AND (activity_id IS NULL OR activity_id = \(activityID)
                    OR NOT EXISTS (
                        SELECT 1 FROM activities a WHERE a.app_id = channels.app_id AND a.activity_id = channels.activity_id
                            AND a.status <> 'ended' AND a.started_at > \(expiredBy.unixMilliseconds)))
                """)
            if changed == 0 { taken.append(channelID) }
        }
        return taken
    }

    /// The channels of an activity, in the order of their ids.
    public func activityChannels(appID: String, activityID: String) throws -> [ChannelRecord] {
        try query(
            """
            SELECT \(sql: Self.channelColumns) FROM channels WHERE app_id = \(appID) AND activity_id = \(activityID)
            ORDER BY channel_id
            """
        ).map(Self.channelRecord)
    }

    /// Channels Islet created whose activity is over (see `ChannelStore`).
    public func retiredChannels(
        endedBy: Date, expiredBy: Date, after: ChannelCursor?, limit: Int
    ) throws -> [(appID: String, channel: ChannelRecord)] {
        let ended = endedBy.unixMilliseconds
        let expired = expiredBy.unixMilliseconds
        let past: SQL = after.map { " AND (c.app_id > \($0.appID) OR (c.app_id = \($0.appID) AND c.channel_id > \($0.channelID)))" } ?? ""
        return try query(
            """
            SELECT c.app_id, c.channel_id, c.apns_channel_id, c.environment, c.message_storage_policy, c.activity_id,
                c.created_at, c.managed
            FROM channels c LEFT JOIN activities a ON a.app_id = c.app_id AND a.activity_id = c.activity_id
            WHERE c.managed\(sql: past) AND (
                (a.activity_id IS NULL AND c.created_at <= \(expired))
                OR (a.status = 'ended' AND a.ended_at <= \(ended))
                OR a.started_at <= \(expired))
            ORDER BY c.app_id, c.channel_id LIMIT \(limit)
            """
        ).map { (appID: try $0.string("app_id"), channel: try Self.channelRecord($0)) }
    }

    private static func channelRecord(_ row: SQLRow) throws -> ChannelRecord {
        var channel = ChannelRecord(
            channelID: try row.string("channel_id"), apnsChannelID: try row.string("apns_channel_id"),
            environment: try row.enumValue("environment", as: APNsEnvironment.self),
            storesMostRecent: try row.string("message_storage_policy") == "most_recent",
            activityID: row.optionalString("activity_id"), createdAt: try row.date("created_at"))
        channel.managed = try row.bool("managed")
        return channel
    }
}
