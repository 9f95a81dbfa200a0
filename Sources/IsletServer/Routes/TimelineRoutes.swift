import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// An activity's timeline (server key): entries pushed as updates when their time
/// comes, an end, and renewal past the 8 hours.
struct TimelineRoutes: Sendable {
    let timelines: TimelineService

    var routes: [APIRoute] {
        [
            APIRoute(
                "PUT", "/v1/apps/{app_id}/activities/{activity_id}/timeline",
                summary: "Replace the activity's timeline entries not yet sent: each is pushed as an update when its time comes.",
                access: .server, body: RequestSchemas.timeline, largeBody: true,
                family: .sends, responses: [(200, "{activity_id, entries: [{index, at, status}], end_at, renew}"), (404, "No such activity"), (409, "Ended, or past its update window, or the app has no APNs credentials"), (422, "An entry (entries[3].at) or field is invalid")],
                answer: AnswerSchemas.timelineAnswer
            ) { request in try await put(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/timeline",
                summary: "Read the activity's timeline, each entry with its status.", access: .server,
                responses: [(200, "{activity_id, entries, end_at, renew}"), (404, "No such activity")],
                answer: AnswerSchemas.timelineAnswer
            ) { request in try await show(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/activities/{activity_id}/timeline",
                summary: "Cancel the timeline's entries (and end) not yet sent.", access: .server,
                family: .sends, responses: [(204, "Cancelled"), (404, "No such activity")]
            ) { request in try await clear(request) },
        ]
    }

    private func put(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let plan = SendFields.timeline(body.root)
        try body.finish()
        let view = try await timelines.put(PutTimeline(
            app: request.app, activityID: activityID, plan: try body.required(plan, "entries")))
        return APIJSON.response(Self.json(view))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        return APIJSON.response(Self.json(try await timelines.show(appID: request.app.id, activityID: activityID)))
    }

    private func clear(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        try await timelines.clear(appID: request.app.id, activityID: activityID)
        return HTTPResponse(status: 204)
    }

    static func json(_ view: TimelineView) -> JSONValue {
        .object([
            "activity_id": .string(view.activityID),
            "entries": .array(view.entries.map { entry in
                .object([
                    "index": .integer(Int64(entry.index)), "at": APIJSON.date(entry.schedule.sendAt),
                    "status": .string(entry.status), "schedule_id": .string(entry.schedule.scheduleID),
                    "sent_at": APIJSON.date(entry.schedule.status == .sent ? entry.schedule.firedAt : nil),
                    "reason": APIJSON.optional(entry.schedule.reason),
                ])
            }),
            "end_at": APIJSON.date(view.endAt), "renew": .bool(view.renew),
        ])
    }
}
