import Foundation
import HTTPServer
import IsletCore
import IsletService

/// `POST /v1/apps/{app_id}/notifications`: an ordinary alert to the device tokens of
/// an audience, never to a Live Activity token.
struct NotificationRoutes: Sendable {
    let notifications: NotificationService
    let schedules: ScheduleService

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/notifications",
                summary: "Send an ordinary alert to the device tokens of an audience.", access: .server,
                body: RequestSchemas.notification, idempotent: true,
                family: .sends, responses: [(202, "Queued: {targets}; with a send_at ahead, scheduled: {schedule_id, send_at, status}"), (409, "The app has no APNs credentials"), (422, "A field is invalid, or no device of the audience is reachable")],
                answer: AnswerSchemas.notificationAnswer
            ) { request in try await send(request) },
        ]
    }

    private func send(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let audience = SendFields.audience(body.root)
        let alert = SendFields.alert(body.root)
        let sendAt = body.root.date("send_at")
        try body.finish()
        let command = SendNotification(
            app: request.app, audience: try body.required(audience, "audience"), alert: alert,
            idempotency: IdempotencyHeader.key(request.http))
        guard let sendAt else { return IdempotencyHeader.response(try await notifications.send(command), status: 202) }
        return IdempotencyHeader.response(try await schedules.notify(command, sendAt: sendAt), status: 202)
    }
}
