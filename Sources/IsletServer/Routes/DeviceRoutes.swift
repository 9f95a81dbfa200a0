import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The routes an app calls from its devices (device key): register the device and
/// its ordinary token, its push-to-start tokens, and its update token per activity.
struct DeviceRoutes: Sendable {
    let devices: DeviceService

    var routes: [APIRoute] {
        [
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}",
                summary: "Register or update a device; a missing or null apns_token keeps the stored one.",
                access: .device, body: RequestSchemas.registerDevice,
                responses: [(201, "Registered"), (200, "Updated"), (422, "A field is invalid")]
            ) { request in try await registerDevice(request) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Store the device's push-to-start token for an activity type.", access: .device,
                body: RequestSchemas.token,
                responses: [(201, "Stored"), (200, "Replaced or unchanged"), (404, "No such device"), (422, "A field is invalid")]
            ) { request in try await putStartToken(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Remove the device's push-to-start token: remote starts of that type stop reaching it.",
                access: .device, responses: [(204, "Removed"), (404, "None was stored")]
            ) { request in try await deleteStartToken(request) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}",
                summary: "Register or rotate the device's update token for an activity (creates an activity the app started locally).",
                access: .device, body: RequestSchemas.registerActivityToken,
                responses: [(201, "Registered"), (200, "Rotated or unchanged"), (404, "No such device"), (409, "The activity has ended"), (422, "A field is invalid")]
            ) { request in try await putUpdateToken(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/end",
                summary: "The device ended the activity locally.", access: .device, body: RequestSchemas.empty,
                responses: [(200, "Its copy is ended"), (404, "The device holds no such activity")]
            ) { request in try await endOnDevice(request) },
        ]
    }

    // MARK: - Handlers

    private func registerDevice(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let body = try RequestBody(request.http, schema: RequestSchemas.registerDevice)
        let platform = body.root.choice("platform")
        let environment = body.root.enumeration("environment", as: APNsEnvironment.self)
        let token = body.root.token("apns_token")
        var userID: String??
        if body.root.isNull("user_id") {
            userID = .some(nil)
        } else if let text = body.root.string("user_id") {
            userID = .some(text)
        }
        let tags = body.root.strings("tags")
        try body.finish()
        let (created, device) = try await devices.register(
            appID: request.app.id, deviceID: deviceID,
            DeviceRegistration(platform: platform!, environment: environment!, apnsToken: token, userID: userID, tags: tags))
        return APIJSON.response(status: created ? 201 : 200, Self.json(device))
    }

    private func putStartToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityType = try PathValues.activityType(request.parameters)
        let body = try RequestBody(request.http, schema: RequestSchemas.token)
        let token = body.root.token("token")
        try body.finish()
        let registered = try await devices.putStartToken(
            appID: request.app.id, deviceID: deviceID, activityType: activityType, token: token!)
        return APIJSON.response(status: registered.created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_type": .string(activityType),
            "registered_at": APIJSON.date(registered.registeredAt),
        ]))
    }

    private func deleteStartToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityType = try PathValues.activityType(request.parameters)
        try await devices.deleteStartToken(appID: request.app.id, deviceID: deviceID, activityType: activityType)
        return HTTPResponse(status: 204)
    }

    private func putUpdateToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try RequestBody(request.http, schema: RequestSchemas.registerActivityToken)
        let activityType = body.root.string("activity_type")
        let token = body.root.token("token")
        try body.finish()
        let registered = try await devices.putUpdateToken(
            appID: request.app.id, deviceID: deviceID, activityID: activityID, activityType: activityType!, token: token!)
        return APIJSON.response(status: registered.created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_id": .string(activityID),
            "activity_type": .string(activityType!), "registered_at": APIJSON.date(registered.registeredAt),
        ]))
    }

    private func endOnDevice(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try RequestBody(request.http, schema: RequestSchemas.empty)
        try body.finish()
        let instance = try await devices.endOnDevice(appID: request.app.id, deviceID: deviceID, activityID: activityID)
        return APIJSON.response(.object([
            "activity_id": .string(activityID), "device": .object(InstanceJSON.json(instance)),
        ]))
    }

    // MARK: - Rendering

    static func json(_ device: DeviceRecord) -> JSONValue {
        .object([
            "device_id": .string(device.deviceID), "platform": .string(device.platform),
            "environment": .string(device.environment.rawValue), "has_apns_token": .bool(device.apnsToken != nil),
            "reachable": .bool(device.unreachableAt == nil), "user_id": APIJSON.optional(device.userID),
            "tags": .array(device.tags.map(JSONValue.string)), "created_at": APIJSON.date(device.createdAt),
            "updated_at": APIJSON.date(device.updatedAt),
        ])
    }
}
