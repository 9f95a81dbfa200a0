import Foundation
import HTTPServer
import IsletCore

/// The FCM simulator's JSON inspection API, beside FCM's own endpoints on its
/// plain-HTTP/1.1 listener (meant for 127.0.0.1):
/// - `GET /messages[?after=N]`: every send, oldest first (`sequence` from 1): the
///   status answered, FCM's error code, the token, the data and Android options as
///   sent, and what the simulated device did (`device_note`).
/// - `GET /devices`: the simulated Android devices (by token) and the activities
///   their apps show.
/// - `GET /faults`; `POST /faults` `{fault, count?, retry_after?}`: scripts the next
///   `count` sends (1 by default) to answer `fault` (an `FCMFault`: `UNREGISTERED`,
///   `QUOTA_EXCEEDED`, …), with `Retry-After: retry_after` when given; answers the
///   faults still to come.
/// - `POST /unregister` `{token}`: the app on that device was removed; sends to the
///   token answer `UNREGISTERED`.
/// - `POST /accounts` `{project_id?, client_email?, token_uri?}`: a new service
///   account the simulator trusts, answered as the JSON a team downloads from
///   Firebase; its `token_uri` is this listener's `/token` unless one is given.
/// - `POST /reset`: forgets every send, device, unregistered token and scripted
///   fault (the trusted accounts stay).
/// - `GET /healthz`.
/// Requests from web pages are refused first (see `InspectionGuard`).
struct FCMInspectionAPI: Sendable {
    /// Makes a trusted service account: project, client email, token URI (nil:
    /// the HTTP/1.1 listener's).
    typealias AccountMaker = @Sendable (_ projectID: String, _ clientEmail: String?, _ tokenURI: String?) throws -> JSONValue

    private let router: ImmediateRouter
    private let guardRail: InspectionGuard

    /// `listeningHost` is the address the listener binds, which `Host` may name.
    init(engine: FCMSimulatorEngine, listeningHost: String, makeAccount: @escaping AccountMaker) {
        guardRail = InspectionGuard(listeningHost: listeningHost)
        var router = ImmediateRouter()
        router.add("GET", "/healthz") { _, _ in Self.json(["status": "ok"]) }
        router.add("GET", "/messages") { request, _ in
            var after = 0
            if let text = request.queryValue("after") {
                guard let number = Int(text), number >= 0 else {
                    return InspectionAPI.problem(400, "after: \"\(text)\" is not a message number (a whole number from 0).")
                }
                after = number
            }
            let records = engine.records().filter { $0.sequence > after }.map(Self.json(record:))
            return Self.json(["messages": .array(records)])
        }
        router.add("GET", "/devices") { _, _ in
            let devices = engine.devices().values.sorted { $0.token < $1.token }.map(Self.json(device:))
            return Self.json(["devices": .array(devices)])
        }
        router.add("GET", "/faults") { _, _ in Self.json(["faults": Self.json(faults: engine.pendingFaults())]) }
        router.add("POST", "/faults") { request, _ in Self.inject(request, engine: engine) }
        router.add("POST", "/unregister") { request, _ in
            guard let body = Self.object(request.body) else { return InspectionAPI.problem(400, "The body must be a JSON object {token}.") }
            guard case .string(let token)? = body["token"], !token.isEmpty else { return InspectionAPI.problem(422, "token: required") }
            engine.unregister(token)
            return HTTPResponse(status: 204)
        }
        router.add("POST", "/accounts") { request, _ in Self.account(request, makeAccount: makeAccount) }
        router.add("POST", "/reset") { _, _ in
            engine.reset()
            return HTTPResponse(status: 204)
        }
        self.router = router
    }

    /// Answers on the server's own thread: the engine never waits.
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        InspectionAPI.answer(request, router: router, guardRail: guardRail)
    }

    private static func inject(_ request: HTTPRequest, engine: FCMSimulatorEngine) -> HTTPResponse {
        guard let body = object(request.body) else {
            return InspectionAPI.problem(400, "The body must be a JSON object {fault, count?, retry_after?}.")
        }
        guard case .string(let name)? = body["fault"], let fault = FCMFault(rawValue: name) else {
            return InspectionAPI.problem(422, "fault: one of \(FCMFault.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var count = 1
        if let value = body["count"] {
            guard let number = value.int64Value, (1...10_000).contains(number) else {
                return InspectionAPI.problem(422, "count: a whole number from 1 to 10000")
            }
            count = Int(number)
        }
        var retryAfter: Int?
        if let value = body["retry_after"], value != .null {
            guard let seconds = value.int64Value, (0...86_400).contains(seconds) else {
                return InspectionAPI.problem(422, "retry_after: a whole number of seconds from 0 to 86400")
            }
            retryAfter = Int(seconds)
        }
        engine.inject(fault, count: count, retryAfter: retryAfter)
        return json(["faults": json(faults: engine.pendingFaults())], status: 201)
    }

    private static func account(_ request: HTTPRequest, makeAccount: AccountMaker) -> HTTPResponse {
        let body: [String: JSONValue]
        if request.body.isEmpty {
            body = [:]
        } else {
            guard let parsed = object(request.body) else {
                return InspectionAPI.problem(400, "The body must be a JSON object {project_id?, client_email?, token_uri?}.")
            }
            body = parsed
        }
        var fields: [String: String] = [:]
        for name in ["project_id", "client_email", "token_uri"] {
            guard let value = body[name], value != .null else { continue }
            guard case .string(let text) = value, !text.isEmpty, !text.contains(where: \.isWhitespace) else {
                return InspectionAPI.problem(422, "\(name): a string without spaces")
            }
            fields[name] = text
        }
        if let project = fields["project_id"], project.contains("/") || project.contains("?") || project.contains("%") {
            return InspectionAPI.problem(422, "project_id: \"\(project)\" cannot name a project in a URL path")
        }
        if let email = fields["client_email"], !email.contains("@") {
            return InspectionAPI.problem(422, "client_email: \"\(email)\" is not an email address")
        }
        do {
            let account = try makeAccount(fields["project_id"] ?? "islet-demo", fields["client_email"], fields["token_uri"])
            return json(account, status: 201)
        } catch {
            return InspectionAPI.problem(500, "No account was made: \(error)")
        }
    }

    // MARK: - JSON

    private static func object(_ body: Data) -> [String: JSONValue]? {
        (try? JSONValue(parsing: body))?.objectValue
    }

    static func json(record: FCMRecord) -> JSONValue {
        [
            "sequence": .integer(Int64(record.sequence)), "status": .integer(Int64(record.status)),
            "error_code": record.errorCode.map(JSONValue.string) ?? .null, "token": record.token.map(JSONValue.string) ?? .null,
            "data": .object(record.data.mapValues(JSONValue.string)), "android": record.android ?? .null,
            "device_note": record.deviceNote.map(JSONValue.string) ?? .null,
        ]
    }

    static func json(device: SimulatedAndroidDevice) -> JSONValue {
        let activities = device.activities.values.sorted { $0.activityID < $1.activityID }.map { activity -> JSONValue in
            [
                "activity_id": .string(activity.activityID), "activity_type": .string(activity.activityType),
                "ended": .bool(activity.ended), "content_state": activity.contentState ?? .null,
                "attributes": activity.attributes ?? .null, "last_timestamp": .integer(activity.lastTimestamp),
                "updates": .integer(Int64(activity.updates)),
            ]
        }
        return ["token": .string(device.token), "project_id": .string(device.projectID), "activities": .array(activities)]
    }

    static func json(faults: [(fault: FCMFault, retryAfter: Int?)]) -> JSONValue {
        .array(faults.map { ["fault": .string($0.fault.rawValue), "retry_after": $0.retryAfter.map { .integer(Int64($0)) } ?? .null] })
    }

    static func json(_ value: JSONValue, status: Int = 200) -> HTTPResponse {
        HTTPResponse(status: status, contentType: "application/json", body: Data(value.jsonText.utf8))
    }
}
