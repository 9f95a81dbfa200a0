import Foundation
import IsletCore
public import Storage

extension SQLSession {
    /// The activity's sends before `beforeSendID`, newest first, by the
    /// `sends_by_activity` index: each send's own counters with those of its rows
    /// (the pushes that differed, or every push of a send made row by row).
    public func sendTimeline(
        appID: String, activityID: String, beforeSendID: Int64?, limit: Int
    ) throws -> [SendTimelineEntry] {
        try query(
            """
            SELECT \(sql: Self.sendCounterColumns), s.payload, s.drop_reason,
                (SELECT count(*) FROM pushes p WHERE p.send_id = s.id AND p.status IN ('failed', 'dropped')) AS failed,
                (SELECT CAST(coalesce(sum(p.taps), 0) AS BIGINT) FROM pushes p WHERE p.send_id = s.id) AS taps
            FROM sends s WHERE s.app_id = \(appID) AND s.activity_id = \(activityID)
                AND s.id < \(beforeSendID ?? Int64.max)
            ORDER BY s.id DESC LIMIT \(max(limit, 0))
            """
        ).map { row in
            SendTimelineEntry(
                sendID: try row.int64("id"), event: try row.enumValue("event", as: PushEvent.self),
                tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self), state: try row.string("state"),
                dropReason: row.optionalString("drop_reason"), targets: try row.int64("targets"),
                sent: try row.int64("sent"), failed: try row.int64("failed"), received: try row.int64("received"),
                taps: try row.int64("taps"), createdAt: try row.date("created_at"), payload: row["payload"].blob ?? Data())
        }
    }
}
