import Foundation
import HTTPServer
import IsletCore
import IsletCrypto
import Storage

/// The admin routes: create, list, read and change apps, and rotate their keys.
struct AppRoutes: Sendable {
    let context: ServerContext

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps", summary: "Create an app; its server and device keys are returned once.",
                access: .admin, body: RequestSchemas.createApp,
                responses: [(201, "The app, with its keys"), (422, "A field is invalid")]
            ) { request, _ in try await create(request) },
            APIRoute(
                "GET", "/v1/apps", summary: "List the apps.", access: .admin,
                responses: [(200, "Every app")]
            ) { request, _ in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}", summary: "Read an app.", access: .admin,
                responses: [(200, "The app"), (404, "No such app")]
            ) { request, parameters in try await show(request, appID: parameters["app_id"] ?? "") },
            APIRoute(
                "PATCH", "/v1/apps/{app_id}",
                summary: "Change an app's name, bundle id or APNs credentials (replaced as a whole group; null removes them).",
                access: .admin, body: RequestSchemas.updateApp,
                responses: [(200, "The app"), (404, "No such app"), (422, "A field is invalid")]
            ) { request, parameters in try await update(request, appID: parameters["app_id"] ?? "") },
            APIRoute(
                "POST", "/v1/apps/{app_id}/keys/rotate",
                summary: "Replace both app keys; the old ones stop working at once.", access: .admin,
                body: RequestSchemas.empty,
                responses: [(200, "The new keys"), (404, "No such app")]
            ) { request, parameters in try await rotate(request, appID: parameters["app_id"] ?? "") },
        ]
    }

    // MARK: - Handlers

    private func create(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await Authentication.requireAdmin(request, context: context)
        let body = try RequestBody(request, schema: RequestSchemas.createApp)
        let name = body.root.string("name")
        let bundleID = body.root.string("bundle_id")
        let credentials = Self.credentials(body.root)
        let strict = body.root.bool("strict_activity_types")
        try body.finish()
        let serverKey = try AppKeys.generate(.server)
        let deviceKey = try AppKeys.generate(.device)
        let now = context.clock.now()
        var app = AppRecord(
            id: try AppKeys.appID(), name: name!, bundleID: bundleID!, credentials: credentials ?? nil,
            serverKeyHash: Authentication.hash(serverKey), deviceKeyHash: Authentication.hash(deviceKey),
            createdAt: now, updatedAt: now)
        app.strictActivityTypes = strict ?? false
        let created = app
        try await context.store.write { try $0.insertApp(created) }
        if let credentials = app.credentials { context.credentialsChanged(credentials) }
        context.logger.notice("app created", ("app", .string(app.id)), ("bundle_id", .string(app.bundleID)))
        var json = Self.json(app)
        json["server_key"] = .string(serverKey)
        json["device_key"] = .string(deviceKey)
        return APIJSON.response(status: 201, .object(json))
    }

    private func list(_ request: HTTPRequest) async throws -> HTTPResponse {
        try await Authentication.requireAdmin(request, context: context)
        let apps = try await context.store.read { try $0.apps() }
        return APIJSON.response(.object(["items": .array(apps.map { .object(Self.json($0)) })]))
    }

    private func show(_ request: HTTPRequest, appID: String) async throws -> HTTPResponse {
        try await Authentication.requireAdmin(request, context: context)
        return APIJSON.response(.object(Self.json(try await app(appID))))
    }

    private func update(_ request: HTTPRequest, appID: String) async throws -> HTTPResponse {
        try await Authentication.requireAdmin(request, context: context)
        let body = try RequestBody(request, schema: RequestSchemas.updateApp)
        let name = body.root.string("name")
        let bundleID = body.root.string("bundle_id")
        let credentials = Self.credentials(body.root)
        let strict = body.root.bool("strict_activity_types")
        try body.finish()
        let now = context.clock.now()
        // Read and write in one transaction, leaving the key hashes alone: a
        // rotation running meanwhile is never undone.
        let updated = try await context.store.write { session -> AppRecord in
            guard var app = try session.app(id: appID) else { throw Problem(status: 404, detail: "There is no app \(appID).") }
            if let name { app.name = name }
            if let strict { app.strictActivityTypes = strict }
            if let bundleID { app.bundleID = bundleID }
            if let credentials { app.credentials = credentials }
            app.updatedAt = max(now, app.updatedAt.addingTimeInterval(0.001))
            try session.updateAppSettings(app)
            return app
        }
        context.appKeys.invalidate()
        if let added = updated.credentials, credentials != nil { context.credentialsChanged(added) }
        return APIJSON.response(.object(Self.json(updated)))
    }

    private func rotate(_ request: HTTPRequest, appID: String) async throws -> HTTPResponse {
        try await Authentication.requireAdmin(request, context: context)
        try RequestBody(request, schema: RequestSchemas.empty).finish()
        let serverKey = try AppKeys.generate(.server)
        let deviceKey = try AppKeys.generate(.device)
        let now = context.clock.now()
        let rotated = try await context.store.write { session -> Bool in
            try session.replaceKeys(
                appID: appID, serverKeyHash: Authentication.hash(serverKey), deviceKeyHash: Authentication.hash(deviceKey),
                now: now)
        }
        context.appKeys.invalidate()
        guard rotated else { throw Problem(status: 404, detail: "There is no app \(appID).") }
        context.logger.notice("app keys rotated", ("app", .string(appID)))
        return APIJSON.response(.object([
            "id": .string(appID), "server_key": .string(serverKey), "device_key": .string(deviceKey),
        ]))
    }

    private func app(_ appID: String) async throws -> AppRecord {
        guard let app = try await context.store.read({ try $0.app(id: appID) }) else {
            throw Problem(status: 404, detail: "There is no app \(appID).")
        }
        return app
    }

    // MARK: - Fields

    /// The `apns` group: `nil` when absent, `.some(nil)` when null (remove), else
    /// all three fields checked together (the key must be a P-256 private key).
    private static func credentials(_ object: ObjectReader) -> APNsCredentials?? {
        if object.isNull("apns") { return .some(nil) }
        guard let apns = object.object("apns") else { return nil }
        let teamID = apns.string("team_id")
        let keyID = apns.string("key_id")
        let pem = apns.string("private_key")
        guard let teamID, let keyID, let pem else { return nil }
        do {
            _ = try P256.SigningKey(pemRepresentation: pem)
        } catch {
            apns.fail("private_key", "must be the .p8 key's PEM text (a P-256 private key): \(error)")
            return nil
        }
        return APNsCredentials(teamID: teamID, keyID: keyID, privateKeyPEM: pem)
    }

    static func json(_ app: AppRecord) -> [String: JSONValue] {
        var json: [String: JSONValue] = [
            "id": .string(app.id), "name": .string(app.name), "bundle_id": .string(app.bundleID),
            "created_at": APIJSON.date(app.createdAt), "updated_at": APIJSON.date(app.updatedAt),
            "strict_activity_types": .bool(app.strictActivityTypes),
        ]
        if let credentials = app.credentials {
            json["apns"] = ["team_id": .string(credentials.teamID), "key_id": .string(credentials.keyID)]
        } else {
            json["apns"] = .null
        }
        return json
    }
}
