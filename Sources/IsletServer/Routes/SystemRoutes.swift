import APNs
import Delivery
import Foundation
import HTTPServer
import IsletCore
import IsletCrypto
import IsletService
import PostgreSQLStorage
import SQLiteStorage

/// The open routes: `GET /healthz`, `GET /v1/version`, `GET /metrics` and
/// `GET /openapi.json`.
struct SystemRoutes: Sendable {
    /// This node: its id (in the health answer and on every metric), its database.
    let node: NodeService
    let delivery: DeliveryWorker?
    let requestMetrics: RequestMetrics?
    /// What the budgets and rate limits did on this node.
    let limits: LimitMetrics
    /// The receipts this node recorded.
    let receipts: ReceiptMetrics
    /// The whole route list, for the OpenAPI document (set once the list is built).
    let document: @Sendable () -> JSONValue

    var routes: [APIRoute] {
        [
            APIRoute("GET", "/healthz", summary: "Health: the database answers.", access: .open,
                     responses: [(200, "Healthy: the node, its backend, and the database's answer"), (503, "The database does not answer")],
                     answer: AnswerSchemas.healthAnswer, failureAnswer: (503, AnswerSchemas.unhealthyAnswer)) { _ in await health() },
            APIRoute("GET", "/v1/version", summary: "Version of Islet, its schema and its libraries.", access: .open,
                     responses: [(200, "Versions")], answer: AnswerSchemas.versionAnswer) { _ in await version() },
            APIRoute("GET", "/metrics", summary: "Prometheus metrics.", access: .open,
                     responses: [(200, "Prometheus text exposition")], contentType: "text/plain; version=0.0.4") { _ in await metrics() },
            APIRoute("GET", "/openapi.json", summary: "This API's OpenAPI 3.1 document.", access: .open,
                     responses: [(200, "The document")], answer: AnswerSchemas.openAPIDocumentAnswer) { _ in APIJSON.response(document()) },
        ]
    }

    func health() async -> HTTPResponse {
        let node: JSONValue = .string(self.node.nodeID)
        let backend: JSONValue = .string(self.node.backend)
        guard let problem = await self.node.databaseProblem() else {
            return APIJSON.response(["status": "ok", "checks": ["database": "ok"], "node_id": node, "backend": backend])
        }
        return APIJSON.response(status: 503, [
            "status": "unavailable", "checks": ["database": .string(problem)], "node_id": node, "backend": backend,
        ])
    }

    func version() async -> HTTPResponse {
        let schema = await node.schemaVersion()
        return APIJSON.response([
            "name": "islet", "version": .string(IsletVersion.current), "schema_version": .integer(Int64(schema)),
            "libraries": [
                "openssl": .string(CryptoLibrary.version), "nghttp2": .string(APNsLibraries.nghttp2Version),
                "libmicrohttpd": .string(HTTPServer.libraryVersion), "sqlite": .string(SQLiteConnection.libraryVersion),
                "libpq": .string(PostgresLibrary.version),
            ],
        ])
    }

    func metrics() async -> HTTPResponse {
        // Every series carries the node first, so that one scrape per node sums.
        let node = "node=\(label(self.node.nodeID))"
        var text = ""
        text += "# HELP islet_http_requests_total API requests by route pattern, method and status.\n"
        text += "# TYPE islet_http_requests_total counter\n"
        for (key, count) in (requestMetrics?.snapshot() ?? [:]).sorted(by: { $0.key < $1.key }) {
            text += "islet_http_requests_total{\(node),route=\(label(key.route)),method=\(label(key.method)),status=\"\(key.status)\"} \(count)\n"
        }
        if let delivery {
            let snapshot = delivery.metrics.snapshot()
            text += "# HELP islet_pushes_total Pushes settled by APNs or FCM, by result, reason and transport.\n"
            text += "# TYPE islet_pushes_total counter\n"
            for (key, count) in snapshot.pushes.sorted(by: { $0.key < $1.key }) {
                text += "islet_pushes_total{\(node),result=\(label(key.result)),reason=\(label(key.reason)),transport=\(label(key.transport))} \(count)\n"
            }
            text += "# HELP islet_push_send_seconds Time from handing a push to the APNs client to its settled answer.\n"
            text += "# TYPE islet_push_send_seconds histogram\n"
            for (index, bound) in DeliveryMetrics.latencyBuckets.enumerated() {
                text += "islet_push_send_seconds_bucket{\(node),le=\"\(bound)\"} \(snapshot.latencyCounts[index])\n"
            }
            text += "islet_push_send_seconds_bucket{\(node),le=\"+Inf\"} \(snapshot.latencyCounts.last ?? 0)\n"
            text += "islet_push_send_seconds_sum{\(node)} \(snapshot.latencySum)\n"
            text += "islet_push_send_seconds_count{\(node)} \(snapshot.latencyCount)\n"
            text += "# HELP islet_push_in_flight Pushes handed to APNs and not yet answered.\n"
            text += "# TYPE islet_push_in_flight gauge\n"
            text += "islet_push_in_flight{\(node)} \(delivery.inFlight)\n"
        }
        let limited = limits.snapshot()
        text += "# HELP islet_priority_downgrades_total Updates queued at priority 5 instead of 10, their copy's priority-10 budget spent, by app.\n"
        text += "# TYPE islet_priority_downgrades_total counter\n"
        for (appID, count) in limited.downgrades {
            text += "islet_priority_downgrades_total{\(node),app=\(label(appID))} \(count)\n"
        }
        text += "# HELP islet_starts_deferred_total Push-to-starts held back, their device's starts of the hour spent, by app.\n"
        text += "# TYPE islet_starts_deferred_total counter\n"
        for (appID, count) in limited.deferrals {
            text += "islet_starts_deferred_total{\(node),app=\(label(appID))} \(count)\n"
        }
        text += "# HELP islet_receipts_total Receipts recorded (a device said it showed a send), by app.\n"
        text += "# TYPE islet_receipts_total counter\n"
        for (appID, count) in receipts.snapshot() {
            text += "islet_receipts_total{\(node),app=\(label(appID))} \(count)\n"
        }
        text += "# HELP islet_rate_limited_total Requests refused by an app's rate limit, by app and family.\n"
        text += "# TYPE islet_rate_limited_total counter\n"
        for (key, count) in limited.refusals {
            text += "islet_rate_limited_total{\(node),app=\(label(key.appID)),family=\(label(key.family.rawValue))} \(count)\n"
        }
        let gauges = await self.node.gauges()
        text += "# HELP islet_push_queue_depth Pushes queued or in flight.\n"
        text += "# TYPE islet_push_queue_depth gauge\n"
        text += "islet_push_queue_depth{\(node)} \(gauges.queueDepth)\n"
        text += "# HELP islet_schedules_pending Schedule items and timeline entries waiting for their time (the whole database's).\n"
        text += "# TYPE islet_schedules_pending gauge\n"
        text += "islet_schedules_pending{\(node)} \(gauges.pendingSchedules)\n"
        if let rows = gauges.rowsWritten {
            text += "# HELP islet_database_rows_written_total Rows this node's writes inserted, changed or deleted (SQLite).\n"
            text += "# TYPE islet_database_rows_written_total counter\n"
            text += "islet_database_rows_written_total{\(node)} \(rows)\n"
        }
        return HTTPResponse(status: 200, contentType: "text/plain; version=0.0.4; charset=utf-8", body: Data(text.utf8))
    }

    private func label(_ value: String) -> String {
        "\"" + value.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n") + "\""
    }
}
