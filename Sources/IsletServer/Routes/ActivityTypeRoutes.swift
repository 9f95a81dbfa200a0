import Foundation
import HTTPServer
import IsletCore
import Storage

/// The activity-type routes (server key): register the schema of an app's
/// `ActivityAttributes` type, so that every send for it is checked as the device
/// would decode it.
struct ActivityTypeRoutes: Sendable {
    let context: ServerContext

    var routes: [APIRoute] {
        [
            APIRoute(
                "PUT", "/v1/apps/{app_id}/activity-types/{activity_type}",
                summary: "Register or replace an activity type's schema; a change running activities could not decode is 409 unless force is true.",
                access: .server, body: RequestSchemas.activityType,
                responses: [(201, "Registered"), (200, "Replaced"), (409, "Would break running activities"), (422, "A field is invalid")]
            ) { request, parameters in try await put(request, parameters) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activity-types", summary: "List the registered activity types.", access: .server,
                responses: [(200, "{items}")]
            ) { request, parameters in try await list(request, parameters) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activity-types/{activity_type}", summary: "Read an activity type's schema.",
                access: .server, responses: [(200, "The type"), (404, "Not registered")]
            ) { request, parameters in try await show(request, parameters) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/activity-types/{activity_type}", summary: "Remove an activity type's schema.",
                access: .server, responses: [(204, "Removed"), (404, "Not registered")]
            ) { request, parameters in try await delete(request, parameters) },
        ]
    }

    private func put(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, name) = try await authorize(request, parameters)
        let body = try RequestBody(request, schema: RequestSchemas.activityType)
        let root = body.root
        let format = root.enumeration("format", as: ActivityTypeSchema.Format.self) ?? .activitykit
        let widgetName = root.string("widget_name")
        if format == .expoWidgets && widgetName == nil && !body.hasErrors {
            root.fail("widget_name", "is required for the expo-widgets format (the name passed to createLiveActivity)")
        }
        if format == .activitykit && widgetName != nil {
            root.fail("widget_name", "only the expo-widgets format has a widget name")
        }
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
        try body.finish()
        let schema = ActivityTypeSchema(
            format: format, widgetName: widgetName, attributes: parsed[0], contentState: parsed[1])
        let appID = app.id
        let now = context.clock.now()
        let startedAfter = now.addingTimeInterval(-context.lifecycle.windows.total)
        let (created, record, changes) = try await context.store.write { session -> (Bool, ActivityTypeRecord?, [String]) in
            var changes: [String] = []
            if let old = try session.activityType(appID: appID, name: name) {
                changes = schema.breakingChanges(from: old.schema)
                let running = try session.runningActivities(appID: appID, activityType: name, startedAfter: startedAfter)
                if !changes.isEmpty && running > 0 && !force {
                    throw Problem(
                        status: 409,
                        detail: "\(running) running activit\(running == 1 ? "y" : "ies") of \(name) could no longer be decoded: \(changes.joined(separator: "; ")). Wait for them to end, or send force: true.",
                        errors: changes.map { change in
                            let field = String(change.prefix { $0 != ":" })
                            return .init(field: field, message: String(change.dropFirst(field.count + 1)).trimmingCharacters(in: .whitespaces))
                        })
                }
            }
            let created = try session.putActivityType(appID: appID, name: name, schema: schema, now: now)
            return (created, try session.activityType(appID: appID, name: name), changes)
        }
        guard let record else { throw Problem(status: 500, detail: "The activity type was not stored.") }
        var json = Self.json(record)
        if !changes.isEmpty { json["breaking_changes"] = .array(changes.map(JSONValue.string)) }
        return APIJSON.response(status: created ? 201 : 200, .object(json))
    }

    private func list(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let app = try await Authentication.requireApp(request, appID: parameters["app_id"] ?? "", kind: .server, context: context)
        let appID = app.id
        let records = try await context.store.read { try $0.activityTypes(appID: appID) }
        return APIJSON.response(.object(["items": .array(records.map { .object(Self.json($0)) })]))
    }

    private func show(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, name) = try await authorize(request, parameters)
        let appID = app.id
        guard let record = try await context.store.read({ try $0.activityType(appID: appID, name: name) }) else {
            throw Problem(status: 404, detail: "\(name) is not a registered activity type.")
        }
        return APIJSON.response(.object(Self.json(record)))
    }

    private func delete(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, name) = try await authorize(request, parameters)
        let appID = app.id
        guard try await context.store.write({ try $0.deleteActivityType(appID: appID, name: name) }) else {
            throw Problem(status: 404, detail: "\(name) is not a registered activity type.")
        }
        return HTTPResponse(status: 204)
    }

    private func authorize(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> (AppRecord, String) {
        let app = try await Authentication.requireApp(request, appID: parameters["app_id"] ?? "", kind: .server, context: context)
        return (app, try DeviceRoutes.pathActivityType(parameters))
    }

    static func json(_ record: ActivityTypeRecord) -> [String: JSONValue] {
        var json = record.schema.json.objectValue ?? [:]
        json["activity_type"] = .string(record.name)
        json["created_at"] = APIJSON.date(record.createdAt)
        json["updated_at"] = APIJSON.date(record.updatedAt)
        return json
    }
}
