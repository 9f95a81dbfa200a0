import IsletCore
import Testing

/// The one redactor of passwords, as the server's configuration and start errors
/// and PostgreSQL's URLs and messages use it.
@Suite("Passwords hidden in URLs and messages")
struct PasswordRedactionTests {
    @Test(arguments: [
        // A URL's user part, with a port, a path and a query.
        ("postgresql://islet:s3cr%2Ft@db:5432/islet?sslmode=disable", "postgresql://islet:***@db:5432/islet?sslmode=disable"),
        // A password parameter of the query, among others.
        ("postgres://db/islet?user=islet&password=hunter2&sslmode=disable", "postgres://db/islet?user=islet&password=***&sslmode=disable"),
        // Both at once.
        ("postgres://u:one@db/islet?password=two", "postgres://u:***@db/islet?password=***"),
        // An `@` in the query is no user part's, with a path or without one.
        ("postgresql://u:p%40ss@h:1/d?application_name=a@b", "postgresql://u:***@h:1/d?application_name=a@b"),
        ("postgres://u:p@h/d?application_name=a@b", "postgres://u:***@h/d?application_name=a@b"),
        ("postgres://u:p@h?application_name=a@b", "postgres://u:***@h?application_name=a@b"),
        ("postgres://u:p@h#a@b", "postgres://u:***@h#a@b"),
        // A `?` or an `@` standing in a password.
        ("postgresql://islet:se?cr3t@db.example/islet", "postgresql://islet:***@db.example/islet"),
        ("postgresql://islet:p@ss@db.example/islet", "postgresql://islet:***@db.example/islet"),
        // Another scheme, as a refused --database shows it.
        ("mysql://islet:hunter2pw@h/db?password=again", "mysql://islet:***@h/db?password=***"),
        // A parameter's name in another case, percent-encoded, or ending in password.
        ("postgres://db/islet?PASSWORD=x1&pass%77ord=x2&sslpassword=x3", "postgres://db/islet?PASSWORD=***&pass%77ord=***&sslpassword=***"),
        // Inside a message, and in libpq's key=value form, quoted or not.
        ("cannot open postgres://u:pw@db/islet: connection refused", "cannot open postgres://u:***@db/islet: connection refused"),
        ("host=db password=topsecret dbname=islet", "host=db password=*** dbname=islet"),
        ("host=db password='top secret \\' still' dbname=islet", "host=db password=*** dbname=islet"),
    ])
    func passwordsAreHidden(text: String, hidden: String) {
        #expect(Redaction.hidingPasswords(in: text) == hidden)
    }

    @Test(arguments: [
        "postgresql://islet@127.0.0.1:5432/postgres",
        "postgresql://islet:@db/islet",
        "postgres://db/islet?password=",
        "/var/lib/islet/islet.sqlite",
        "https://api.push.apple.com",
        "the database is not a PostgreSQL URL (postgres:// or postgresql://)",
        "",
    ])
    func textWithoutAPasswordIsKept(text: String) {
        #expect(Redaction.hidingPasswords(in: text) == text)
        #expect(Redaction.passwordRanges(in: text).isEmpty)
    }

    @Test func theRangesAreThePasswordsInOrderWithoutOverlap() {
        let apart = "postgres://u:one@db/islet?sslmode=disable&password=two"
        #expect(Redaction.passwordRanges(in: apart).map { String(apart[$0]) } == ["one", "two"])
        // A user part that holds `password=` runs into the parameter's value, which
        // runs to the next `&`: the two are hidden as one.
        let overlapping = "postgres://u:x?password=y@h/d?password=z"
        #expect(Redaction.passwordRanges(in: overlapping).map { String(overlapping[$0]) } == ["x?password=y@h/d?password=z"])
        #expect(Redaction.hidingPasswords(in: overlapping) == "postgres://u:***")
    }
}
