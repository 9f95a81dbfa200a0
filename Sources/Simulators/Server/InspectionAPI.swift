import Foundation
import HTTPServer
import IsletCore

/// The simulator's JSON inspection API (plain HTTP, meant for 127.0.0.1):
/// - `GET /pushes[?after=N]`: every recorded push, oldest first, with what the
///   simulated device did with it.
/// - `GET /activities`, `GET /activities/{id}`: the simulated Live Activities.
/// - `GET /tokens`: the tokens the simulated devices hold.
/// - `POST /tokens` `{token, kind, environment?, frequent_updates?}`: registers a token by hand
///   (`kind`: `device`, `push_to_start` or `live_activity_update`).
/// - `POST /schemas` `{attributes_type, format?, widget_name?, attributes,
///   content_state}`: the app's activity type, as Islet's activity-type routes take
///   it; the simulated device then drops content it could not decode, with the
///   reason. `GET /schemas` lists them.
/// - `GET /channels`: the broadcast channels the channel management API created.
/// - `POST /channels/{id}/subscribers` `{token}`: a simulated device (named by
///   `token`) starts an activity listening on the channel, as an app does with
///   `pushType: .channel(id)`; `{id}` is the channel id in base64url (RFC 4648 §5,
///   padding optional), since Apple's ids may hold `/`.
/// - `POST /reset`: forgets every push, token, activity and channel.
/// - `GET /healthz`.
/// Requests from web pages are refused first (see `InspectionGuard`).
struct InspectionAPI: Sendable {
    let engine: SimulatorEngine
    private let router: ImmediateRouter
    private let guardRail: InspectionGuard

    /// `listeningHost` is the address the API listens on, which `Host` may name.
    init(engine: SimulatorEngine, listeningHost: String) {
        self.engine = engine
        guardRail = InspectionGuard(listeningHost: listeningHost)
        var router = ImmediateRouter()
        router.add("GET", "/healthz") { _, _ in InspectionAPI.json(["status": "ok"]) }
        router.add("GET", "/pushes") { request, _ in
            var after = 0
            if let text = request.queryValue("after") {
                guard let number = Int(text), number >= 0 else {
                    return InspectionAPI.problem(400, "after: \"\(text)\" is not a push number (a whole number from 0).")
                }
                after = number
            }
            return InspectionAPI.json(["pushes": engine.pushes(after: after)])
        }
        router.add("GET", "/activities") { _, _ in InspectionAPI.json(["activities": engine.activities()]) }
        router.add("GET", "/activities/{id}") { _, parameters in
            guard let activity = engine.activity(id: parameters["id"] ?? "") else {
                return InspectionAPI.problem(404, "No simulated activity \(parameters["id"] ?? "").")
            }
            return InspectionAPI.json(activity)
        }
        router.add("GET", "/tokens") { _, _ in InspectionAPI.json(["tokens": engine.tokens()]) }
        router.add("GET", "/channels") { _, _ in InspectionAPI.json(["channels": engine.channels()]) }
        router.add("POST", "/channels/{id}/subscribers") { request, parameters in
            InspectionAPI.subscribe(request, channel: parameters["id"] ?? "", engine: engine)
        }
        router.add("POST", "/tokens") { request, _ in InspectionAPI.registerToken(request, engine: engine) }
        router.add("POST", "/schemas") { request, _ in InspectionAPI.registerSchema(request, engine: engine) }
        router.add("GET", "/schemas") { _, _ in
            let schemas = engine.schemas()
            let body = JSONValue.object(["schemas": .object(schemas.mapValues(\.json))])
            return HTTPResponse(status: 200, contentType: "application/json", body: Data(body.jsonText.utf8))
        }
        router.add("POST", "/reset") { _, _ in
            engine.reset()
            return HTTPResponse(status: 204)
        }
        self.router = router
    }

    /// Answers on the server's own thread: the engine never waits, and tests that
    /// keep the concurrency pool busy still get their answers.
    func handle(_ request: HTTPRequest) -> HTTPResponse {
        Self.answer(request, router: router, guardRail: guardRail)
    }

    /// `request`'s answer from `router`, after `guardRail` (shared by the FCM
    /// simulator's inspection API): a refusal, the route's answer, 405 or 404.
    static func answer(_ request: HTTPRequest, router: ImmediateRouter, guardRail: InspectionGuard) -> HTTPResponse {
        if let refusal = guardRail.refusal(request) { return refusal }
        switch router.match(method: request.method, path: request.path) {
        case .found(let handler, let parameters, _):
            return handler(request, parameters)
        case .methodNotAllowed(let allowed, _):
            var response = InspectionAPI.problem(405, "\(request.method) is not allowed on \(request.path).")
            response.headers.set("Allow", allowed.joined(separator: ", "))
            return response
        case .notFound:
            return InspectionAPI.problem(404, "There is no route \(request.path).")
        }
    }

    private struct TokenRegistration: Decodable {
        let token: String?
        let kind: String?
        let environment: String?
        let frequentUpdates: Bool?

        enum CodingKeys: String, CodingKey {
            case token, kind, environment
            case frequentUpdates = "frequent_updates"
        }
    }

    private static func registerToken(_ request: HTTPRequest, engine: SimulatorEngine) -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(TokenRegistration.self, from: request.body) else {
            return problem(400, "The body must be a JSON object {token, kind, environment?}.")
        }
        guard let token = body.token else { return problem(422, "token: required") }
        guard let kindText = body.kind, let kind = PushTokenKind(rawValue: kindText), PushTokenKind.deviceKinds.contains(kind)
        else {
            return problem(422, "kind: one of \(PushTokenKind.deviceKinds.map(\.rawValue).joined(separator: ", "))")
        }
        var environment: APNsEnvironment?
        if let text = body.environment {
            guard let parsed = APNsEnvironment(rawValue: text) else { return problem(422, "environment: sandbox or production") }
            environment = parsed
        }
        do {
            return json(
                try engine.registerToken(token, kind: kind, environment: environment, frequentUpdates: body.frequentUpdates),
                status: 201)
        } catch {
            return problem(422, "token: \(error.message)")
        }
    }

    private static func subscribe(_ request: HTTPRequest, channel: String, engine: SimulatorEngine) -> HTTPResponse {
        struct Subscription: Decodable { let token: String? }
        guard let body = try? JSONDecoder().decode(Subscription.self, from: request.body) else {
            return problem(400, "The body must be a JSON object {token}.")
        }
        guard let token = body.token, !token.isEmpty else { return problem(422, "token: required") }
        guard let id = standardBase64(channel) else { return problem(404, "No channel \(channel).") }
        do {
            return json(try engine.subscribe(channelID: id, token: token), status: 201)
        } catch {
            return problem(404, error.message)
        }
    }

    /// A base64url id (RFC 4648 §5, with or without padding) in standard base64, as
    /// Apple gives channel ids; `nil` when it is not base64url.
    static func standardBase64(_ url: String) -> String? {
        var text = url.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while text.count % 4 != 0 { text += "=" }
        return Data(base64Encoded: text) != nil ? text : nil
    }

    private static func registerSchema(_ request: HTTPRequest, engine: SimulatorEngine) -> HTTPResponse {
        guard let body = try? JSONValue(parsing: request.body), body.objectValue != nil else {
            return problem(400, "The body must be a JSON object {attributes_type, format?, widget_name?, attributes, content_state}.")
        }
        guard case .string(let type)? = body["attributes_type"], !type.isEmpty else {
            return problem(422, "attributes_type: required (the attributes-type the pushes name)")
        }
        var format = ActivityTypeSchema.Format.activitykit
        if let name = body["format"]?.stringValue {
            guard let parsed = ActivityTypeSchema.Format(rawValue: name) else { return problem(422, "format: activitykit or expo-widgets") }
            format = parsed
        }
        var problems: [String] = []
        let attributes = FieldSchema.parseFields(body["attributes"] ?? [:], path: "attributes")
        let state = FieldSchema.parseFields(body["content_state"] ?? [:], path: "content_state")
        problems += (attributes.problems + state.problems).map(\.description)
        if format == .expoWidgets && body["widget_name"]?.stringValue == nil { problems.append("widget_name: required for expo-widgets") }
        guard problems.isEmpty else { return problem(422, problems.joined(separator: "; ")) }
        let schema = ActivityTypeSchema(
            format: format, widgetName: body["widget_name"]?.stringValue, attributes: attributes.fields,
            contentState: state.fields)
        engine.registerSchema(schema, attributesType: type)
        let answer = JSONValue.object(["attributes_type": .string(type), "schema": schema.json])
        return HTTPResponse(status: 201, contentType: "application/json", body: Data(answer.jsonText.utf8))
    }

    static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(value) else { return problem(500, "The answer could not be encoded.") }
        return HTTPResponse(status: status, contentType: "application/json", body: body)
    }

    static func problem(_ status: Int, _ detail: String) -> HTTPResponse {
        let document: [String: Any] = [
            "type": "about:blank", "title": HTTPResponse.reasonPhrase(status), "status": status, "detail": detail,
        ]
        let body = (try? JSONSerialization.data(withJSONObject: document, options: [.sortedKeys])) ?? Data()
        return HTTPResponse(status: status, contentType: "application/problem+json", body: body)
    }
}
