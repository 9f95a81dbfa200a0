/// Seals credentials (APNs private keys, webhook signing secrets) before they are
/// stored, and opens them when they are read back: the store takes one of these, so
/// that the database holds no credential in plain text while the services see plain
/// values. A sealed value is text that says it is one (`isSealed`), so that values
/// stored before sealing began are told apart and sealed in their turn.
public protocol SecretSealer: Sendable {
    /// `plain`, sealed: text that only this sealer's key opens.
    func seal(_ plain: String) throws -> String
    /// The plain value `sealed` was sealed from; throws when it was sealed under
    /// another key, was changed, or is no sealed value.
    func open(_ sealed: String) throws -> String
    /// Whether `stored` is a sealed value (under any key) rather than a plain one.
    func isSealed(_ stored: String) -> Bool
}
