import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// Which push rows to read: `failed`, those that failed or were dropped.
enum PushRowStatus: String, Sendable, CaseIterable {
    case failed
}

/// The app's history as its backend (and the dashboard) reads it in bulk: push rows
/// by period, reason and activity, as JSON pages; and the views' records as CSV
/// files (`exports/*.csv`), streamed a page at a time, with the filters of their
/// views. Server key only: none of these is a device's to read.
struct ExportRoutes: Sendable {
    let activities: ActivityService
    let history: HistoryService
    /// The clock a full buffer is waited out on (the event stream's).
    let clock: any Clock<Duration>

    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", "/v1/apps/{app_id}/pushes",
                summary: "The app's pushes with rows of their own (failures, retries, downgrades, deferred starts, alerts, broadcasts) of the sends made over a period, newest first: what an overview's failure reason counts (status=failed&reason=…).",
                access: .server, query: Self.pushQuery + Self.page(limit: 1...1_000, default: 100),
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.exportPushPageAnswer
            ) { request in try await pushes(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/exports/pushes.csv",
                summary: "The pushes GET /v1/apps/{app_id}/pushes reads, with the same filters, as a CSV file, streamed.",
                access: .server, query: Self.pushQuery,
                responses: [(200, "One row per push"), (422, "A query parameter is invalid")], contentType: Self.csv
            ) { request in try await pushesCSV(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/exports/activities.csv",
                summary: "The app's activities, newest first, with the list's filters (status, activity_type), as a CSV file, streamed.",
                access: .server, query: Self.activityQuery,
                responses: [(200, "One row per activity"), (422, "A query parameter is invalid")], contentType: Self.csv
            ) { request in try await activitiesCSV(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/exports/devices.csv",
                summary: "The app's devices by id, tokens shortened to their first 8 characters, as a CSV file, streamed.",
                access: .server, responses: [(200, "One row per device")], contentType: Self.csv
            ) { request in try await devicesCSV(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/activities/{activity_id}/sends.csv",
                summary: "The activity's sends, newest first, as GET …/sends shows them (the content state as JSON text, what changed as paths joined by spaces), as a CSV file, streamed.",
                access: .server,
                responses: [(200, "One row per send"), (404, "No such activity")], contentType: Self.csv
            ) { request in try await sendsCSV(request) },
        ]
    }

    /// What an export is.
    static let csv = "text/csv; charset=utf-8"

    // MARK: - Queries

    /// The push rows' filters.
    static let pushQuery: [QueryParameter] = [
        .oneOf("period", "The period, ending with the bucket that holds now (as the overview counts it): hour, day (the default) or week.", OverviewPeriod.self),
        .text("activity_id", "Only this activity's.", .identifier),
        .text("reason", "Only those APNs or FCM refused with this reason (unknown: refused with none).", TextFormat(rule: .plain, maxLength: 128)),
        .oneOf("status", "failed: only those that failed or were dropped.", PushRowStatus.self),
    ]

    /// The activity list's filters.
    static let activityQuery: [QueryParameter] = [
        .oneOf("status", "Only activities of this status.", ActivityStatus.self),
        .text("activity_type", "Only this type.", .activityType),
    ]

    /// A page's size and cursor.
    static func page(limit: ClosedRange<Int64>, default value: Int64) -> [QueryParameter] {
        [
            .integer("limit", "Pushes per page.", limit, default: value),
            .integer("cursor", QueryParameter.cursorDescription, 1...Int64.max, message: QueryParameter.cursorMessage),
        ]
    }

    // MARK: - Pushes

    private func pushRows(_ request: RouteRequest, cursor: Int64?, limit: Int) async throws -> (items: [DeviceHistory.Push], nextCursor: Int64?) {
        let status: PushRowStatus? = request.query["status"]
        return try await history.pushRows(
            appID: request.app.id, period: request.query["period"] ?? .day, activityID: request.query["activity_id"],
            reason: request.query["reason"], failedOnly: status == .failed, cursor: cursor, limit: limit)
    }

    private func pushes(_ request: RouteRequest) async throws -> HTTPResponse {
        let page = try await pushRows(request, cursor: request.query["cursor"], limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            "items": .array(page.items.map { push in
                guard case .object(var json) = ActivityRoutes.json(push.item) else { return .null }
                json["activity_id"] = APIJSON.optional(push.activityID)
                return .object(json)
            }),
            "next_cursor": page.nextCursor.map { .string(String($0)) } ?? .null,
        ]))
    }

    private func pushesCSV(_ request: RouteRequest) async throws -> HTTPResponse {
        let header = [
            "created_at", "activity_id", "device_id", "platform", "token_kind", "event", "status", "reason", "apns_status",
            "apns_id", "attempts", "sent_at", "taps", "send_id",
        ]
        return try await CSVExport.response(clock: clock, filename: "pushes.csv", header: header) { cursor in
            let page = try await pushRows(request, cursor: cursor.flatMap { Int64($0) }, limit: 1_000)
            let rows: [[CSVCell]] = page.items.map { push in
                let item = push.item
                return [
                    .date(item.createdAt), .text(push.activityID), .text(item.deviceID),
                    .text(item.tokenKind == .fcm ? "android" : "ios"), .text(item.tokenKind.rawValue), .text(item.event.rawValue),
                    .text(item.status.rawValue), .text(item.reason), .number(item.apnsStatus.map(Int64.init)), .text(item.apnsID),
                    .number(Int64(item.attempts)), .date(item.sentAt), .number(Int64(item.taps)), .number(item.sendID),
                ]
            }
            return (rows, page.nextCursor.map(String.init))
        }
    }

    // MARK: - Activities, devices, sends

    private func activitiesCSV(_ request: RouteRequest) async throws -> HTTPResponse {
        let header = [
            "activity_id", "activity_type", "origin", "status", "delivery", "started_at", "updated_at", "ended_at", "end_cause",
            "end_at",
        ]
        let status: ActivityStatus? = request.query["status"]
        let type: String? = request.query["activity_type"]
        return try await CSVExport.response(clock: clock, filename: "activities.csv", header: header) { cursor in
            let page = try await activities.list(
                appID: request.app.id,
                ActivityQuery(status: status, activityType: type, cursor: cursor.flatMap { Int64($0) }, limit: 200))
            let rows: [[CSVCell]] = page.items.map { view in
                let activity = view.record
                return [
                    .text(activity.activityID), .text(activity.activityType), .text(activity.origin.rawValue),
                    .text(view.status.rawValue), .text(activity.delivery.rawValue), .date(activity.startedAt),
                    .date(activity.updatedAt), .date(view.endedAt), .text(view.endCause?.rawValue), .date(activity.endAt),
                ]
            }
            return (rows, page.nextCursor.map(String.init))
        }
    }

    private func devicesCSV(_ request: RouteRequest) async throws -> HTTPResponse {
        let header = [
            "device_id", "platform", "environment", "user_id", "os_version", "apns_token_prefix", "fcm_token_prefix",
            "reachable", "unreachable_at", "has_secret", "created_at", "updated_at",
        ]
        return try await CSVExport.response(clock: clock, filename: "devices.csv", header: header) { cursor in
            let page = try await history.devices(appID: request.app.id, cursor: cursor, limit: 500)
            let rows: [[CSVCell]] = page.devices.map { device in
                let android = device.platform == "android"
                return [
                    .text(device.deviceID), .text(device.platform), .text(android ? nil : device.environment.rawValue),
                    .text(device.userID), .text(device.osVersion), .text(device.apnsToken.map { String($0.prefix(8)) }),
                    .text(device.fcmToken.map { String($0.prefix(8)) }), .bool(device.unreachableAt == nil),
                    .date(device.unreachableAt), .bool(device.hasSecret), .date(device.createdAt), .date(device.updatedAt),
                ]
            }
            return (rows, page.nextCursor)
        }
    }

    private func sendsCSV(_ request: RouteRequest) async throws -> HTTPResponse {
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let header = [
            "send_id", "created_at", "event", "platform", "token_kind", "status", "drop_reason", "content_state", "changed",
            "targets", "sent", "failed", "received", "taps",
        ]
        return try await CSVExport.response(clock: clock, filename: "sends.csv", header: header) { cursor in
            let page = try await activities.sendHistory(
                appID: request.app.id, activityID: activityID, cursor: cursor.flatMap { Int64($0) }, limit: 200)
            let rows: [[CSVCell]] = page.items.map { entry in
                let send = entry.send
                return [
                    .number(send.sendID), .date(send.createdAt), .text(send.event.rawValue), .text(entry.platform),
                    .text(send.tokenKind.rawValue), .text(send.state), .text(send.dropReason),
                    .text(entry.contentState?.jsonText), .text(entry.changed?.joined(separator: " ")),
                    .number(send.targets), .number(send.sent), .number(send.failed), .number(send.received), .number(send.taps),
                ]
            }
            return (rows, page.nextCursor.map(String.init))
        }
    }
}
