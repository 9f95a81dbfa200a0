import PostgreSQLStorage
import SQLStorage
import Storage
import Testing

@Suite("PostgreSQL statements", .requires(.postgres))
struct PostgresStatementTests {
    @Test("run answers the rows each statement changed")
    func runCounts() async throws {
        try await withConnection { (connection, _) throws in
            #expect(try connection.run("CREATE TABLE t (id int8 PRIMARY KEY, name text)") == 0)
            for id in 1...3 {
                #expect(try connection.run("INSERT INTO t VALUES (\(id), \("n\(id)"))") == 1)
            }
            #expect(try connection.run("UPDATE t SET name = \("x") WHERE id > \(1)") == 2)
            #expect(try connection.run("UPDATE t SET name = \("y") WHERE id > \(100)") == 0)
            #expect(try connection.run("DELETE FROM t WHERE id \(in: [1, 3])") == 2)
            #expect(try connection.query("SELECT id, name FROM t").map(\.values) == [[.integer(2), .text("x")]])
        }
    }

    @Test("the same text is prepared once and runs with other values; a NULL's types are another statement")
    func preparedReuse() async throws {
        try await withConnection { (connection, _) throws in
            let before = connection.preparedStatementCount
            let first = try connection.query("SELECT \(1) + 1 AS n")
            let second = try connection.query("SELECT \(41) + 1 AS n")
            #expect(first.first?["n"] == .integer(2))
            #expect(second.first?["n"] == .integer(42))
            #expect(connection.preparedStatementCount == before + 1)
            let none: Int? = nil
            #expect(try connection.query("SELECT \(none) + 1 AS n").first?["n"] == .null)
            #expect(connection.preparedStatementCount == before + 2)
        }
    }

    @Test("the statement cache stays bounded and its statements keep working")
    func boundedCache() async throws {
        try await withConnection { (connection, _) throws in
            for number in 0..<300 {
                let rows = try connection.query("SELECT \(Int64(number)) + \(raw: String(number)) AS n")
                #expect(rows.first?["n"] == .integer(Int64(2 * number)))
                #expect(connection.preparedStatementCount <= 256)
            }
            #expect(try connection.query("SELECT \(1) + 0 AS n").first?["n"] == .integer(1))
        }
    }

    @Test("runEach prepares once and runs once per row, NULLs and all")
    func runEach() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute("CREATE TABLE t (id int8 PRIMARY KEY, name text)")
            let before = connection.preparedStatementCount
            let changed = try connection.runEach(1...100) { id in "INSERT INTO t VALUES (\(id), \("n\(id)"))" }
            #expect(changed == 100)
            #expect(connection.preparedStatementCount == before + 1)
            let rows: [(Int, String?)] = [(101, "a"), (102, nil), (103, "c")]
            #expect(try connection.runEach(rows) { row in "INSERT INTO t VALUES (\(row.0), \(row.1))" } == 3)
            #expect(try connection.runEach([Int]()) { id in "DELETE FROM t WHERE id = \(id)" } == 0)
            #expect(try connection.query("SELECT count(*) AS n, count(name) AS named FROM t").first?.values == [.integer(103), .integer(102)])
        }
    }

    @Test("a broken constraint is a conflict with its SQLSTATE, and no value in the message")
    func conflicts() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute(
                "CREATE TABLE parent (id text PRIMARY KEY); CREATE TABLE child (parent text REFERENCES parent, n int CHECK (n > 0))")
            try connection.run("INSERT INTO parent VALUES (\("secret-key-value"))")
            let unique = #expect(throws: StoreError.self) { try connection.run("INSERT INTO parent VALUES (\("secret-key-value"))") }
            #expect(unique?.code == .conflict)
            #expect(unique?.sqlState == "23505")
            #expect(unique?.message.contains("duplicate key value violates unique constraint") == true)
            #expect(unique?.message.contains("secret-key-value") == false)
            let foreign = #expect(throws: StoreError.self) { try connection.run("INSERT INTO child VALUES (\("absent"), \(1))") }
            #expect(foreign?.code == .conflict)
            #expect(foreign?.sqlState == "23503")
            let check = #expect(throws: StoreError.self) { try connection.run("INSERT INTO child VALUES (\(SQLValue.null), \(-1))") }
            #expect(check?.code == .conflict)
            #expect(check?.sqlState == "23514")
            #expect(!connection.isBroken)
        }
    }

    @Test("a syntax error keeps the server's message, and the connection stays usable")
    func syntaxError() async throws {
        try await withConnection { (connection, _) throws in
            let error = #expect(throws: StoreError.self) { try connection.query("SELEC 1") }
            #expect(error?.message.contains("syntax error at or near \"SELEC\"") == true)
            #expect(error?.sqlState == "42601")
            #expect(error?.code == .corrupt)
            let missing = #expect(throws: StoreError.self) { try connection.query("SELECT * FROM no_such_table") }
            #expect(missing?.sqlState == "42P01")
            #expect(!connection.isBroken)
            #expect(try connection.query("SELECT 1 AS one").first?["one"] == .integer(1))
        }
    }

    @Test("a concurrent update under repeatable read is busy: try again")
    func serializationFailure() async throws {
        try await withConnection { (connection, url) throws in
            let other = try PostgresConnection(url: url)
            defer { other.close() }
            try connection.execute("CREATE TABLE t (id int8 PRIMARY KEY, n int8); INSERT INTO t VALUES (1, 0)")
            try connection.execute("BEGIN ISOLATION LEVEL REPEATABLE READ")
            _ = try connection.query("SELECT n FROM t")
            try other.run("UPDATE t SET n = n + 1 WHERE id = \(1)")
            let error = #expect(throws: StoreError.self) { try connection.run("UPDATE t SET n = n + 10 WHERE id = \(1)") }
            #expect(error?.code == .busy)
            #expect(error?.sqlState == "40001")
            try connection.execute("ROLLBACK")
        }
    }

    @Test("execute runs several statements; a transaction's state is seen, failed or not")
    func executeAndTransactions() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute("CREATE TABLE a (x int); INSERT INTO a VALUES (1); INSERT INTO a VALUES (2);")
            #expect(try connection.query("SELECT count(*) AS n FROM a").first?["n"] == .integer(2))
            // Statements sent together run as one transaction: a failure keeps none.
            #expect(throws: StoreError.self) { try connection.execute("INSERT INTO a VALUES (3); SELEC 1") }
            #expect(try connection.query("SELECT count(*) AS n FROM a").first?["n"] == .integer(2))
            try connection.execute("")

            #expect(!connection.inTransaction)
            try connection.execute("BEGIN")
            #expect(connection.inTransaction)
            try connection.run("INSERT INTO a VALUES (\(4))")
            #expect(throws: StoreError.self) { try connection.query("SELECT 1 / \(0) AS n") }
            #expect(connection.inTransaction)
            let aborted = #expect(throws: StoreError.self) { try connection.query("SELECT 1 AS one") }
            #expect(aborted?.sqlState == "25P02")
            try connection.execute("ROLLBACK")
            #expect(!connection.inTransaction)
            #expect(try connection.query("SELECT count(*) AS n FROM a").first?["n"] == .integer(2))
        }
    }

    @Test("the schema version is 0 without the migrations table, else its highest version")
    func schemaVersion() async throws {
        try await withConnection { (connection, _) throws in
            #expect(try connection.schemaVersion() == 0)
            try connection.execute("CREATE TABLE islet_migrations (version int PRIMARY KEY, applied_at timestamptz DEFAULT now())")
            #expect(try connection.schemaVersion() == 0)
            try connection.execute("INSERT INTO islet_migrations (version) VALUES (1), (3), (2)")
            #expect(try connection.schemaVersion() == 3)
        }
    }

    @Test("the dialect is PostgreSQL's, and a warning the server sends is dropped")
    func session() async throws {
        try await withConnection { (connection, _) throws in
            #expect(connection.dialect == .postgresql)
            #expect(connection.serverVersion >= PostgresConnection.minimumServerVersion)
            #expect(try connection.query("SHOW client_min_messages").first?[0] == .text("warning"))
            #expect(try connection.query("SHOW application_name").first?[0] == .text("islet-tests"))
            try connection.execute("DO $$ BEGIN RAISE WARNING 'a warning'; RAISE NOTICE 'a notice'; END $$")
        }
    }
}
