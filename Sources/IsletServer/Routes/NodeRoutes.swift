import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// `GET /v1/nodes`: the nodes sharing the database (admin token).
struct NodeRoutes: Sendable {
    let nodes: NodeService

    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", "/v1/nodes", summary: "The Islet nodes sharing the database, with their heartbeats.",
                access: .admin, responses: [(200, "Every node seen within a day")], answer: AnswerSchemas.nodeListAnswer
            ) { _ in try await list() },
        ]
    }

    private func list() async throws -> HTTPResponse {
        let items = try await nodes.list().map { node -> JSONValue in
            [
                "node_id": .string(node.nodeID), "started_at": .string(RFC3339.string(node.startedAt)),
                "last_heartbeat_at": .string(RFC3339.string(node.lastHeartbeatAt)),
                "claimed_pushes": .integer(Int64(node.claimedPushes)),
            ]
        }
        return APIJSON.response(["items": .array(items)])
    }
}
