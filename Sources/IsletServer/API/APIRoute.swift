import Foundation
import HTTPServer
import IsletCore
import IsletLog

/// Who may call a route.
enum RouteAccess: String, Sendable {
    /// Anyone.
    case open
    /// The admin token.
    case admin
    /// An app's server key.
    case server
    /// An app's device key.
    case device
}

/// The path parameters of the API and their formats: the handlers check a path's
/// ids by these (422 when one breaks them), and the OpenAPI document shows them.
enum PathParameter {
    /// An app id as minted (`app_` and 20 hex digits); any other value is simply no
    /// app (404).
    static let appID = TextFormat(rule: .appID, minLength: 24, maxLength: 24)

    /// The names of `pattern`'s `{name}` segments, in order.
    static func names(in pattern: String) -> [String] {
        pattern.split(separator: "/").compactMap { part in
            part.hasPrefix("{") && part.hasSuffix("}") ? String(part.dropFirst().dropLast()) : nil
        }
    }

    /// The format of the path parameter `name`.
    static func format(_ name: String) -> TextFormat {
        switch name {
        case "app_id": appID
        case "activity_type": .activityType
        default: .identifier
        }
    }
}

/// One route of the API: its method and path, who may call it (which the router
/// enforces before the handler runs), what the OpenAPI document says about it, and
/// its handler. The router and the OpenAPI document are both built from the
/// same list, so the document lists exactly the routes served.
struct APIRoute: Sendable {
    typealias Handler = @Sendable (RouteRequest) async throws -> HTTPResponse

    let method: String
    let pattern: String
    let summary: String
    let access: RouteAccess
    /// The fields of the body, when the route reads one: the handler reads it by
    /// this schema (`RouteRequest.body()`), and the document shows it.
    let body: BodySchema?
    /// Whether the route honours `Idempotency-Key`.
    let idempotent: Bool
    /// Query parameters: checked before the handler runs (`QueryValues`), which
    /// reads their values from `RouteRequest.query`; a route that declares any
    /// refuses the names it does not.
    let query: [QueryParameter]
    /// What a route with a declared query finds wrong in what it reads beside the
    /// query and the body (the event stream's `Last-Event-ID`), checked with the
    /// query: its faults are answered in the query's one 422, after the query's.
    let alsoChecks: (@Sendable (HTTPRequest) -> [Problem.FieldError])?
    /// Statuses answered, with what each means, besides those every route of its
    /// kind answers (401/403 for a key, 404 for an app that is not the key's,
    /// 400/413/415/422 for a body).
    let responses: [(status: Int, description: String)]
    /// The media type of the success answers.
    let contentType: String
    /// The JSON Schema of a success answer's body (every 2xx status but 204), from
    /// `AnswerSchemas`; `nil` for a route whose answers are not JSON objects (a
    /// CSV export, the metrics' text, an event stream), which the document shows by
    /// their media type.
    let answer: JSONValue?
    /// A failure answered with a JSON body of the route's own rather than a problem
    /// (`/healthz`'s 503, which says which check failed), and that body's schema.
    let failureAnswer: (status: Int, schema: JSONValue)?
    /// Whether the body may be as large as a timeline of 1,440 entries
    /// (`Configuration.maxTimelineBodyBytes`) rather than `maxBodyBytes`.
    let largeBody: Bool
    /// Whether a success answer may carry a secret (a key, a signing secret, a
    /// device secret): every answer of the route then says `Cache-Control:
    /// no-store`, so that no cache or browser history keeps it.
    let carriesSecret: Bool
    /// The family of the app's rate limits the route counts against, if any: every
    /// answer then carries `RateLimit-Policy` and `RateLimit`, and past the limit it
    /// is `429`.
    let family: RateFamily?
    let handler: Handler

    init(
        _ method: String, _ pattern: String, summary: String, access: RouteAccess, body: BodySchema? = nil,
        idempotent: Bool = false, largeBody: Bool = false, carriesSecret: Bool = false, query: [QueryParameter] = [],
        alsoChecks: (@Sendable (HTTPRequest) -> [Problem.FieldError])? = nil, family: RateFamily? = nil,
        responses: [(status: Int, description: String)], contentType: String = "application/json",
        answer: JSONValue? = nil, failureAnswer: (status: Int, schema: JSONValue)? = nil, handler: @escaping Handler
    ) {
        self.answer = answer
        self.failureAnswer = failureAnswer
        self.family = family
        self.method = method
        self.pattern = pattern
        self.summary = summary
        self.access = access
        self.body = body
        self.idempotent = idempotent
        self.query = query
        self.alsoChecks = alsoChecks
        self.responses = responses
        self.contentType = contentType
        self.largeBody = largeBody
        self.carriesSecret = carriesSecret
        self.handler = handler
    }
}
