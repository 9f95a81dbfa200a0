import IsletTesting
import PostgreSQLStorage
import Storage

/// Runs `body` with a connection to a fresh schema of the test server, closed
/// and dropped afterwards.
func withConnection<T>(_ body: (PostgresConnection, PostgresURL) async throws -> T) async throws -> T {
    try await TestPostgres.withSchema { text in
        let url = try PostgresURL(text)
        let connection = try PostgresConnection(url: url, applicationName: "islet-tests")
        defer { connection.close() }
        return try await body(connection, url)
    }
}

/// The test server's URL, read as a PostgresURL.
func serverURL() throws -> PostgresURL {
    try PostgresURL(TestPostgres.url())
}
