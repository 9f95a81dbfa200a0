import Foundation

/// The PostgreSQL server tests run against: a superuser URL on a throwaway server,
/// named by `ISLET_TEST_POSTGRES_URL` (`make test` and `scripts/with-postgres.sh`
/// start the server and set it).
public enum TestPostgres {
    /// The variable that names the server.
    public static let variable = "ISLET_TEST_POSTGRES_URL"

    /// The server's URL, or a failure that says how to run the tests with one:
    /// PostgreSQL tests fail, never skip, without a server.
    public static func url() throws -> String {
        guard let url = ProcessInfo.processInfo.environment[variable], !url.isEmpty else {
            throw TestPostgresError(
                "\(variable) is not set: run the PostgreSQL tests through `make test` or "
                    + "`scripts/with-postgres.sh swift test …`, which start a throwaway server and set it")
        }
        return url
    }

    /// The server's port (`ISLET_TEST_POSTGRES_PORT`), when the script set it.
    public static var port: Int? {
        ProcessInfo.processInfo.environment["ISLET_TEST_POSTGRES_PORT"].flatMap { Int($0) }
    }

    /// The backend the service, API and end-to-end suites run on: `postgresql` when
    /// `ISLET_TEST_BACKEND` says so (`make test` runs them once on each), else
    /// `sqlite`. The store contract suites run on both in every run.
    public static var suiteBackend: String {
        ProcessInfo.processInfo.environment["ISLET_TEST_BACKEND"] == "postgresql" ? "postgresql" : "sqlite"
    }

    /// Whether the suites run on PostgreSQL.
    public static var suitesUsePostgreSQL: Bool { suiteBackend == "postgresql" }

    /// Runs `body` with the `--database` a suite's server uses: on SQLite `nil` (the
    /// data folder's own file), on PostgreSQL the URL of a fresh schema, dropped
    /// afterwards.
    public static func withSuiteDatabase<T>(_ body: (String?) async throws -> T) async throws -> T {
        guard suitesUsePostgreSQL else { return try await body(nil) }
        return try await withSchema { try await body($0) }
    }

    /// A fresh schema, for a store whose life a test does not scope with a closure:
    /// its URL, and the call that drops it.
    public static func makeSchema() throws -> (url: String, drop: @Sendable () -> Void) {
        let server = try url()
        let schema = newSchemaName()
        try psql(server, "CREATE SCHEMA \(schema)")
        return (scoped(server, schema), { _ = try? psql(server, "DROP SCHEMA \(schema) CASCADE") })
    }

    private static func newSchemaName() -> String {
        "t_" + (0..<8).map { _ in String(format: "%02x", UInt8.random(in: 0...255)) }.joined()
    }

    private static func scoped(_ server: String, _ schema: String) -> String {
        let separator = server.contains("?") ? "&" : "?"
        return server + separator + "options=-csearch_path%3D\(schema)"
    }

    /// Runs `body` with the URL of a fresh, empty schema of its own (`t_` and random
    /// hex): the URL's `options` put it first on the `search_path`, so that every
    /// table `body` makes lands there. The schema is dropped, with all it holds,
    /// when `body` returns or throws.
    public static func withSchema<T>(_ body: (String) async throws -> T) async throws -> T {
        let server = try url()
        let schema = newSchemaName()
        try await psql(server, "CREATE SCHEMA \(schema)")
        do {
            let result = try await body(scoped(server, schema))
            try await psql(server, "DROP SCHEMA \(schema) CASCADE")
            return result
        } catch {
            _ = try? await psql(server, "DROP SCHEMA \(schema) CASCADE")
            throw error
        }
    }

    /// `psql`, from a task: run and waited for on a thread of its own, since waiting
    /// for a child process on one of the concurrency pool's few threads (two on a
    /// 2-core machine) would hold up every other test meanwhile. Async callers get
    /// this overload.
    @discardableResult
    public static func psql(_ url: String, _ statement: String) async throws -> String {
        try await runBlocking { try psql(url, statement) }
    }

    /// Runs one statement with psql on the server `url` names; throws psql's
    /// complaint when it fails.
    @discardableResult
    public static func psql(_ url: String, _ statement: String) throws -> String {
        let result = try runCommand(
            try psqlPath(), ["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", statement])
        guard result.status == 0 else {
            throw TestPostgresError("psql failed (status \(result.status)) on \(statement): \(result.error)")
        }
        return result.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// psql: the newest of Debian's server packages, else the one on the `PATH`.
    private static func psqlPath() throws -> String {
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: "/usr/lib/postgresql")) ?? []
        for version in versions.sorted(by: { (Int($0) ?? 0) > (Int($1) ?? 0) }) {
            let path = "/usr/lib/postgresql/\(version)/bin/psql"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
            let path = "\(folder)/psql"
            if FileManager.default.isExecutableFile(atPath: path) { return path }
        }
        throw TestPostgresError("psql is not installed: install the postgresql-client package")
    }
}

/// Why the test server could not be used.
public struct TestPostgresError: Error, CustomStringConvertible {
    /// What went wrong.
    public let description: String

    /// An error saying `description`.
    public init(_ description: String) { self.description = description }
}
