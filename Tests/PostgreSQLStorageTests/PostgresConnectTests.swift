import Foundation
import IsletTesting
import PostgreSQLStorage
import Storage
import Testing

@Suite("PostgreSQL connecting", .requires(.postgres))
struct PostgresConnectTests {
    /// The URL of the test server's password role, with `password` in it.
    private func passwordURL(_ password: String?) throws -> String {
        let server = try serverURL()
        let host = server.parameter("host") ?? "127.0.0.1"
        let port = server.parameter("port") ?? "5432"
        let user = password.map { "islet_password:\($0)" } ?? "islet_password"
        return "postgresql://\(user)@\(host):\(port)/postgres"
    }

    @Test("a port nothing listens on is unavailable")
    func unreachable() throws {
        let port = try ReservedPort()
        let url = try PostgresURL("postgresql://islet:hidden-pass@127.0.0.1:\(port.port)/postgres")
        let error = #expect(throws: StoreError.self) { try PostgresConnection(url: url) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.hasPrefix("database unavailable") == true)
        #expect(error?.message.contains("\(port.port)") == true)
        #expect(error?.message.contains("hidden-pass") == false)
        #expect(error?.message.contains("\n") == false)
    }

    @Test("a refused password is unavailable, and the message never shows it")
    func wrongPassword() throws {
        let url = try PostgresURL(passwordURL("wrong-secret-123"))
        let error = #expect(throws: StoreError.self) { try PostgresConnection(url: url) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("password authentication failed") == true)
        #expect(error?.message.contains("wrong-secret-123") == false)

        let inQuery = try PostgresURL(passwordURL(nil) + "?password=wrong-secret-456")
        let queryError = #expect(throws: StoreError.self) { try PostgresConnection(url: inQuery) }
        #expect(queryError?.message.contains("wrong-secret-456") == false)
    }

    @Test("the right password logs in, from the URL or from a password file")
    func rightPassword() throws {
        let connection = try PostgresConnection(url: PostgresURL(passwordURL("islet-secret")))
        defer { connection.close() }
        #expect(try connection.query("SELECT current_user AS u").first?["u"] == .text("islet_password"))

        // libpq reads ~/.pgpass (or the file passfile names) when the URL has none.
        let server = try serverURL()
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("islet-pgpass-\(UUID().uuidString)")
        let line = "\(server.parameter("host") ?? "127.0.0.1"):\(server.parameter("port") ?? "5432"):*:islet_password:islet-secret\n"
        try Data(line.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: file.path)
        let fromFile = try PostgresConnection(url: PostgresURL(passwordURL(nil)).setting("passfile", file.path))
        defer { fromFile.close() }
        #expect(try fromFile.query("SELECT current_user AS u").first?["u"] == .text("islet_password"))
    }

    @Test("the application name is the caller's unless the URL names one")
    func applicationName() throws {
        let named = try PostgresConnection(url: serverURL(), applicationName: "islet-api")
        defer { named.close() }
        #expect(try named.query("SHOW application_name").first?[0] == .text("islet-api"))
        let byURL = try PostgresConnection(url: serverURL().setting("application_name", "from url"), applicationName: "islet-api")
        defer { byURL.close() }
        #expect(try byURL.query("SHOW application_name").first?[0] == .text("from url"))
    }

    @Test("a database that does not exist is unavailable")
    func missingDatabase() throws {
        let url = try serverURL().setting("dbname", "no_such_database")
        let error = #expect(throws: StoreError.self) { try PostgresConnection(url: url) }
        #expect(error?.code == .unavailable)
        #expect(error?.message.contains("no_such_database") == true)
    }

    @Test("a closed connection is broken and refuses every call")
    func closed() throws {
        let connection = try PostgresConnection(url: serverURL())
        #expect(!connection.isBroken)
        connection.close()
        #expect(connection.isBroken)
        #expect(!connection.inTransaction)
        let error = #expect(throws: StoreError.self) { try connection.query("SELECT 1") }
        #expect(error?.code == .unavailable)
        #expect(error?.message.hasPrefix("database unavailable") == true)
        connection.close()
    }
}
