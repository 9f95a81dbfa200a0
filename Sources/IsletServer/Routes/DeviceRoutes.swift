import Foundation
import HTTPServer
import IsletCore
import Storage

/// The routes an app calls from its devices (device key): register the device and
/// its ordinary token, its push-to-start tokens, and its update token per activity.
struct DeviceRoutes: Sendable {
    let context: ServerContext

    var routes: [APIRoute] {
        [
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}",
                summary: "Register or update a device; a missing or null apns_token keeps the stored one.",
                access: .device, body: RequestSchemas.registerDevice,
                responses: [(201, "Registered"), (200, "Updated"), (422, "A field is invalid")]
            ) { request, parameters in try await registerDevice(request, parameters) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Store the device's push-to-start token for an activity type.", access: .device,
                body: RequestSchemas.token,
                responses: [(201, "Stored"), (200, "Replaced or unchanged"), (404, "No such device"), (422, "A field is invalid")]
            ) { request, parameters in try await putStartToken(request, parameters) },
            APIRoute(
                "DELETE", "/v1/apps/{app_id}/devices/{device_id}/push-to-start/{activity_type}",
                summary: "Remove the device's push-to-start token: remote starts of that type stop reaching it.",
                access: .device, responses: [(204, "Removed"), (404, "None was stored")]
            ) { request, parameters in try await deleteStartToken(request, parameters) },
            APIRoute(
                "PUT", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}",
                summary: "Register or rotate the device's update token for an activity (creates an activity the app started locally).",
                access: .device, body: RequestSchemas.registerActivityToken,
                responses: [(201, "Registered"), (200, "Rotated or unchanged"), (404, "No such device"), (409, "The activity has ended"), (422, "A field is invalid")]
            ) { request, parameters in try await putUpdateToken(request, parameters) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/devices/{device_id}/activities/{activity_id}/end",
                summary: "The device ended the activity locally.", access: .device, body: RequestSchemas.empty,
                responses: [(200, "Its copy is ended"), (404, "The device holds no such activity")]
            ) { request, parameters in try await endOnDevice(request, parameters) },
        ]
    }

    // MARK: - Handlers

    private func registerDevice(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, deviceID) = try await authorize(request, parameters)
        let body = try RequestBody(request, schema: RequestSchemas.registerDevice)
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
        let registration = DeviceRegistration(
            platform: platform!, environment: environment!, apnsToken: token, userID: userID, tags: tags)
        let now = context.clock.now()
        let appID = app.id
        let (created, device) = try await context.store.write { session -> (Bool, DeviceRecord?) in
            if let token {
                try Self.refuseCrossedKind(session: session, appID: appID, token: token, kind: .device, field: "apns_token")
            }
            let created = try session.upsertDevice(appID: appID, deviceID: deviceID, registration, now: now)
            return (created, try session.device(appID: appID, deviceID: deviceID))
        }
        guard let device else { throw Problem(status: 500, detail: "The device was not stored.") }
        return APIJSON.response(status: created ? 201 : 200, Self.json(device))
    }

    private func putStartToken(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, deviceID) = try await authorize(request, parameters)
        let activityType = try Self.pathActivityType(parameters)
        let body = try RequestBody(request, schema: RequestSchemas.token)
        let token = body.root.token("token")
        try body.finish()
        let now = context.clock.now()
        let appID = app.id
        let created = try await context.store.write { session -> Bool in
            guard let environment = try session.deviceEnvironment(appID: appID, deviceID: deviceID) else {
                throw Problem(status: 404, detail: "There is no device \(deviceID); register it with PUT /v1/apps/\(appID)/devices/\(deviceID) first.")
            }
            try Self.refuseCrossedKind(session: session, appID: appID, token: token!, kind: .pushToStart, field: "token")
            return try session.upsertStartToken(
                appID: appID, deviceID: deviceID, activityType: activityType, token: token!, environment: environment,
                now: now)
        }
        return APIJSON.response(status: created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_type": .string(activityType), "registered_at": APIJSON.date(now),
        ]))
    }

    private func deleteStartToken(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, deviceID) = try await authorize(request, parameters)
        let activityType = try Self.pathActivityType(parameters)
        let appID = app.id
        let deleted = try await context.store.write {
            try $0.deleteStartToken(appID: appID, deviceID: deviceID, activityType: activityType)
        }
        guard deleted else {
            throw Problem(status: 404, detail: "Device \(deviceID) holds no push-to-start token for \(activityType).")
        }
        return HTTPResponse(status: 204)
    }

    private func putUpdateToken(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, deviceID) = try await authorize(request, parameters)
        let activityID = try Self.pathIdentifier(parameters, "activity_id")
        let body = try RequestBody(request, schema: RequestSchemas.registerActivityToken)
        let activityType = body.root.string("activity_type")
        let token = body.root.token("token")
        try body.finish()
        let now = context.clock.now()
        let appID = app.id
        let lifecycle = context.lifecycle
        let created = try await context.store.write { session -> Bool in
            guard let environment = try session.deviceEnvironment(appID: appID, deviceID: deviceID) else {
                throw Problem(status: 404, detail: "There is no device \(deviceID); register it with PUT /v1/apps/\(appID)/devices/\(deviceID) first.")
            }
            try Self.refuseCrossedKind(
                session: session, appID: appID, token: token!, kind: .liveActivityUpdate, field: "token")
            if let activity = try session.activity(appID: appID, activityID: activityID) {
                guard activity.activityType == activityType! else {
                    throw Problem(
                        status: 422, detail: "Activity \(activityID) is of type \(activity.activityType).",
                        errors: [.init(field: "activity_type", message: "must be \(activity.activityType), the type the activity has")])
                }
                switch lifecycle.check(.registerToken, status: activity.status, startedAt: activity.startedAt, now: now) {
                case .allowed:
                    break
                case .ended, .expired:
                    throw Problem(
                        status: 409,
                        detail: "Activity \(activityID) has ended; an ended activity takes no new update tokens and can never be updated again.")
                case .pastUpdateWindow(let since):
                    throw Problem(
                        status: 409,
                        detail: "Activity \(activityID) is past its update window (since \(APIJSON.date(since).stringValue ?? "")); it can only be ended.")
                }
                if let instance = try session.instance(appID: appID, activityID: activityID, deviceID: deviceID),
                    instance.status == .ended
                {
                    throw Problem(
                        status: 409, detail: "Device \(deviceID) has ended activity \(activityID); its copy can never be updated again.")
                }
            } else {
                try session.insertActivity(
                    appID: appID, activityID: activityID, activityType: activityType!, origin: .local, attributes: nil,
                    contentState: nil, lastTimestamp: nil, endAt: nil, replacing: false, now: now)
            }
            return try session.registerUpdateToken(
                appID: appID, activityID: activityID, deviceID: deviceID, token: token!,
                environment: environment, now: now)
        }
        return APIJSON.response(status: created ? 201 : 200, .object([
            "device_id": .string(deviceID), "activity_id": .string(activityID),
            "activity_type": .string(activityType!), "registered_at": APIJSON.date(now),
        ]))
    }

    private func endOnDevice(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> HTTPResponse {
        let (app, deviceID) = try await authorize(request, parameters)
        let activityID = try Self.pathIdentifier(parameters, "activity_id")
        let body = try RequestBody(request, schema: RequestSchemas.empty)
        try body.finish()
        let now = context.clock.now()
        let appID = app.id
        let instance = try await context.store.write { session -> InstanceRecord in
            guard try session.instance(appID: appID, activityID: activityID, deviceID: deviceID) != nil else {
                throw Problem(status: 404, detail: "Device \(deviceID) holds no activity \(activityID).")
            }
            try session.endInstance(appID: appID, activityID: activityID, deviceID: deviceID, cause: .device, at: now)
            guard let instance = try session.instance(appID: appID, activityID: activityID, deviceID: deviceID) else {
                throw Problem(status: 404, detail: "Device \(deviceID) holds no activity \(activityID).")
            }
            return instance
        }
        return APIJSON.response(.object([
            "activity_id": .string(activityID), "device": .object(ActivityRoutes.json(instance)),
        ]))
    }

    // MARK: - Helpers

    private func authorize(_ request: HTTPRequest, _ parameters: PathParameters) async throws -> (AppRecord, String) {
        let appID = parameters["app_id"] ?? ""
        let app = try await Authentication.requireApp(request, appID: appID, kind: .device, context: context)
        return (app, try Self.pathIdentifier(parameters, "device_id"))
    }

    /// The path's `name`, checked as an id.
    static func pathIdentifier(_ parameters: PathParameters, _ name: String) throws(Problem) -> String {
        try pathValue(parameters, name)
    }

    /// The path's `activity_type`, by the rule a start applies to it (so that a
    /// push-to-start token is never stored under a type no start can name).
    static func pathActivityType(_ parameters: PathParameters) throws(Problem) -> String {
        try pathValue(parameters, "activity_type")
    }

    /// The path's `name`, checked by the format the OpenAPI document gives it.
    private static func pathValue(_ parameters: PathParameters, _ name: String) throws(Problem) -> String {
        let value = parameters[name] ?? ""
        if let problem = PathParameter.format(name).problem(value) {
            throw Problem(status: 422, detail: "The path's \(name) \(problem).", errors: [.init(field: name, message: problem)])
        }
        return value
    }

    /// A token is stored under one kind only: the same text as another kind means
    /// the app mixed them up, and a push would go to the wrong kind of token.
    static func refuseCrossedKind(
        session: any StoreSession, appID: String, token: String, kind: PushTokenKind, field: String
    ) throws {
        let others = try session.registeredKinds(appID: appID, token: token, except: kind)
        guard let other = others.sorted(by: { $0.rawValue < $1.rawValue }).first else { return }
        throw Problem(
            status: 422,
            detail: "This token is already registered as a \(other.rawValue) token; the three kinds of token never mix.",
            errors: [.init(field: field, message: "is a \(other.rawValue) token, not a \(kind.rawValue) token")])
    }

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
