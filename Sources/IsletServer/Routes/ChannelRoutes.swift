import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The server routes of iOS 18 broadcast channels: create one at APNs, list them,
/// read one, delete one (at APNs too).
struct ChannelRoutes: Sendable {
    let channels: ChannelService

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps/{app_id}/channels",
                summary: "Create a broadcast channel at APNs (iOS 18), and record it.", access: .server,
                body: RequestSchemas.createChannel,
                responses: [
                    (201, "The channel: {channel_id, apns_channel_id, environment, message_storage_policy, created_at, activity_id}"),
                    (409, "APNs refused (its reason named: CannotCreateChannelConfig, FeatureNotEnabled, …), the app is at APNs's limit, or it has no APNs credentials"),
                    (422, "A field is invalid"), (503, "APNs could not be reached, or no channel management API is configured"),
                ],
                answer: AnswerSchemas.channelAnswer
            ) { request in try await create(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/channels", summary: "List the app's broadcast channels, in the order of their ids.",
                access: .server, query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.channelList
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/channels/{channel_id}",
                summary: "Read a broadcast channel; channel_id is Apple's id in base64url.", access: .server,
                responses: [(200, "The channel"), (404, "No such channel")],
                answer: AnswerSchemas.channelAnswer
            ) { request in try await show(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/channels/{channel_id}",
                summary: "Delete a broadcast channel, at APNs too.", access: .server,
                responses: [
                    (204, "Deleted"), (404, "No such channel"), (409, "A running activity uses it, or APNs refused"),
                    (503, "APNs could not be reached, or no channel management API is configured"),
                ]
            ) { request in try await delete(request) },
        ]
    }

    static let listQuery: [QueryParameter] = [
        .integer("limit", "Channels per page.", 1...200, default: 50),
        .cursor("^[A-Za-z0-9_-]{1,200}$") { $0 },
    ]

    private func create(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let environment = body.root.enumeration("environment", as: APNsEnvironment.self)
        let policy = body.root.choice("message_storage_policy")
        try body.finish()
        let channel = try await channels.create(
            app: request.app, apnsEnvironment: environment!, storesMostRecent: policy == "most_recent")
        return APIJSON.response(status: 201, Self.json(channel))
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        let limit = request.query.defaultedInt("limit")
        let items = try await channels.list(appID: request.app.id, after: request.query["cursor"], limit: limit)
        return APIJSON.response(.object([
            "items": .array(items.map(Self.json)),
            "next_cursor": items.count == limit ? APIJSON.optional(items.last?.channelID) : .null,
        ]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let channelID = try PathValues.identifier(request.parameters, "channel_id")
        return APIJSON.response(Self.json(try await channels.show(appID: request.app.id, channelID: channelID)))
    }

    private func delete(_ request: RouteRequest) async throws -> HTTPResponse {
        let channelID = try PathValues.identifier(request.parameters, "channel_id")
        try await channels.delete(app: request.app, channelID: channelID)
        return HTTPResponse(status: 204)
    }

    static func json(_ channel: ChannelRecord) -> JSONValue {
        .object([
            "channel_id": .string(channel.channelID), "apns_channel_id": .string(channel.apnsChannelID),
            "environment": .string(channel.environment.rawValue),
            "message_storage_policy": .string(channel.storesMostRecent ? "most_recent" : "none"),
            "created_at": APIJSON.date(channel.createdAt), "activity_id": APIJSON.optional(channel.activityID),
        ])
    }
}
