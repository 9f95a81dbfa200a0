public import Storage

/// Why a service refused or failed a command, in domain terms: a code, a sentence
/// for people, and the fields at fault. The HTTP layer turns it into problem+json
/// in one place; a clock-driven caller logs it.
public struct ServiceError: Error, Sendable, CustomStringConvertible {
    /// What kind of refusal; each maps to one HTTP status.
    public enum Code: String, Sendable, Hashable, CaseIterable {
        /// The command breaks a rule (a field, a payload limit, a schema): 422.
        case invalid
        /// No credentials, or unknown ones: 401.
        case unauthenticated
        /// Credentials of the wrong kind: 403.
        case forbidden
        /// The thing named does not exist: 404.
        case notFound
        /// The command collides with the state (ended, running, in use): 409.
        case conflict
        /// Too many requests of this kind from this caller for now: 429, with
        /// `retryAfter`.
        case limited
        /// The database cannot serve now: 503.
        case unavailable
        /// A fault of Islet's own: 500.
        case failed
    }

    /// One field at fault, by its path in the command as the client wrote it
    /// (`content_state.eta`, `audience.user_ids`, `Idempotency-Key`).
    public struct FieldError: Sendable, Hashable {
        /// The field's path.
        public let field: String
        /// What is wrong with it.
        public let message: String

        /// Creates a field error.
        public init(field: String, message: String) {
            self.field = field
            self.message = message
        }
    }

    /// The kind.
    public let code: Code
    /// What happened this time.
    public let detail: String
    /// The fields at fault, when the command had any.
    public let fields: [FieldError]?
    /// Why, as a word a program can test (`activity_ended`, `no_targets`): what a
    /// schedule that could not fire records as its reason.
    public let reason: String?
    /// Whole seconds after which the same command may succeed (`limited`, and
    /// `unavailable` when known): the answer's `Retry-After`.
    public let retryAfter: Int?

    /// Creates an error.
    public init(
        _ code: Code, _ detail: String, fields: [FieldError]? = nil, reason: String? = nil, retryAfter: Int? = nil
    ) {
        self.code = code
        self.detail = detail
        self.fields = fields
        self.reason = reason
        self.retryAfter = retryAfter
    }

    /// The same error with every field at `prefix` (`entries[3].`, `timeline.`).
    public func prefixingFields(_ prefix: String) -> ServiceError {
        guard let fields, !fields.isEmpty else { return self }
        let moved = fields.map { FieldError(field: prefix + $0.field, message: $0.message) }
        let detail = moved.count == 1
            ? "The field \(moved[0].field) is invalid: \(ServiceError.sentence(moved[0].message))"
            : "\(moved.count) fields are invalid: \(moved.map(\.field).joined(separator: ", ")). \(self.detail)"
        return ServiceError(code, detail, fields: moved, reason: reason, retryAfter: retryAfter)
    }

    /// A refusal naming one field.
    public static func invalid(_ detail: String, field: String, _ message: String, reason: String? = nil) -> ServiceError {
        ServiceError(.invalid, detail, fields: [FieldError(field: field, message: message)], reason: reason)
    }

    public var description: String { "\(code.rawValue): \(detail)" }

    /// The domain view of a store failure: a collision is a conflict, a database
    /// that cannot serve is unavailable, anything else Islet's own fault.
    public init(_ error: StoreError) {
        switch error.code {
        case .conflict:
            self.init(.conflict, "The change collides with one made at the same time; send it again.")
        case .busy, .unavailable:
            self.init(.unavailable, "database unavailable: try again shortly (a request with an Idempotency-Key is safe to send again).")
        case .secretsKeyMismatch:
            self.init(
                .unavailable,
                "The database's secrets key changed while this node ran: it stores no credential until it is restarted with the new key.")
        default:
            self.init(.failed, "The server failed to answer; the failure is logged.")
        }
    }

    /// A message as the end of a sentence: with a full stop, unless it already ends
    /// with one (or with a question mark, as "did you mean name?" does).
    public static func sentence(_ message: String) -> String {
        guard let last = message.last, !".?!".contains(last) else { return message }
        return message + "."
    }
}
