import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The activity-type routes (server key): register the schema of an app's
/// `ActivityAttributes` type, so that every send for it is checked as the device
/// would decode it.
struct ActivityTypeRoutes: Sendable {
    let activityTypes: ActivityTypeService

    var routes: [APIRoute] {
        [
            APIRoute(
                "PUT", "/v1/apps/{app_id}/activity-types/{activity_type}",
                summary: "Register or replace an activity type's schema; a change running activities could not decode is 409 unless force is true.",
                access: .server, body: RequestSchemas.activityType,
                responses: [(201, "Registered"), (200, "Replaced"), (409, "Would break running activities"), (422, "A field is invalid")],
                answer: AnswerSchemas.activityTypePutAnswer
            ) { request in try await put(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activity-types", summary: "List the registered activity types.", access: .server,
                responses: [(200, "{items}")], answer: AnswerSchemas.activityTypeListAnswer
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activity-types/{activity_type}", summary: "Read an activity type's schema.",
                access: .server, responses: [(200, "The type"), (404, "Not registered")],
                answer: AnswerSchemas.ref("ActivityType")
            ) { request in try await show(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/activity-types/{activity_type}", summary: "Remove an activity type's schema.",
                access: .server, responses: [(204, "Removed"), (404, "Not registered")]
            ) { request in try await delete(request) },
        ]
    }

    private func put(_ request: RouteRequest) async throws -> HTTPResponse {
        let name = try PathValues.activityType(request.parameters)
        let body = try request.body()
        let root = body.root
        let format = root.enumeration("format", as: ActivityTypeSchema.Format.self) ?? .activitykit
        let widgetName = root.string("widget_name")
        var parsed: [[String: FieldSchema]] = []
        for key in ["attributes", "content_state"] {
            guard let value = root.raw(key) else {
                parsed.append([:])
                continue
            }
            let (fields, problems) = FieldSchema.parseFields(value, path: key)
            for problem in problems { body.fail(problem.path, problem.message) }
            parsed.append(fields)
        }
        let force = root.bool("force") ?? false
        let receipts = root.bool("receipts") ?? false
        try body.finish()
        let schema = ActivityTypeSchema(
            format: format, widgetName: widgetName, attributes: parsed[0], contentState: parsed[1])
        let registered = try await activityTypes.put(
            appID: request.app.id, name: name, schema: schema, receipts: receipts, force: force)
        var json = Self.json(registered.record)
        if !registered.breakingChanges.isEmpty {
            json["breaking_changes"] = .array(registered.breakingChanges.map(JSONValue.string))
        }
        return APIJSON.response(status: registered.created ? 201 : 200, .object(json))
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        let records = try await activityTypes.list(appID: request.app.id)
        return APIJSON.response(.object(["items": .array(records.map { .object(Self.json($0)) })]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let name = try PathValues.activityType(request.parameters)
        return APIJSON.response(.object(Self.json(try await activityTypes.show(appID: request.app.id, name: name))))
    }

    private func delete(_ request: RouteRequest) async throws -> HTTPResponse {
        let name = try PathValues.activityType(request.parameters)
        try await activityTypes.delete(appID: request.app.id, name: name)
        return HTTPResponse(status: 204)
    }

    static func json(_ record: ActivityTypeRecord) -> [String: JSONValue] {
        var json = record.schema.json.objectValue ?? [:]
        json["activity_type"] = .string(record.name)
        json["created_at"] = APIJSON.date(record.createdAt)
        json["updated_at"] = APIJSON.date(record.updatedAt)
        json["receipts"] = .bool(record.receipts)
        return json
    }
}
