import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The routes an app calls from its devices (device key): register the device and
/// its ordinary token, its push-to-start tokens, and its update token per activity;
/// and the device secret's rotation (device key) and reset (server key). A route
/// for a registered device passes the `Islet-Device-Secret` header to the service,
/// which checks it under the app's `device_secrets` setting.
struct DeviceRoutes: Sendable {
    let devices: DeviceService
    /// The app's devices as its backend reads them (server key).
    let history: HistoryService

    /// What the 403 of a device route means.
    private static let refused = (
        403, "A key of the wrong kind, or (device_secrets: required) an Islet-Device-Secret header missing or not the device's secret"
    )
    /// What every later route for a device says of the secret.
    private static let needsSecret = " A registered device's secret goes in the Islet-Device-Secret header (required when the app's device_secrets is required)."

    var routes: [APIRoute] {
        [
            APIRoute(
                "GET", "/v1/apps/{app_id}/devices",
                summary: "List the app's devices by id, a page at a time (tokens shortened to their first 8 characters).",
                access: .server, query: Self.listQuery,
                responses: [(200, "{items, next_cursor}"), (422, "A query parameter is invalid")],
                answer: AnswerSchemas.deviceList
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/devices/{device_id}",
                summary: "Read a device: its registration, its push-to-start tokens, its newest 50 copies of activities and its newest 50 pushes with rows of their own (failures, retries, downgrades, deferred starts, alerts). Tokens are shortened to their first 8 characters.",
                access: .server, responses: [(200, "The device as registered, with push_to_start, copies and pushes"), (404, "No such device")],
                answer: AnswerSchemas.deviceDetail
            ) { request in try await show(request) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}",
                summary: "Register or update a device; a missing or null apns_token keeps the stored one. Creating it answers its device_secret, shown once; a retry with the same Idempotency-Key and body, within the key's lifetime, is answered as the first was, with the same device_secret (Idempotent-Replayed: true)."
                    + Self.needsSecret,
                access: .device, body: RequestSchemas.registerDevice, idempotent: true,
                family: .registrations, responses: [(201, "Registered, with its device_secret"), (200, "Updated (with a new device_secret when device_secrets is off and the request did not carry the current one)"), Self.refused, (422, "A field is invalid")],
                answer: AnswerSchemas.deviceRegistered
            ) { request in try await registerDevice(request) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Store the device's push-to-start token for an activity type." + Self.needsSecret, access: .device,
                body: RequestSchemas.token,
                family: .registrations, responses: [(201, "Stored"), (200, "Replaced or unchanged"), Self.refused, (404, "No such device"), (422, "A field is invalid")],
                answer: AnswerSchemas.deviceStartTokenRegistered
            ) { request in try await putStartToken(request) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Remove the device's push-to-start token: remote starts of that type stop reaching it." + Self.needsSecret,
                access: .device, family: .registrations, responses: [(204, "Removed"), Self.refused, (404, "None was stored")]
            ) { request in try await deleteStartToken(request) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}",
                summary: "Register or rotate the device's update token for an activity (creates an activity the app started locally); an android device joins the activity without one."
                    + Self.needsSecret,
                access: .device, body: RequestSchemas.registerActivityToken,
                family: .registrations, responses: [(201, "Registered"), (200, "Rotated or unchanged"), (403, "A key of the wrong kind, a missing or wrong Islet-Device-Secret, or (naming activity_id) an activity this device may not follow: started for an audience it is not in, or created on another user's device under local_join: user"), (404, "No such device"), (409, "The activity has ended"), (422, "A field is invalid")],
                answer: AnswerSchemas.deviceUpdateTokenRegistered
            ) { request in try await putUpdateToken(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/end",
                summary: "The device ended the activity locally." + Self.needsSecret, access: .device, body: RequestSchemas.empty,
                family: .registrations, responses: [(200, "Its copy is ended"), Self.refused, (404, "The device holds no such activity")],
                answer: AnswerSchemas.deviceActivityEnded
            ) { request in try await endOnDevice(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/taps",
                summary: "Record a tap on the activity (the URL its widget opened told the app), counted on the push given or on the newest one delivered to the device for the activity."
                    + Self.needsSecret,
                access: .device, body: RequestSchemas.tap,
                family: .registrations, responses: [(201, "Recorded: {apns_id, tapped_at}, the push it counts on (null when none was delivered yet)"), Self.refused, (404, "The device holds no such activity"), (422, "A field is invalid: apns_id names no push made for this device's copy, or tapped_at is ahead of the server's clock, before the activity started or before the push it counts on was sent")],
                answer: AnswerSchemas.deviceTapRecorded
            ) { request in try await tap(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/receipts",
                summary: "Record that the device showed a send of the activity: the send_id its content state carried under islet (for a type with receipts on). The same receipt again is answered alike and counted once."
                    + Self.needsSecret,
                access: .device, body: RequestSchemas.receipt,
                family: .registrations, responses: [(201, "Recorded: {send_id, received_at}"), Self.refused, (404, "The device holds no such activity"), (422, "A field is invalid: send_id names no send of this activity, or received_at is more than 5 minutes ahead of the server's clock")],
                answer: AnswerSchemas.deviceReceiptRecorded
            ) { request in try await receipt(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/secret/rotate",
                summary: "Replace the device's secret, given its current one in the Islet-Device-Secret header (whatever device_secrets says); the old one stops working. The new one is shown once.",
                access: .device, body: RequestSchemas.empty,
                family: .registrations, responses: [(200, "The new device_secret"), (403, "A key of the wrong kind, or an Islet-Device-Secret header missing or not the device's secret"), (404, "No such device")],
                answer: AnswerSchemas.deviceSecretIssued
            ) { request in try await rotateSecret(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/secret/reset",
                summary: "Give the device a new secret without its old one (support: a device that lost its secret or registered before it had one); the old one stops working. The new one is shown once.",
                access: .server, body: RequestSchemas.empty,
                family: .registrations, responses: [(200, "The new device_secret"), (404, "No such device")],
                answer: AnswerSchemas.deviceSecretIssued
            ) { request in try await resetSecret(request) },
        ]
    }

    // MARK: - Reading (server key)

    /// The device list's query.
    static let listQuery: [QueryParameter] = [
        .integer("limit", "Devices per page.", 1...500, default: 100),
        .text("cursor", QueryParameter.cursorDescription, .identifier),
    ]

    /// A token as the API shows it: enough to tell tokens apart, never enough to send with.
    static func shortened(_ token: String?) -> JSONValue {
        APIJSON.optional(token.map { String($0.prefix(8)) + "…" })
    }

    /// A device's registration as read back: as registered, with its tokens
    /// shortened and when it became unreachable.
    static func readBack(_ device: DeviceRecord) -> [String: JSONValue] {
        var json = Self.json(device)
        json["apns_token_prefix"] = shortened(device.apnsToken)
        json["fcm_token_prefix"] = shortened(device.fcmToken)
        json["unreachable_at"] = APIJSON.date(device.unreachableAt)
        return json
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        let page = try await history.devices(
            appID: request.app.id, cursor: request.query["cursor"], limit: request.query.defaultedInt("limit"))
        return APIJSON.response(.object([
            // A page does not read each device's tags: its answer has none.
            "items": .array(page.devices.map { device in
                var json = Self.readBack(device)
                json["tags"] = nil
                return .object(json)
            }),
            "next_cursor": APIJSON.optional(page.nextCursor),
        ]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let found = try await history.device(appID: request.app.id, deviceID: deviceID)
        var body = Self.readBack(found.device)
        body["push_to_start"] = .array(found.startTokens.map { token in
            [
                "activity_type": .string(token.activityType), "token_prefix": Self.shortened(token.token),
                "environment": .string(token.environment.rawValue), "registered_at": APIJSON.date(token.registeredAt),
            ]
        })
        body["copies"] = .array(found.copies.map { copy in
            var json = CopyJSON.json(copy.record)
            json["activity_id"] = .string(copy.activityID)
            json["activity_type"] = .string(copy.activityType)
            return .object(json)
        })
        body["pushes"] = .array(found.pushes.map { push in
            guard case .object(var json) = ActivityRoutes.json(push.item) else { return .null }
            json["activity_id"] = APIJSON.optional(push.activityID)
            return .object(json)
        })
        return APIJSON.response(.object(body))
    }

    // MARK: - Handlers

    /// The `Islet-Device-Secret` header, as sent.
    private static func secret(_ request: RouteRequest) -> String? {
        request.http.headers[DeviceSecrets.header]
    }

    private func registerDevice(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let body = try request.body()
        let platform = body.root.enumeration("platform", as: DevicePlatform.self)
        let environment = body.root.enumeration("environment", as: APNsEnvironment.self)
        let fcmToken = body.root.string("fcm_token")
        let token = body.root.token("apns_token")
        var userID: String??
        if body.root.isNull("user_id") {
            userID = .some(nil)
        } else if let text = body.root.string("user_id") {
            userID = .some(text)
        }
        let tags = body.root.strings("tags")
        var frequentUpdates: Bool??
        if body.root.isNull("frequent_updates") {
            frequentUpdates = .some(nil)
        } else if let flag = body.root.bool("frequent_updates") {
            frequentUpdates = .some(flag)
        }
        var osVersion: String??
        if body.root.isNull("os_version") {
            osVersion = .some(nil)
        } else if let text = body.root.string("os_version") {
            osVersion = .some(text)
        }
        try body.finish()
        let registration = try DevicePlatform.registration(
            platform: platform!, environment: environment, apnsToken: token, fcmToken: fcmToken, userID: userID, tags: tags,
            frequentUpdates: frequentUpdates, osVersion: osVersion)
        let registered = try await devices.register(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), registration,
            idempotency: IdempotencyHeader.key(request.http))
        var json = Self.json(registered.device)
        if let secret = registered.secret { json["device_secret"] = .string(secret) }
        var response = APIJSON.response(status: registered.created ? 201 : 200, .object(json))
        if registered.secret != nil { response.headers.set("Cache-Control", "no-store") }
        if registered.replayed { response.headers.set("Idempotent-Replayed", "true") }
        return response
    }

    private func putStartToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityType = try PathValues.activityType(request.parameters)
        let body = try request.body()
        let token = body.root.token("token")
        try body.finish()
        let registered = try await devices.putStartToken(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityType: activityType, token: token!)
        return APIJSON.response(status: registered.created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_type": .string(activityType),
            "registered_at": APIJSON.date(registered.registeredAt),
        ]))
    }

    private func deleteStartToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityType = try PathValues.activityType(request.parameters)
        try await devices.deleteStartToken(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityType: activityType)
        return HTTPResponse(status: 204)
    }

    private func putUpdateToken(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let activityType = body.root.string("activity_type")
        let token = body.root.token("token")
        try body.finish()
        let registered = try await devices.putUpdateToken(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityID: activityID,
            activityType: activityType!, token: token)
        return APIJSON.response(status: registered.created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_id": .string(activityID),
            "activity_type": .string(activityType!), "registered_at": APIJSON.date(registered.registeredAt),
        ]))
    }

    private func endOnDevice(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        try body.finish()
        let instance = try await devices.endOnDevice(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityID: activityID)
        return APIJSON.response(.object([
            "activity_id": .string(activityID), "device": .object(CopyJSON.json(instance)),
        ]))
    }

    private func tap(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let apnsID = body.root.string("apns_id")
        let tappedAt = body.root.date("tapped_at")
        try body.finish()
        let tapped = try await devices.recordTap(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityID: activityID, apnsID: apnsID,
            tappedAt: tappedAt)
        return APIJSON.response(status: 201, .object([
            "apns_id": APIJSON.optional(tapped.apnsID), "tapped_at": APIJSON.date(tapped.tappedAt),
        ]))
    }

    private func receipt(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        let activityID = try PathValues.identifier(request.parameters, "activity_id")
        let body = try request.body()
        let sendID = body.root.string("send_id")
        let receivedAt = body.root.date("received_at")
        try body.finish()
        let received = try await devices.recordReceipt(
            appID: request.app.id, deviceID: deviceID, secret: Self.secret(request), activityID: activityID,
            sendID: sendID!, receivedAt: receivedAt)
        return APIJSON.response(status: 201, .object([
            "send_id": .string(received.sendID), "received_at": APIJSON.date(received.receivedAt),
        ]))
    }

    private func rotateSecret(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        try request.body().finish()
        let secret = try await devices.rotateSecret(appID: request.app.id, deviceID: deviceID, secret: Self.secret(request))
        return Self.secretResponse(deviceID: deviceID, secret: secret)
    }

    private func resetSecret(_ request: RouteRequest) async throws -> HTTPResponse {
        let deviceID = try PathValues.identifier(request.parameters, "device_id")
        try request.body().finish()
        let secret = try await devices.resetSecret(appID: request.app.id, deviceID: deviceID)
        return Self.secretResponse(deviceID: deviceID, secret: secret)
    }

    /// A new secret, kept by no cache.
    private static func secretResponse(deviceID: String, secret: String) -> HTTPResponse {
        var response = APIJSON.response(.object(["device_id": .string(deviceID), "device_secret": .string(secret)]))
        response.headers.set("Cache-Control", "no-store")
        return response
    }

    // MARK: - Rendering

    static func json(_ device: DeviceRecord) -> [String: JSONValue] {
        [
            "device_id": .string(device.deviceID), "platform": .string(device.platform),
            // An Android device has no APNs environment.
            "environment": device.platform == DevicePlatform.android.rawValue ? .null : .string(device.environment.rawValue),
            "has_apns_token": .bool(device.apnsToken != nil), "has_fcm_token": .bool(device.fcmToken != nil),
            "reachable": .bool(device.unreachableAt == nil), "user_id": APIJSON.optional(device.userID),
            "tags": .array(device.tags.map(JSONValue.string)), "created_at": APIJSON.date(device.createdAt),
            "updated_at": APIJSON.date(device.updatedAt), "has_secret": .bool(device.hasSecret),
            "frequent_updates": device.frequentUpdates.map(JSONValue.bool) ?? .null,
            "os_version": APIJSON.optional(device.osVersion),
        ]
    }
}
