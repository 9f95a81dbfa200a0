public import Foundation
import IsletCore
public import Storage

// A receipt is one row of `receipts` (a send, a device), written once; its send
// counts it (`received`) and the device's copy keeps the newest it showed.
extension SQLSession {
    public func recordReceipt(
        appID: String, activityID: String, deviceID: String, sendID: Int64, receivedAt: Date, now: Date
    ) throws -> StoredReceipt? {
        guard try !query(
            "SELECT 1 AS known FROM sends WHERE id = \(sendID) AND app_id = \(appID) AND activity_id = \(activityID)"
        ).isEmpty else { return nil }
        let inserted = try run(
            """
            INSERT INTO receipts (send_id, device_id, app_id, activity_id, received_at, created_at)
            VALUES (\(sendID), \(deviceID), \(appID), \(activityID), \(receivedAt.unixMilliseconds), \(now.unixMilliseconds))
            ON CONFLICT (send_id, device_id) DO NOTHING
            """) > 0
        guard inserted else {
            guard let row = try query(
                "SELECT received_at FROM receipts WHERE send_id = \(sendID) AND device_id = \(deviceID)"
            ).first else { throw StoreError(.corrupt, "receipt of send \(sendID) is missing") }
            return StoredReceipt(receivedAt: try row.date("received_at"), counted: false)
        }
        try run("UPDATE sends SET received = received + 1 WHERE id = \(sendID)")
        // The copy keeps the newest send it showed (a receipt of an older one that
        // comes late leaves it).
        try run(
            """
            UPDATE activity_instances SET last_received_send_id = \(sendID), last_received_at = \(receivedAt.unixMilliseconds)
            WHERE app_id = \(appID) AND activity_id = \(activityID) AND device_id = \(deviceID)
                AND (last_received_send_id IS NULL OR last_received_send_id < \(sendID))
            """)
        return StoredReceipt(receivedAt: receivedAt, counted: true)
    }
}

extension SQLSession {
    /// A send's columns as its activity's answer and timeline show it: id, event,
    /// time, receipts, token kind, state, targets and sent (`s` is the send).
    static let sendCounterColumns: SQL = """
        s.id, s.event, s.created_at, s.received,
            coalesce(s.token_kind, (SELECT p.token_kind FROM pushes p WHERE p.send_id = s.id LIMIT 1),
                \(PushTokenKind.liveActivityUpdate.rawValue)) AS token_kind,
            coalesce(s.state, CASE WHEN EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id
                AND p.status IN ('queued', 'sending')) THEN 'queued' ELSE 'completed' END) AS state,
            CASE WHEN s.audience = 'copies'
                THEN s.total + (SELECT count(*) FROM pushes p WHERE p.send_id = s.id
                    AND (p.priority_downgraded = \(true) OR p.deferred_until IS NOT NULL))
                ELSE (SELECT count(*) FROM pushes p WHERE p.send_id = s.id) END AS targets,
            s.sent + (SELECT count(*) FROM pushes p WHERE p.send_id = s.id AND p.status = 'sent') AS sent
        """

    /// The activity's newest sends: a send by windows counts its audience and its
    /// rows queued apart from the start (downgraded, deferred); a send of rows (a
    /// broadcast) its rows.
    public func sendSummaries(appID: String, activityID: String, limit: Int) throws -> [SendSummary] {
        try query(
            """
            SELECT \(sql: Self.sendCounterColumns)
            FROM sends s WHERE s.app_id = \(appID) AND s.activity_id = \(activityID)
            ORDER BY s.id DESC LIMIT \(limit)
            """
        ).map { row in
            SendSummary(
                sendID: try row.int64("id"), event: try row.enumValue("event", as: PushEvent.self),
                tokenKind: try row.enumValue("token_kind", as: PushTokenKind.self), state: try row.string("state"),
                targets: try row.int64("targets"), sent: try row.int64("sent"), received: try row.int64("received"),
                createdAt: try row.date("created_at"))
        }
    }

    /// When each device said it showed each send of the activity, by send and device.
    func receipts(appID: String, activityID: String) throws -> [SendDevice: Date] {
        var found: [SendDevice: Date] = [:]
        for row in try query(
            "SELECT send_id, device_id, received_at FROM receipts WHERE app_id = \(appID) AND activity_id = \(activityID)")
        {
            found[SendDevice(sendID: try row.int64("send_id"), deviceID: try row.string("device_id"))] =
                try row.date("received_at")
        }
        return found
    }
}

/// A send and one device it went to.
struct SendDevice: Hashable {
    var sendID: Int64
    var deviceID: String
}
