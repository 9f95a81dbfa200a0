import Foundation
import HTTPServer
import IsletCore
import IsletService

/// The admin's hold on dashboard sessions: `DELETE /v1/sessions` ends every one of
/// them, on every node, at once (after a leaked admin token or server key, say).
struct SessionRoutes: Sendable {
    let sessions: SessionService

    var routes: [APIRoute] {
        [
            APIRoute(
                "DELETE", "/v1/sessions", summary: "End every dashboard session, admin and app alike.", access: .admin,
                responses: [(200, "Every session ended: {\"ended\": how many there were}")],
                answer: AnswerSchemas.sessionsEndedAnswer
            ) { _ in
                let ended = try await sessions.endAll()
                return APIJSON.response(.object(["ended": .integer(Int64(ended))]))
            },
        ]
    }
}
