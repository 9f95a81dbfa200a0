public import Foundation
public import Storage

// The history's retention (`HistoryStore`): each purge deletes a small batch in the
// caller's transaction, every statement bounded by its `limit` and led by an index
// (migration 23's `sends_by_time`, `pushes_by_send` and `activities_by_start`, and
// the tables' own keys), so that a batch holds the writer for milliseconds however
// much history there is. The same statements on both dialects.
extension SQLSession {
    /// The statuses of a push that is done with: it changes no more.
    private static let settled: SQL = "('sent', 'failed', 'dropped')"

    // MARK: - Sends and pushes

    /// Deletes settled pushes of sends made before `before`, then those sends once no
    /// push is left of them (see `HistoryStore`). Everything the queue's tables are
    /// to the retention is here.
    public func purgeSettledSends(appID: String, before: Date, limit: Int) throws -> PurgedHistory {
        var purged = PurgedHistory()
        guard limit > 0 else { return purged }
        let cutoff = before.unixMilliseconds
        // The oldest sends made before the cutoff (by sends_by_time) that have
        // something to delete: a push done with, or no push left. Not the
        // push-to-starts of an activity still running: what reports starts no
        // device confirmed reads them for as long as the activity runs. (Each
        // check stops at the send's first push that answers it, by pushes_by_send;
        // a send that only waits for pushes still queued is passed over, so that a
        // batch that deletes less than its limit leaves nothing to delete.) A send
        // by windows goes once it finished: its copies with no row of their own
        // were told by it.
        let sendIDs = try query(
            """
            SELECT s.id FROM sends s
            WHERE s.app_id = \(appID) AND s.created_at < \(cutoff)
                AND (s.audience IS NULL OR (s.finished_at IS NOT NULL AND s.finished_at < \(cutoff)))
                AND NOT (s.event = 'start' AND s.activity_id IS NOT NULL AND EXISTS (
                    SELECT 1 FROM activities a
                    WHERE a.app_id = s.app_id AND a.activity_id = s.activity_id AND a.status <> 'ended'))
                AND (EXISTS (SELECT 1 FROM pushes p
                        WHERE p.send_id = s.id AND p.status IN \(sql: Self.settled) AND p.updated_at < \(cutoff))
                    OR NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id))
            ORDER BY s.created_at, s.id LIMIT \(limit)
            """
        ).map { try $0.int64("id") }
        guard !sendIDs.isEmpty else { return purged }
        // Their pushes that settled and last changed before the cutoff (by
        // pushes_by_send): none the budgets count, and never one queued or being
        // sent. The status is checked again on the row deleted.
        purged.pushes = try run(
            """
            DELETE FROM pushes WHERE id IN (
                SELECT id FROM pushes
                WHERE send_id \(in: sendIDs) AND status IN \(sql: Self.settled) AND updated_at < \(cutoff)
                LIMIT \(limit))
                AND status IN \(sql: Self.settled)
            """)
        var left = limit - purged.pushes
        guard left > 0 else { return purged }
        // Their receipts, by the receipts' key (a send's first).
        purged.receipts = try run(
            """
            DELETE FROM receipts WHERE (send_id, device_id) IN (
                SELECT send_id, device_id FROM receipts WHERE send_id \(in: sendIDs) LIMIT \(left))
            """)
        left -= purged.receipts
        guard left > 0 else { return purged }
        // The sends no push or receipt is left of: every push of theirs settled and
        // went. The pushes' foreign key reads pushes_by_send for each.
        purged.sends = try run(
            """
            DELETE FROM sends WHERE id IN (
                SELECT s.id FROM sends s
                WHERE s.id \(in: sendIDs) AND NOT EXISTS (SELECT 1 FROM pushes p WHERE p.send_id = s.id)
                    AND NOT EXISTS (SELECT 1 FROM receipts r WHERE r.send_id = s.id)
                LIMIT \(left))
            """)
        return purged
    }

    // MARK: - Activities

    /// Deletes activities that ended before `endedBefore`, their copies, audiences,
    /// taps, settled schedule items and timelines first (see `HistoryStore`).
    public func purgeEndedActivities(appID: String, endedBefore: Date, limit: Int) throws -> PurgedHistory {
        var purged = PurgedHistory()
        guard limit > 0 else { return purged }
        let cutoff = endedBefore.unixMilliseconds
        // The oldest activities that ended before the cutoff (by activities_by_start:
        // one that ended before it started before it) and that nothing still needs:
        // no send left (its pushes go first), no schedule item waiting, no renewal
        // to come, no channel Islet made for it still to be retired (the retiring
        // reads its end).
        let activityIDs = try query(
            """
            SELECT a.activity_id FROM activities a
            WHERE a.app_id = \(appID) AND a.started_at < \(cutoff) AND a.status = 'ended' AND a.ended_at < \(cutoff)
                AND NOT EXISTS (SELECT 1 FROM sends s WHERE s.app_id = a.app_id AND s.activity_id = a.activity_id)
                AND NOT EXISTS (SELECT 1 FROM schedules k
                    WHERE k.app_id = a.app_id AND k.activity_id = a.activity_id AND k.status = 'scheduled')
                AND NOT EXISTS (SELECT 1 FROM timelines t
                    WHERE t.app_id = a.app_id AND t.activity_id = a.activity_id AND t.renew_at IS NOT NULL)
                AND NOT EXISTS (SELECT 1 FROM channels c
                    WHERE c.app_id = a.app_id AND c.activity_id = a.activity_id AND c.managed)
            ORDER BY a.started_at, a.activity_id LIMIT \(limit)
            """
        ).map { try $0.string("activity_id") }
        guard !activityIDs.isEmpty else { return purged }
        var left = limit

        /// Deletes up to `left` rows of `table` of the activities, each found by
        /// `key` (the columns after `app_id` that name a row); answers how many.
        func deleteRows(of table: String, key: String, where condition: SQL = "") throws -> Int {
            guard left > 0 else { return 0 }
            let deleted = try run(
                """
                DELETE FROM \(raw: table) WHERE app_id = \(appID) AND (\(raw: key)) IN (
                    SELECT \(raw: key) FROM \(raw: table)
                    WHERE app_id = \(appID) AND activity_id \(in: activityIDs)\(sql: condition)
                    LIMIT \(left))
                """)
            left -= deleted
            return deleted
        }

        purged.copies = try deleteRows(of: "activity_instances", key: "activity_id, device_id")
        purged.audience = try deleteRows(of: "activity_audience", key: "activity_id, kind, value")
        purged.taps = try deleteRows(of: "taps", key: "activity_id, device_id, push_id, tapped_at")
        purged.schedules = try deleteRows(of: "schedules", key: "seq", where: " AND status <> 'scheduled'")
        purged.schedules += try deleteRows(of: "timelines", key: "activity_id")
        guard left > 0 else { return purged }
        // The activities nothing is left of.
        purged.activities = try run(
            """
            DELETE FROM activities WHERE app_id = \(appID) AND activity_id IN (
                SELECT a.activity_id FROM activities a
                WHERE a.app_id = \(appID) AND a.activity_id \(in: activityIDs) AND a.status = 'ended'
                    AND NOT EXISTS (SELECT 1 FROM activity_instances i
                        WHERE i.app_id = a.app_id AND i.activity_id = a.activity_id)
                    AND NOT EXISTS (SELECT 1 FROM activity_audience u
                        WHERE u.app_id = a.app_id AND u.activity_id = a.activity_id)
                    AND NOT EXISTS (SELECT 1 FROM taps p WHERE p.app_id = a.app_id AND p.activity_id = a.activity_id)
                    AND NOT EXISTS (SELECT 1 FROM schedules k WHERE k.app_id = a.app_id AND k.activity_id = a.activity_id)
                    AND NOT EXISTS (SELECT 1 FROM timelines t WHERE t.app_id = a.app_id AND t.activity_id = a.activity_id)
                    AND NOT EXISTS (SELECT 1 FROM sends s WHERE s.app_id = a.app_id AND s.activity_id = a.activity_id)
                LIMIT \(left))
            """)
        if purged.activities > 0 {
            // The app's own channels no longer name an activity that is gone: a later
            // activity of the same id must not find them as its own.
            try run(
                """
                UPDATE channels SET activity_id = NULL
                WHERE app_id = \(appID) AND activity_id \(in: activityIDs) AND NOT EXISTS (
                    SELECT 1 FROM activities a WHERE a.app_id = channels.app_id AND a.activity_id = channels.activity_id)
                """)
        }
        return purged
    }

    // MARK: - Summary

    /// The app's activities, sends and pushes, counted over their indexes (the
    /// pushes with rows through each send's, pushes_by_send; those a send's windows
    /// told, by its count), and the oldest one's time.
    public func historySummary(appID: String) throws -> HistorySummary {
        guard let row = try query(
            """
            SELECT (SELECT count(*) FROM activities WHERE app_id = \(appID)) AS activities,
                (SELECT count(*) FROM sends WHERE app_id = \(appID)) AS sends,
                (SELECT count(*) FROM sends s JOIN pushes p ON p.send_id = s.id WHERE s.app_id = \(appID))
                    + (SELECT CAST(coalesce(sum(sent), 0) AS BIGINT) FROM sends WHERE app_id = \(appID)) AS pushes,
                (SELECT min(started_at) FROM activities WHERE app_id = \(appID)) AS oldest_activity,
                (SELECT min(created_at) FROM sends WHERE app_id = \(appID)) AS oldest_send
            """).first
        else { throw StoreError(.corrupt, "the history's counts returned no row") }
        let oldest = [row.optionalDate("oldest_activity"), row.optionalDate("oldest_send")].compactMap { $0 }.min()
        return HistorySummary(
            activities: Int(try row.int64("activities")), sends: Int(try row.int64("sends")),
            pushes: Int(try row.int64("pushes")), oldestAt: oldest)
    }
}
