import Foundation
import HTTPServer
import IsletCore
import IsletService
import Storage

/// The admin routes: create, list, read and change apps, and rotate their keys.
struct AppRoutes: Sendable {
    let apps: AppService
    /// The history's retention, and what an app's history holds.
    let history: HistoryService
    /// The server's budgets and rate limits, which an app's own figures override.
    let environment: ServiceEnvironment

    var routes: [APIRoute] {
        [
            APIRoute(
                "POST", "/v1/apps", summary: "Create an app; its server and device keys are returned once.",
                access: .admin, body: RequestSchemas.createApp(historyRetentionDays: environment.historyRetentionDays),
                carriesSecret: true,
                responses: [(201, "The app, with its keys"), (422, "A field is invalid")],
                answer: AnswerSchemas.appCreatedAnswer
            ) { request in try await create(request) },
            APIRoute(
                "GET", "/v1/apps", summary: "List the apps.", access: .admin,
                responses: [(200, "Every app")], answer: AnswerSchemas.appListAnswer
            ) { request in try await list(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}",
                summary: "Read an app, with what its history holds: {retention_days, activities, sends, pushes, oldest_at}.",
                access: .admin, responses: [(200, "The app, with its history"), (404, "No such app")],
                answer: AnswerSchemas.appDetailAnswer
            ) { request in try await show(request) },
            APIRoute(
                "PATCH", "/v1/apps/{app_id}",
                summary: "Change an app's name, bundle id, APNs credentials (replaced as a whole group; null removes them) or settings (strict_activity_types, device_secrets, local_join, history_retention_days, budget, rate_limits: each figure null takes the server's again).",
                access: .admin, body: RequestSchemas.updateApp(historyRetentionDays: environment.historyRetentionDays),
                responses: [(200, "The app"), (404, "No such app"), (422, "A field is invalid")],
                answer: AnswerSchemas.appAnswer
            ) { request in try await update(request) },
            APIRoute(
                "POST", "/v1/apps/{app_id}/keys/rotate",
                summary: "Replace both app keys; the old ones stop working at once.", access: .admin,
                body: RequestSchemas.empty, carriesSecret: true,
                responses: [(200, "The new keys"), (404, "No such app")], answer: AnswerSchemas.appKeysAnswer
            ) { request in try await rotate(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/overview",
                summary: "What the app's sends over a period came to, by bucket and in all: sends, pushes, delivered, failed (and by reason), shown (receipts), taps, priority downgrades, deferred starts, requests refused by a rate limit and dead tokens acted on; the webhooks failing now; with the budget and rate limits in force. Counted from each send's counters, across every node.",
                access: .server, query: Self.overviewQuery,
                responses: [
                    (200, "{app_id, name, period, from, to, bucket_seconds, totals, series, failures, webhooks_failing, budget, rate_limits}"),
                    (422, "A query parameter is invalid"),
                ],
                answer: AnswerSchemas.appOverviewAnswer
            ) { request in try await overview(request) },
            APIRoute(
                "GET", "/v1/apps/{app_id}/lookup",
                summary: "Find the app's records the text names: an activity or a device by its id, devices by user id, pushes by apns-id or apns-unique-id, devices and copies by the first hex digits of a token. At most 20 of each.",
                access: .server, query: Self.lookupQuery,
                responses: [(200, "{query, activities, devices, copies, pushes}"), (422, "q is empty, too long or holds U+0000")],
                answer: AnswerSchemas.appLookupAnswer
            ) { request in try await lookup(request) },
        ]
    }

    /// The lookup's query.
    static let lookupQuery: [QueryParameter] = [
        .text("q", "What to look for (1 to 512 characters): an id, a user id, an apns-id, or a token's first hex digits.",
              TextFormat(rule: .plain, maxLength: 512))
    ]

    private func lookup(_ request: RouteRequest) async throws -> HTTPResponse {
        let text: String = request.query["q"] ?? ""
        let found = try await history.lookup(appID: request.app.id, text: text)
        return APIJSON.response(.object([
            "query": .string(text),
            "activities": .array(found.activities.map {
                .object(["activity_id": .string($0.activityID), "activity_type": .string($0.activityType), "status": .string($0.status)])
            }),
            "devices": .array(found.devices.map {
                .object([
                    "device_id": .string($0.deviceID), "platform": .string($0.platform),
                    "user_id": $0.userID.map(JSONValue.string) ?? .null, "matched": .string($0.matched),
                ])
            }),
            "copies": .array(found.copies.map { .object(["activity_id": .string($0.activityID), "device_id": .string($0.deviceID)]) }),
            "pushes": .array(found.pushes.map {
                .object([
                    "activity_id": $0.activityID.map(JSONValue.string) ?? .null, "device_id": .string($0.deviceID),
                    "apns_id": .string($0.apnsID), "event": .string($0.event), "status": .string($0.status),
                    "send_id": .string(String($0.sendID)), "matched": .string($0.matched),
                ])
            }),
        ]))
    }

    /// The overview's query: the period, `day` when absent.
    static let overviewQuery: [QueryParameter] = [
        .oneOf(
            "period", "The period, ending with the bucket that holds now: hour (5-minute buckets), day (hourly; the default) or week (6-hourly).",
            OverviewPeriod.self)
    ]

    private func overview(_ request: RouteRequest) async throws -> HTTPResponse {
        let period: OverviewPeriod = request.query["period"] ?? .day
        let view = try await history.overview(appID: request.app.id, period: period)
        let app = json(request.app)
        func counts(_ bucket: OverviewBucket) -> [String: JSONValue] {
            [
                "sends": .integer(bucket.sends), "pushes": .integer(bucket.targets), "delivered": .integer(bucket.delivered),
                "failed": .integer(bucket.failed), "received": .integer(bucket.received), "taps": .integer(bucket.taps),
                "priority_downgraded": .integer(bucket.downgraded), "deferred": .integer(bucket.deferred),
                "rate_limited": .integer(bucket.refused), "dead_tokens": .integer(bucket.deadTokens),
            ]
        }
        return APIJSON.response(.object([
            "app_id": .string(request.app.id), "name": .string(request.app.name), "period": .string(period.rawValue),
            "from": APIJSON.date(view.from), "to": APIJSON.date(view.to), "bucket_seconds": .integer(period.bucketSeconds),
            "totals": .object(counts(view.totals)),
            "series": .array(view.overview.buckets.map { bucket in
                var entry = counts(bucket)
                entry["at"] = APIJSON.date(bucket.start)
                return .object(entry)
            }),
            "failures": .array(view.overview.failures.map {
                .object(["reason": .string($0.reason), "count": .integer($0.count)])
            }),
            "webhooks_failing": .array(view.overview.failingWebhooks.map {
                .object([
                    "webhook_id": .string($0.webhookID), "url": .string($0.url), "enabled": .bool($0.enabled),
                    "failing_since": APIJSON.date($0.failingSince), "disabled_reason": APIJSON.optional($0.disabledReason),
                ])
            }),
            "budget": app["budget"] ?? .null, "rate_limits": app["rate_limits"] ?? .null,
        ]))
    }

    // MARK: - Handlers

    private func create(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let name = body.root.string("name")
        let bundleID = body.root.string("bundle_id")
        let credentials = Self.credentials(body.root)
        let strict = body.root.bool("strict_activity_types")
        let fcm = Self.fcm(body.root)
        let localJoin = body.root.enumeration("local_join", as: LocalJoinRule.self)
        let retention = body.root.bounded("history_retention_days")
        try body.finish()
        var command = CreateApp(
            name: name!, bundleID: bundleID!, credentials: credentials ?? nil, strictActivityTypes: strict ?? false)
        command.fcmServiceAccount = fcm ?? nil
        command.localJoin = localJoin ?? .anyone
        command.historyRetentionDays = retention
        let created = try await apps.create(command)
        var json = json(created.app)
        json["server_key"] = .string(created.serverKey)
        json["device_key"] = .string(created.deviceKey)
        return APIJSON.response(status: 201, .object(json))
    }

    private func list(_ request: RouteRequest) async throws -> HTTPResponse {
        let apps = try await apps.list()
        return APIJSON.response(.object(["items": .array(apps.map { .object(json($0)) })]))
    }

    private func show(_ request: RouteRequest) async throws -> HTTPResponse {
        let app = try await apps.app(id: request.parameters["app_id"] ?? "")
        let view = try await history.view(of: app)
        var json = json(app)
        json["history"] = [
            "retention_days": .double(view.retentionDays), "activities": .integer(Int64(view.summary.activities)),
            "sends": .integer(Int64(view.summary.sends)), "pushes": .integer(Int64(view.summary.pushes)),
            "oldest_at": APIJSON.date(view.summary.oldestAt),
        ]
        return APIJSON.response(.object(json))
    }

    private func update(_ request: RouteRequest) async throws -> HTTPResponse {
        let body = try request.body()
        let name = body.root.string("name")
        let bundleID = body.root.string("bundle_id")
        let credentials = Self.credentials(body.root)
        let strict = body.root.bool("strict_activity_types")
        let deviceSecrets = body.root.enumeration("device_secrets", as: DeviceSecretPolicy.self)
        let budget = Self.budgetChange(body.root)
        let rateLimits = Self.rateLimitChange(body.root)
        let fcm = Self.fcm(body.root)
        let localJoin = body.root.enumeration("local_join", as: LocalJoinRule.self)
        let retention = Self.change(body.root, "history_retention_days", body.root.bounded)
        try body.finish()
        var command = UpdateApp(
            appID: request.parameters["app_id"] ?? "", name: name, bundleID: bundleID, credentials: credentials,
            strictActivityTypes: strict, deviceSecrets: deviceSecrets)
        command.budget = budget
        command.rateLimits = rateLimits
        command.fcmServiceAccount = fcm
        command.localJoin = localJoin
        command.historyRetentionDays = retention
        let updated = try await apps.update(command)
        return APIJSON.response(.object(json(updated)))
    }

    private func rotate(_ request: RouteRequest) async throws -> HTTPResponse {
        try request.body().finish()
        let keys = try await apps.rotateKeys(appID: request.parameters["app_id"] ?? "")
        return APIJSON.response(.object([
            "id": .string(keys.appID), "server_key": .string(keys.serverKey), "device_key": .string(keys.deviceKey),
        ]))
    }

    // MARK: - Fields

    /// The `apns` group: `nil` when absent, `.some(nil)` when null (remove), else
    /// all three fields together (the service checks the key).
    private static func credentials(_ object: ObjectReader) -> APNsCredentials?? {
        if object.isNull("apns") { return .some(nil) }
        guard let apns = object.object("apns") else { return nil }
        let teamID = apns.string("team_id")
        let keyID = apns.string("key_id")
        let pem = apns.string("private_key")
        guard let teamID, let keyID, let pem else { return nil }
        return APNsCredentials(teamID: teamID, keyID: keyID, privateKeyPEM: pem)
    }

    /// The `fcm` group's service account JSON: `nil` when absent, `.some(nil)` when
    /// null (remove), else the JSON (the service checks it).
    private static func fcm(_ object: ObjectReader) -> JSONValue?? {
        if object.isNull("fcm") { return .some(nil) }
        guard let fcm = object.object("fcm"), let account = fcm.jsonObject("service_account") else { return nil }
        return .some(account)
    }

    /// A change of one figure: `nil` when absent, `.some(nil)` when null (the
    /// server's again), else the value `read` gives.
    private static func change<T>(_ object: ObjectReader, _ key: String, _ read: (String) -> T?) -> T?? {
        if object.isNull(key) { return .some(nil) }
        return read(key).map { .some($0) }
    }

    /// The `budget` group: null takes every server figure again.
    private static func budgetChange(_ object: ObjectReader) -> BudgetChange? {
        if object.isNull("budget") { return .restoreDefaults }
        guard let budget = object.object("budget") else { return nil }
        return BudgetChange(
            priority10PerHour: change(budget, "priority_10_per_hour", budget.count),
            frequentPriority10PerHour: change(budget, "frequent_priority_10_per_hour", budget.count),
            policy: change(budget, "policy") { budget.enumeration($0, as: BudgetPolicy.self) },
            startsPerDevicePerHour: change(budget, "starts_per_device_per_hour", budget.count))
    }

    /// The `rate_limits` group: null takes every server figure again.
    private static func rateLimitChange(_ object: ObjectReader) -> RateLimitChange? {
        if object.isNull("rate_limits") { return .restoreDefaults }
        guard let limits = object.object("rate_limits") else { return nil }
        return RateLimitChange(
            sendsPerSecond: change(limits, "sends_per_second", limits.bounded),
            sendsBurst: change(limits, "sends_burst", limits.count),
            registrationsPerSecond: change(limits, "registrations_per_second", limits.bounded),
            registrationsBurst: change(limits, "registrations_burst", limits.count))
    }

    /// An app as the API shows it, with the budget and rate limits in force (its own
    /// figures, else the server's).
    func json(_ app: AppRecord) -> [String: JSONValue] {
        var json = Self.json(app)
        let budget = app.budget.applied(to: environment.budget)
        json["budget"] = [
            "priority_10_per_hour": .integer(Int64(budget.priority10PerHour)),
            "frequent_priority_10_per_hour": .integer(Int64(budget.frequentPriority10PerHour)),
            "policy": .string(budget.policy.rawValue),
            "starts_per_device_per_hour": .integer(Int64(budget.startsPerDevicePerHour)),
        ]
        var limits: [String: JSONValue] = [:]
        for family in RateFamily.allCases {
            let limit = app.rateLimits.limit(family, defaults: environment.rateLimits)
            limits["\(family.rawValue)_per_second"] = limit.map { .double($0.perSecond) } ?? .null
            limits["\(family.rawValue)_burst"] = limit.map { .integer(Int64($0.burst)) } ?? .null
        }
        json["rate_limits"] = .object(limits)
        return json
    }

    static func json(_ app: AppRecord) -> [String: JSONValue] {
        var json: [String: JSONValue] = [
            "id": .string(app.id), "name": .string(app.name), "bundle_id": .string(app.bundleID),
            "created_at": APIJSON.date(app.createdAt), "updated_at": APIJSON.date(app.updatedAt),
            "strict_activity_types": .bool(app.strictActivityTypes),
            "device_secrets": .string(app.deviceSecrets.rawValue), "local_join": .string(app.localJoin.rawValue),
            "history_retention_days": app.historyRetentionDays.map(JSONValue.double) ?? .null,
        ]
        // The FCM account is named, never returned: its key stays on the server.
        json["fcm"] = app.fcm.map { ["project_id": .string($0.projectID), "client_email": .string($0.clientEmail)] } ?? .null
        if let credentials = app.credentials {
            json["apns"] = ["team_id": .string(credentials.teamID), "key_id": .string(credentials.keyID)]
        } else {
            json["apns"] = .null
        }
        return json
    }
}
