import Foundation
public import Storage

/// How a PostgreSQL failure becomes a `StoreError`: the code from its SQLSTATE,
/// the server's one-line message, and the SQLSTATE at the end of the message, as
/// `(SQLSTATE 23505)`, where ``Storage/StoreError/sqlState`` finds it again.
///
/// See <https://www.postgresql.org/docs/current/errcodes-appendix.html>.
enum PostgresFailure {
    /// The prefix of every message of a connection that cannot serve.
    static let unavailablePrefix = "database unavailable: "

    /// The store's code for `sqlState`:
    /// - class 23 (integrity: unique, foreign key, check, not null, exclusion) and
    ///   40002 (a deferred constraint failing at commit): conflict;
    /// - serialization failures, deadlocks (the rest of class 40), locks not available, statements
    ///   cancelled (a timeout): busy, as trying again may work;
    /// - class 08 (connection), 53 (out of disk, memory or connections), 57P01–03
    ///   (the server shutting down or starting), 58 (system errors) and 25006 (a
    ///   read-only transaction, as on a standby after a failover): unavailable;
    /// - anything else, a value the server cannot take or give (class 22), a
    ///   statement that does not fit the schema (class 42), a server fault (XX):
    ///   corrupt, the code of Islet's own faults.
    static func code(for sqlState: String) -> StoreError.Code {
        switch sqlState {
        case "40001", "40P01", "55P03", "57014": return .busy
        case "57P01", "57P02", "57P03", "25006", "40003": return .unavailable
        case "40002": return .conflict
        default: break
        }
        switch sqlState.prefix(2) {
        case "23": return .conflict
        case "08", "53", "58": return .unavailable
        case "40": return .busy
        default: return .corrupt
        }
    }

    /// The error of a statement that failed with `message` and `sqlState` (when the
    /// server sent one), on a connection that is still whole unless `broken`.
    static func error(message: String, sqlState: String?, broken: Bool) -> StoreError {
        var code = sqlState.map(code(for:)) ?? .corrupt
        if broken { code = .unavailable }
        var text = message.isEmpty ? "the statement failed" : message
        if let sqlState { text += " (SQLSTATE \(sqlState))" }
        if code == .unavailable { text = unavailablePrefix + text }
        return StoreError(code, text)
    }
}

extension StoreError {
    /// The SQLSTATE PostgreSQL failed with (such as `23505`, a unique violation),
    /// when the error came from the server.
    public var sqlState: String? {
        guard message.hasSuffix(")"), let start = message.range(of: "(SQLSTATE ", options: .backwards) else { return nil }
        let state = message[start.upperBound...].dropLast()
        return state.count == 5 ? String(state) : nil
    }
}
