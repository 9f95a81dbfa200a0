import HTTPServer
import IsletLog
import IsletService

/// The one place an error becomes an answer: a problem as it is, a domain error as
/// the problem its code stands for, anything else a logged 500.
enum ErrorRendering {
    /// The HTTP status of a domain error's code.
    static func status(_ code: ServiceError.Code) -> Int {
        switch code {
        case .invalid: 422
        case .unauthenticated: 401
        case .forbidden: 403
        case .notFound: 404
        case .conflict: 409
        case .limited: 429
        case .unavailable: 503
        case .failed: 500
        }
    }

    /// The problem a domain error stands for.
    static func problem(_ error: ServiceError) -> Problem {
        Problem(
            status: status(error.code), detail: error.detail,
            errors: error.fields.map { $0.map { Problem.FieldError(field: $0.field, message: $0.message) } },
            retryAfter: error.retryAfter)
    }

    /// The answer to `error`, thrown while answering `route`.
    static func response(_ error: any Error, route: String, logger: Logger) -> HTTPResponse {
        switch error {
        case let problem as Problem:
            return problem.response
        case let error as ServiceError:
            return problem(error).response
        default:
            logger.error("request failed", ("route", .string(route)), ("error", .string("\(error)")))
            return Problem(status: 500, detail: "The server failed to answer; the failure is logged.").response
        }
    }
}
