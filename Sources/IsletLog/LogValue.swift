import IsletCore

/// A value attached to a log event. Secrets are a case of their own, so that they are
/// redacted where the line is written and can never be logged whole by mistake.
public enum LogValue: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByBooleanLiteral, ExpressibleByFloatLiteral, CustomStringConvertible
{
    case string(String)
    case int(Int)
    case double(Double)
    case bool(Bool)
    /// A push token, key or other secret: written only in redacted form.
    case secret(String)

    public init(stringLiteral value: String) { self = .string(value) }
    public init(integerLiteral value: Int) { self = .int(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
    public init(floatLiteral value: Double) { self = .double(value) }

    /// The text written for this value (secrets redacted).
    public var description: String {
        switch self {
        case .string(let s): s
        case .int(let i): String(i)
        case .double(let d): d.isFinite ? String(d) : "\(d)"
        case .bool(let b): b ? "true" : "false"
        case .secret(let s): Redaction.redact(s)
        }
    }
}

