import Foundation
public import HTTPServer
import IsletService

/// An error answer in the one shape every route uses: RFC 9457
/// `application/problem+json`.
public struct Problem: Error, Sendable, Encodable {
    /// One invalid field of a request body.
    public struct FieldError: Sendable, Encodable, Equatable {
        /// The field's path, as `content_state.eta`.
        public let field: String
        /// What is wrong with it.
        public let message: String

        /// Creates a field error.
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// A URI naming the problem kind; `about:blank` when the status says it all.
    public let type: String
    /// A short summary of the kind.
    public let title: String
    /// The HTTP status.
    public let status: Int
    /// What happened this time.
    public let detail: String
    /// The fields at fault, when the request body had any.
    public let errors: [FieldError]?
    /// Seconds after which the request may succeed: the answer's `Retry-After`
    /// header (not a member of the document).
    public let retryAfter: Int?
    /// For a `quota-exceeded` problem, the names of the policies whose quota was
    /// exceeded (the draft's `violated-policies` member).
    public let violatedPolicies: [String]?

    private enum CodingKeys: String, CodingKey {
        case type, title, status, detail, errors
        case violatedPolicies = "violated-policies"
    }

    /// Creates a problem.
    public init(
        type: String = "about:blank", title: String? = nil, status: Int, detail: String, errors: [FieldError]? = nil,
        retryAfter: Int? = nil, violatedPolicies: [String]? = nil
    ) {
        self.violatedPolicies = violatedPolicies
        self.type = type
        self.title = title ?? Problem.reasonPhrase(status)
        self.status = status
        self.detail = detail
        self.errors = errors
        self.retryAfter = retryAfter
    }

    /// The problem as a response.
    public var response: HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let body = (try? encoder.encode(self)) ?? Data()
        var response = HTTPResponse(status: status, contentType: "application/problem+json", body: body)
        if status == 401 { response.headers.set("WWW-Authenticate", "Bearer realm=\"islet\"") }
        if let retryAfter { response.headers.set("Retry-After", String(max(1, retryAfter))) }
        return response
    }

    /// The standard reason phrase of an HTTP status.
    public static func reasonPhrase(_ status: Int) -> String { HTTPResponse.reasonPhrase(status) }

    /// A message as the end of a sentence (the domain's rule, so that both layers
    /// word their details alike).
    static func sentence(_ message: String) -> String { ServiceError.sentence(message) }
}
