internal import CPostgres
internal import IsletCore
public import Storage

/// Where a PostgreSQL database is and how to log in: a `postgres://` or
/// `postgresql://` URL as `--database` takes it, read by libpq's own rules
/// (host, port, user, password, dbname, sslmode and every other parameter libpq
/// knows; percent-encoding; several hosts).
///
/// ```
/// postgresql://islet:secret@db.example.com:5432/islet?sslmode=verify-full
/// ```
///
/// Without a password in the URL, libpq looks in `PGPASSWORD` and then in
/// `~/.pgpass` (or `PGPASSFILE`), as psql does. The URL's ``description`` hides the
/// password; errors never show it.
///
/// See <https://www.postgresql.org/docs/current/libpq-connect.html#LIBPQ-CONNSTRING>.
public struct PostgresURL: Sendable, Hashable, CustomStringConvertible {
    /// The URL as given, with any parameters added by ``setting(_:_:)``.
    let text: String
    /// Every parameter the URL sets, percent-decoded, by libpq's keyword.
    private let parameters: [String: String]

    /// Reads `text`; throws `StoreError(.unavailable, …)` naming the cause when it is
    /// not a PostgreSQL URL or libpq cannot read it. The message never holds the
    /// password.
    public init(_ text: String) throws(StoreError) {
        guard Self.isPostgresURL(text) else {
            // Not echoed: text in another form (`host=… password=…`) is not redacted.
            throw StoreError(.unavailable, "the database is not a PostgreSQL URL (postgres:// or postgresql://)")
        }
        var failure: UnsafeMutablePointer<CChar>?
        guard let options = PQconninfoParse(text, &failure) else {
            var reason = "libpq cannot read it"
            if let failure {
                reason = PostgresMessage.oneLine(String(cString: failure))
                PQfreemem(failure)
            }
            reason = PostgresMessage.hiding(Self.passwordsIn(text), in: reason)
            throw StoreError(.unavailable, "the database URL \(Redaction.hidingPasswords(in: text)) is invalid: \(reason)")
        }
        defer { PQconninfoFree(options) }
        var parameters: [String: String] = [:]
        var option = options
        while let keyword = option.pointee.keyword {
            if let value = option.pointee.val { parameters[String(cString: keyword)] = String(cString: value) }
            option += 1
        }
        self.text = text
        self.parameters = parameters
    }

    /// Whether `text` starts with `postgres://` or `postgresql://` (in any case).
    public static func isPostgresURL(_ text: String) -> Bool {
        let lowered = text.prefix(13).lowercased()
        return lowered.hasPrefix("postgres://") || lowered.hasPrefix("postgresql://")
    }

    /// The value the URL gives parameter `key` (a libpq keyword such as `host`,
    /// `dbname` or `sslmode`), percent-decoded; `nil` when the URL does not set it.
    public func parameter(_ key: String) -> String? {
        parameters[key]
    }

    /// This URL with parameter `key` set to `value` (percent-encoded), in place of
    /// any value the URL gave it: for example `setting("options", "-csearch_path=s")`.
    /// Throws `StoreError(.unavailable, …)` when libpq knows no such parameter.
    public func setting(_ key: String, _ value: String) throws(StoreError) -> PostgresURL {
        let (base, query) = Self.splitQuery(text)
        var pairs = query.map { $0.split(separator: "&", omittingEmptySubsequences: true).map(String.init) } ?? []
        pairs.removeAll { pair in
            let name = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)[0]
            return PostgresMessage.percentDecoded(String(name)) == key
        }
        pairs.append("\(Self.percentEncoded(key))=\(Self.percentEncoded(value))")
        return try PostgresURL(base + "?" + pairs.joined(separator: "&"))
    }

    /// The URL with every password in it replaced by `***`.
    public var redacted: String { Redaction.hidingPasswords(in: text) }

    /// The URL with every password in it replaced by `***`.
    public var description: String { redacted }

    /// The passwords the URL holds (in the user part, in `password=`), as written
    /// and percent-decoded, longest first: the strings no message may show.
    var secrets: [String] {
        var found = Self.passwordsIn(text)
        if let password = parameters["password"], !password.isEmpty { found.append(password) }
        return Array(Set(found)).sorted { $0.count > $1.count }
    }

    // MARK: - Reading the URL's text

    /// `text` split before its `?`: the part before and the query after, if any.
    private static func splitQuery(_ text: String) -> (base: String, query: String?) {
        guard let mark = text.firstIndex(of: "?") else { return (text, nil) }
        return (String(text[..<mark]), String(text[text.index(after: mark)...]))
    }

    /// Every password in `text`, as written and percent-decoded.
    private static func passwordsIn(_ text: String) -> [String] {
        Redaction.passwordRanges(in: text).flatMap { range -> [String] in
            let written = String(text[range])
            return [written, PostgresMessage.percentDecoded(written)]
        }
    }

    /// `text` with every byte but the unreserved ones (letters, digits, `-._~`)
    /// percent-encoded, as a URL's query value.
    private static func percentEncoded(_ text: String) -> String {
        var encoded = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"),
                UInt8(ascii: "~"):
                encoded.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = String(byte, radix: 16, uppercase: true)
                encoded += byte < 16 ? "%0\(hex)" : "%\(hex)"
            }
        }
        return encoded
    }
}
