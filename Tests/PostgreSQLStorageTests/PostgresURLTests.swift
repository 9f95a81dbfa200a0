import Foundation
@testable import PostgreSQLStorage
import Storage
import Testing

@Suite("PostgreSQL URLs")
struct PostgresURLTests {
    @Test("both schemes, in any case, are PostgreSQL URLs; files and other schemes are not")
    func schemes() {
        #expect(PostgresURL.isPostgresURL("postgres://localhost/islet"))
        #expect(PostgresURL.isPostgresURL("postgresql://localhost/islet"))
        #expect(PostgresURL.isPostgresURL("PostgreSQL://localhost/islet"))
        #expect(!PostgresURL.isPostgresURL("/var/lib/islet/islet.sqlite"))
        #expect(!PostgresURL.isPostgresURL("mysql://localhost/islet"))
        #expect(!PostgresURL.isPostgresURL("postgres:/localhost"))
    }

    @Test("the parameters are read by libpq's rules, percent-decoded")
    func parameters() throws {
        let url = try PostgresURL("postgresql://is%40let:p%40ss@db.example.com:6543/my%20db?sslmode=require&application_name=x")
        #expect(url.parameter("user") == "is@let")
        #expect(url.parameter("password") == "p@ss")
        #expect(url.parameter("host") == "db.example.com")
        #expect(url.parameter("port") == "6543")
        #expect(url.parameter("dbname") == "my db")
        #expect(url.parameter("sslmode") == "require")
        #expect(url.parameter("application_name") == "x")
        #expect(url.parameter("connect_timeout") == nil)
    }

    @Test("the description hides the password, in the user part and as a parameter")
    func redaction() throws {
        let inUser = try PostgresURL("postgresql://islet:s3cr%2Ft@db:5432/islet?sslmode=disable")
        #expect(inUser.description == "postgresql://islet:***@db:5432/islet?sslmode=disable")
        #expect(inUser.redacted == inUser.description)
        let inQuery = try PostgresURL("postgres://db/islet?user=islet&password=hunter2&sslmode=disable")
        #expect(inQuery.description == "postgres://db/islet?user=islet&password=***&sslmode=disable")
        let both = try PostgresURL("postgres://u:one@db/islet?password=two")
        #expect(both.description == "postgres://u:***@db/islet?password=***")
        let none = try PostgresURL("postgresql://islet@127.0.0.1:5432/postgres")
        #expect(none.description == "postgresql://islet@127.0.0.1:5432/postgres")
        let emptyPassword = try PostgresURL("postgresql://islet:@db/islet")
        #expect(emptyPassword.description == "postgresql://islet:@db/islet")
    }

    @Test("a URL libpq cannot read is refused with the cause and without the password")
    func invalid() throws {
        let unknown = #expect(throws: StoreError.self) { try PostgresURL("postgresql://u:topsecret@db/islet?colour=blue") }
        #expect(unknown?.code == .unavailable)
        #expect(unknown?.message.contains("colour") == true)
        #expect(unknown?.message.contains("topsecret") == false)

        let badEncoding = #expect(throws: StoreError.self) { try PostgresURL("postgresql://u:top%zzsecret@db/islet") }
        #expect(badEncoding?.code == .unavailable)
        #expect(badEncoding?.message.contains("percent") == true)
        #expect(badEncoding?.message.contains("secret") == false)

        let queryPassword = #expect(throws: StoreError.self) { try PostgresURL("postgresql://db/islet?password=top%zzsecret") }
        #expect(queryPassword?.message.contains("secret") == false)

        let notPostgres = #expect(throws: StoreError.self) { try PostgresURL("host=db password=topsecret") }
        #expect(notPostgres?.message.contains("not a PostgreSQL URL") == true)
        #expect(notPostgres?.message.contains("topsecret") == false)
    }

    @Test("setting a parameter adds it percent-encoded, or replaces the URL's own")
    func setting() throws {
        let url = try PostgresURL("postgresql://islet@127.0.0.1:5432/postgres")
        let scoped = try url.setting("options", "-csearch_path=t_1234")
        #expect(scoped.parameter("options") == "-csearch_path=t_1234")
        #expect(scoped.description == "postgresql://islet@127.0.0.1:5432/postgres?options=-csearch_path%3Dt_1234")
        let named = try scoped.setting("application_name", "a & b = c?/é")
        #expect(named.parameter("application_name") == "a & b = c?/é")
        #expect(named.parameter("options") == "-csearch_path=t_1234")
        let renamed = try named.setting("application_name", "second")
        #expect(renamed.parameter("application_name") == "second")
        #expect(renamed.description.components(separatedBy: "application_name").count == 2)
        #expect(throws: StoreError.self) { try url.setting("colour", "blue") }
    }

    @Test func anAtSignInTheQueryIsNotTakenForTheUserPart() throws {
        // libpq reads the user part up to the first `@`: the host and the query stay shown.
        let noPath = try PostgresURL("postgres://u:p@h?application_name=a@b")
        #expect(noPath.parameter("host") == "h" && noPath.parameter("application_name") == "a@b")
        #expect(noPath.description == "postgres://u:***@h?application_name=a@b")
        let withPath = try PostgresURL("postgres://u:p@h/d?application_name=a@b")
        #expect(withPath.description == "postgres://u:***@h/d?application_name=a@b")
        #expect(noPath.secrets == ["p"] && withPath.secrets == ["p"])
    }

    @Test func aPasswordWithAQuestionMarkIsHiddenToo() throws {
        let url = try PostgresURL("postgresql://islet:se?cr3t@db.example/islet")
        #expect(!url.description.contains("se?cr3t"))
        #expect(!url.description.contains("cr3t"))
    }
}
