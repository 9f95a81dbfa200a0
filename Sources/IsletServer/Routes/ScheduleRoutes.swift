import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// Schedule items (server key): sends held for their `send_at` and timeline
/// entries, listed soonest first, read and cancelled.
struct ScheduleRoutes: Sendable {
    let schedules: ScheduleService

    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", "/v1/apps/{app_id}/schedules", summary: "List schedule items, soonest first.", access: .server,
                query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.scheduleListAnswer
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/schedules/{schedule_id}", summary: "Read a schedule item.", access: .server,
                responses: [(200, "The item"), (404, "No such schedule")],
                answer: AnswerSchemas.scheduleItemAnswer
            ) { request in try await show(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/schedules/{schedule_id}",
                summary: "Cancel a schedule item not yet sent (again: nothing changes).", access: .server,
                family: .sends, responses: [(200, "The item, cancelled"), (404, "No such schedule"), (409, "It was sent or dropped")],
                answer: AnswerSchemas.scheduleItemAnswer
            ) { request in try await cancel(request) },
        ]
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        var query = ScheduleQuery()
        query.activityID = request.query["activity_id"]
        query.status = request.query["status"]
        query.kind = request.query["kind"]
        query.limit = request.query.defaultedInt("limit")
        query.cursor = request.query["cursor"]
        let page = try await schedules.list(appID: request.app.id, query)
        return APIJSON.response(.object([
            "items": .array(page.items.map(Self.json)),
            "next_cursor": page.nextCursor.map { .string("\($0.sendAt)-\($0.sequence)") } ?? .null,
        ]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let scheduleID = try PathValues.identifier(request.parameters, "schedule_id")
        return APIJSON.response(Self.json(try await schedules.show(appID: request.app.id, scheduleID: scheduleID)))
    }

    private func cancel(_ request: RouteRequest) async throws -> HTTPResponse {
        let scheduleID = try PathValues.identifier(request.parameters, "schedule_id")
        let outcome = try await schedules.cancel(appID: request.app.id, scheduleID: scheduleID)
        return APIJSON.response(Self.json(outcome.schedule))
    }

    /// `<send_at ms>-<sequence>`, as `next_cursor` writes it: two numbers of 1 to 18
    /// digits (the pattern the document shows).
    static func cursor(_ text: String) -> ScheduleCursor? {
        let parts = text.split(separator: "-", omittingEmptySubsequences: false)
        let numbers = parts.compactMap { part -> Int64? in
            guard (1...18).contains(part.count), part.allSatisfy({ ("0"..."9").contains($0) }) else { return nil }
            return Int64(part)
        }
        guard parts.count == 2, numbers.count == 2 else { return nil }
        return ScheduleCursor(sendAt: numbers[0], sequence: numbers[1])
    }

    static let listQuery: [QueryParameter] = [
        .text("activity_id", "Only this activity's items.", .identifier),
        .oneOf("status", "Only items of this status.", ScheduleStatus.self),
        .oneOf("kind", "Only items of this kind.", ScheduleKind.self),
        .integer("limit", "Items per page.", 1...200, default: 50),
        .cursor("^[0-9]{1,18}-[0-9]{1,18}$", convert: ScheduleRoutes.cursor),
    ]

    static func json(_ item: ScheduleRecord) -> JSONValue {
        var body: [String: JSONValue] = [
            "schedule_id": .string(item.scheduleID), "kind": .string(item.kind.rawValue),
            "activity_id": APIJSON.optional(item.activityID), "send_at": APIJSON.date(item.sendAt),
            "status": .string(item.status.rawValue), "reason": APIJSON.optional(item.reason),
            "targets": item.targets.map { .integer(Int64($0)) } ?? .null, "created_at": APIJSON.date(item.createdAt),
            "fired_at": APIJSON.date(item.firedAt),
        ]
        if let detail = item.detail { body["detail"] = .string(detail) }
        if let index = item.entryIndex { body["entry_index"] = .integer(Int64(index)) }
        return .object(body)
    }
}
