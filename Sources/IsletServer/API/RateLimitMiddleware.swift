import Foundation
import HTTPServer
import IsletCore
import IsletLog
import IsletService

/// Enforces the app's rate limit of a route's family (`APIRoute.family`), after
/// authentication: a request past it is `429` (problem type `quota-exceeded`,
/// naming the policy, with `Retry-After`) and its handler never runs, so nothing is
/// queued. Every answer of a limited family, the handler's errors included, carries
/// `RateLimit-Policy` and `RateLimit` (draft-ietf-httpapi-ratelimit-headers-11). A
/// retry with the `Idempotency-Key` of a request that was accepted is let through
/// past the limit, to replay its answer.
struct RateLimitMiddleware: Middleware {
    let limiter: RateLimiter
    let logger: Logger

    /// The problem type of a refusal, as the draft registers it.
    static let problemType = "https://iana.org/assignments/http-problem-types#quota-exceeded"

    func respond(
        to request: RouteRequest, route: APIRoute, next: @Sendable (RouteRequest) async throws -> HTTPResponse
    ) async throws -> HTTPResponse {
        guard let family = route.family, case .app(let app) = request.caller,
            let decision = try await limiter.take(family, app: app)
        else { return try await next(request) }
        var response: HTTPResponse
        var admitted = decision.admitted
        if !admitted { admitted = await isReplay(request, appID: app.id) }
        if admitted {
            do {
                response = try await next(request)
            } catch {
                response = ErrorRendering.response(error, route: route.pattern, logger: logger)
            }
        } else {
            limiter.countRefusal(appID: app.id, family: family)
            response = Self.refusal(family, decision).response
        }
        response.headers.set("RateLimit-Policy", decision.policyField(family.rawValue))
        response.headers.set("RateLimit", decision.limitField(family.rawValue))
        return response
    }

    /// Whether the request retries one that was accepted: it has an answer to replay.
    private func isReplay(_ request: RouteRequest, appID: String) async -> Bool {
        guard let key = request.http.headers[IdempotencyKey.field], !key.isEmpty else { return false }
        return await limiter.hasAnswer(appID: appID, idempotencyKey: key)
    }

    /// The `429` of a request of `family` past its limit.
    static func refusal(_ family: RateFamily, _ decision: RateDecision) -> Problem {
        Problem(
            type: problemType, title: "Request cannot be satisfied as the assigned quota has been exceeded", status: 429,
            detail: "The app's \(family.rawValue) limit of \(decision.quota) requests per \(decision.windowSeconds) s is spent; retry after \(decision.retryAfterSeconds ?? 1) s.",
            retryAfter: decision.retryAfterSeconds ?? 1, violatedPolicies: [family.rawValue])
    }
}
