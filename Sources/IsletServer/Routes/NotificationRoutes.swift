import Foundation
import HTTPServer
import IsletCore
import Storage

/// `POST /v1/apps/{app_id}/notifications`: an ordinary alert to the device tokens of
/// an audience, never to a Live Activity token.
struct NotificationRoutes: Sendable {
    let context: ServerContext

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/notifications",
                summary: "Send an ordinary alert to the device tokens of an audience.", access: .server,
                body: RequestSchemas.notification, idempotent: true,
                responses: [(202, "Queued: {targets}"), (409, "The app has no APNs credentials"), (422, "A field is invalid, or no device of the audience is reachable")]
            ) { request, parameters in try await send(request, parameters) },
        ]
    }

    private func send(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await Authentication.requireApp(
            request, appID: parameters["app_id"] ?? "", kind: .server, context: context)
        let body = try RequestBody(request, schema: RequestSchemas.notification)
        let audience = ActivityRoutes.audience(body.root)
        let alert = ActivityRoutes.alert(body.root)
        try body.finish()
        let target = try body.required(audience, "audience")
        try ActivityRoutes.requireCredentials(app)
        let push = AlertPush(title: alert?.title, body: alert?.body, sound: alert?.sound)
        let appID = app.id
        let bundleID = app.bundleID
        return try await Idempotency.perform(request, appID: appID, context: context) { session, now in
            let built: BuiltPush
            do {
                built = try push.build(bundleID: bundleID, now: now)
            } catch let error as PayloadError {
                throw ActivityRoutes.problem(error, event: .alert)
            }
            let targets = try session.alertTargets(appID: appID, audience: target)
            guard !targets.isEmpty else {
                let size = try session.audienceSize(appID: appID, audience: target)
                throw Problem(
                    status: 422,
                    detail: size == 0
                        ? "The audience matches no registered device."
                        : "None of the \(size) device(s) in the audience has a reachable device token.",
                    errors: [.init(field: "audience.\(target.field)", message: "names no device with a reachable device token")])
            }
            let sendID = try session.insertSend(
                appID: appID, activityID: nil, content: ActivityRoutes.content(built, event: .alert), now: now)
            try session.enqueuePushes(
                sendID: sendID, appID: appID, activityID: nil, activityType: nil, event: .alert, tokenKind: .device,
                targets: targets, now: now, mintID: APNsMessageID.mint)
            return (202, Data(JSONValue.object(["targets": .integer(Int64(targets.count))]).jsonText.utf8))
        }
    }
}
