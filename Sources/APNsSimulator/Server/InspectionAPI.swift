import Foundation
import HTTPServer
import IsletCore

/// The simulator's JSON inspection API (plain HTTP, meant for 127.0.0.1):
/// - `GET /pushes[?after=N]`: every recorded push, oldest first, with what the
///   simulated device did with it.
/// - `GET /activities`, `GET /activities/{id}`: the simulated Live Activities.
/// - `GET /tokens`: the tokens the simulated devices hold.
/// - `POST /tokens` `{token, kind, environment?}`: registers a token by hand
///   (`kind`: `device`, `push_to_start` or `live_activity_update`).
/// - `POST /reset`: forgets every push, token and activity.
/// - `GET /healthz`.
struct InspectionAPI: Sendable {
    let engine: SimulatorEngine
    private let router: Router

    init(engine: SimulatorEngine) {
        self.engine = engine
        var router = Router()
        router.add("GET", "/healthz") { _, _ in InspectionAPI.json(["status": "ok"]) }
        router.add("GET", "/pushes") { request, _ in
            let after = request.queryValue("after").flatMap(Int.init) ?? 0
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
        router.add("POST", "/tokens") { request, _ in InspectionAPI.registerToken(request, engine: engine) }
        router.add("POST", "/reset") { _, _ in
            engine.reset()
            return HTTPResponse(status: 204)
        }
        self.router = router
    }

    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        switch router.match(method: request.method, path: request.path) {
        case .found(let handler, let parameters, _):
            return await handler(request, parameters)
        case .methodNotAllowed(let allowed):
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
    }

    private static func registerToken(_ request: HTTPRequest, engine: SimulatorEngine) -> HTTPResponse {
        guard let body = try? JSONDecoder().decode(TokenRegistration.self, from: request.body) else {
            return problem(400, "The body must be a JSON object {token, kind, environment?}.")
        }
        guard let token = body.token else { return problem(422, "token: required") }
        guard let kindText = body.kind, let kind = PushTokenKind(rawValue: kindText) else {
            return problem(422, "kind: one of \(PushTokenKind.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        var environment: APNsEnvironment?
        if let text = body.environment {
            guard let parsed = APNsEnvironment(rawValue: text) else { return problem(422, "environment: sandbox or production") }
            environment = parsed
        }
        do {
            return json(try engine.registerToken(token, kind: kind, environment: environment), status: 201)
        } catch {
            return problem(422, "token: \(error.message)")
        }
    }

    static func json(_ value: some Encodable, status: Int = 200) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let body = try? encoder.encode(value) else { return problem(500, "The answer could not be encoded.") }
        return HTTPResponse(status: status, contentType: "application/json", body: body)
    }

    static func problem(_ status: Int, _ detail: String) -> HTTPResponse {
        let body = (try? JSONSerialization.data(withJSONObject: ["type": "about:blank", "status": status, "detail": detail], options: [.sortedKeys])) ?? Data()
        return HTTPResponse(status: status, contentType: "application/problem+json", body: body)
    }
}
