internal import CPostgres

/// Facts about the linked libpq.
public enum PostgresLibrary {
    /// The client library's version, for example `15.20`.
    public static var version: String {
        let number = Int(PQlibVersion())
        return "\(number / 10_000).\(number % 10_000)"
    }
}
