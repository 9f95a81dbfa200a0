/// Shortens secrets (push tokens, API keys, private keys) to a form that is safe to
/// log: enough to tell two values apart, never enough to use one.
public enum Redaction {
    /// How many leading characters of a secret stay visible.
    public static let visiblePrefix = 6

    /// The redacted form of `secret`: its first few characters, an ellipsis and its
    /// length, as in `a1b2c3…(64)`. Secrets shorter than twice the visible prefix
    /// show no characters at all.
    public static func redact(_ secret: some StringProtocol) -> String {
        let count = secret.count
        guard count >= visiblePrefix * 2 else { return "…(\(count))" }
        return "\(secret.prefix(visiblePrefix))…(\(count))"
    }
}
