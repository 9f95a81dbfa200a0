public import Foundation
import IsletCore
public import Storage

// An app's overview reads each send once (its counters: targets, delivered and
// received by windows) and the rows of the pushes that differed (failures,
// downgrades, deferred starts, and every push of a send made row by row), joined to
// their send for its time; taps by their own time. Each bucket is the whole number
// of bucket lengths from the period's start; sums are cast to BIGINT (PostgreSQL
// sums a bigint as a numeric).
extension SQLSession {
    public func overview(appID: String, from: Date, to: Date, bucketSeconds: Int64) throws -> AppOverview {
        let start = from.unixMilliseconds
        let end = max(to.unixMilliseconds, start)
        let length = max(bucketSeconds, 1) * 1_000
        let count = Int((end - start + length - 1) / length)
        var buckets = (0..<count).map { OverviewBucket(start: Date(unixMilliseconds: start + Int64($0) * length)) }
        func bucket(_ row: SQLRow) throws -> Int? {
            let index = Int(try row.int64("b"))
            return buckets.indices.contains(index) ? index : nil
        }
        for row in try query(
            """
            SELECT (s.created_at - \(start)) / \(length) AS b, count(*) AS sends,
                CAST(coalesce(sum(CASE WHEN s.audience = 'copies' THEN s.total ELSE 0 END), 0) AS BIGINT) AS targets,
                CAST(coalesce(sum(s.sent), 0) AS BIGINT) AS delivered, CAST(coalesce(sum(s.received), 0) AS BIGINT) AS received
            FROM sends s WHERE s.app_id = \(appID) AND s.created_at >= \(start) AND s.created_at < \(end)
            GROUP BY b
            """)
        {
            guard let index = try bucket(row) else { continue }
            buckets[index].sends += try row.int64("sends")
            buckets[index].targets += try row.int64("targets")
            buckets[index].delivered += try row.int64("delivered")
            buckets[index].received += try row.int64("received")
        }
        // A push of a send by windows has a row only when it differed: it counts
        // among the targets when the window left it out (downgraded, deferred);
        // a send made row by row has a row for each of its pushes.
        for row in try query(
            """
            SELECT (s.created_at - \(start)) / \(length) AS b,
                CAST(coalesce(sum(CASE WHEN s.audience = 'copies'
                    AND p.priority_downgraded = \(false) AND p.deferred_until IS NULL THEN 0 ELSE 1 END), 0) AS BIGINT) AS targets,
                CAST(coalesce(sum(CASE WHEN p.status = 'sent' THEN 1 ELSE 0 END), 0) AS BIGINT) AS delivered,
                CAST(coalesce(sum(CASE WHEN p.status IN ('failed', 'dropped') THEN 1 ELSE 0 END), 0) AS BIGINT) AS failed,
                CAST(coalesce(sum(CASE WHEN p.priority_downgraded = \(true) THEN 1 ELSE 0 END), 0) AS BIGINT) AS downgraded,
                CAST(coalesce(sum(CASE WHEN p.deferred_until IS NOT NULL THEN 1 ELSE 0 END), 0) AS BIGINT) AS deferred
            FROM pushes p JOIN sends s ON s.id = p.send_id
            WHERE s.app_id = \(appID) AND s.created_at >= \(start) AND s.created_at < \(end)
            GROUP BY b
            """)
        {
            guard let index = try bucket(row) else { continue }
            buckets[index].targets += try row.int64("targets")
            buckets[index].delivered += try row.int64("delivered")
            buckets[index].failed += try row.int64("failed")
            buckets[index].downgraded += try row.int64("downgraded")
            buckets[index].deferred += try row.int64("deferred")
        }
        for row in try query(
            """
            SELECT (t.tapped_at - \(start)) / \(length) AS b, count(*) AS taps
            FROM taps t WHERE t.app_id = \(appID) AND t.tapped_at >= \(start) AND t.tapped_at < \(end)
            GROUP BY b
            """)
        {
            guard let index = try bucket(row) else { continue }
            buckets[index].taps += try row.int64("taps")
        }
        // Refusals by the minute each node counted them in; dead tokens by the
        // events that say Islet acted on them (by events_dead_tokens: its
        // predicate is written out, as a partial index needs).
        for row in try query(
            """
            SELECT (r.minute - \(start)) / \(length) AS b, CAST(sum(r.refused) AS BIGINT) AS n
            FROM rate_refusals r WHERE r.app_id = \(appID) AND r.minute >= \(start) AND r.minute < \(end)
            GROUP BY b
            """)
        {
            guard let index = try bucket(row) else { continue }
            buckets[index].refused += try row.int64("n")
        }
        for row in try query(
            """
            SELECT (e.occurred_at - \(start)) / \(length) AS b, count(*) AS n
            FROM events e WHERE e.app_id = \(appID) AND e.type = 'token.rejected'
                AND e.occurred_at >= \(start) AND e.occurred_at < \(end)
            GROUP BY b
            """)
        {
            guard let index = try bucket(row) else { continue }
            buckets[index].deadTokens += try row.int64("n")
        }
        let failures = try query(
            """
            SELECT coalesce(p.reason, 'unknown') AS reason, count(*) AS n
            FROM pushes p JOIN sends s ON s.id = p.send_id
            WHERE s.app_id = \(appID) AND s.created_at >= \(start) AND s.created_at < \(end)
                AND p.status IN ('failed', 'dropped')
            GROUP BY coalesce(p.reason, 'unknown') ORDER BY n DESC, reason
            """
        ).map { OverviewFailure(reason: try $0.string("reason"), count: try $0.int64("n")) }
        var overview = AppOverview(buckets: buckets, failures: failures)
        overview.failingWebhooks = try query(
            """
            SELECT webhook_id, url, enabled, failing_since, disabled_reason FROM webhooks
            WHERE app_id = \(appID) AND (enabled = \(false) OR failing_since IS NOT NULL)
            ORDER BY created_at, webhook_id
            """
        ).map { row in
            FailingWebhook(
                webhookID: try row.string("webhook_id"), url: try row.string("url"), enabled: try row.bool("enabled"),
                failingSince: row.optionalDate("failing_since"), disabledReason: row.optionalString("disabled_reason"))
        }
        return overview
    }
}
