import Foundation
import IsletTesting
import PostgreSQLStorage
import Storage
import Testing

/// Transactions whose start goes with their first statement, in one round trip.
@Suite("PostgreSQL transactions started with their first statement", .requires(.postgres))
struct PostgresTransactionTests {
    @Test func aTransactionStartsWithItsFirstStatementAndCommitsOrRollsBack() async throws {
        try await withConnection { connection, _ in
            try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
            connection.begin(["BEGIN"])
            // Nothing is sent yet: the connection is outside a transaction.
            #expect(!connection.inTransaction)
            try connection.run("INSERT INTO t VALUES (\(1))")
            #expect(connection.inTransaction)
            try connection.run("INSERT INTO t VALUES (\(2))")
            try connection.commit()
            #expect(!connection.inTransaction)

            connection.begin(["BEGIN", "SET LOCAL statement_timeout = '12345ms'"])
            try connection.run("INSERT INTO t VALUES (\(3))")
            #expect(try connection.query("SELECT current_setting('statement_timeout') AS s").first?["s"].text == "12345ms")
            connection.rollback()
            #expect(!connection.inTransaction)
            #expect(try connection.query("SELECT current_setting('statement_timeout') AS s").first?["s"].text == "0")
            #expect(try connection.query("SELECT n FROM t ORDER BY n").map { $0["n"].integer } == [1, 2])

            // A transaction that ran nothing costs nothing, and leaves nothing open.
            connection.begin(["BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"])
            try connection.commit()
            connection.begin(["BEGIN"])
            connection.rollback()
            #expect(!connection.inTransaction)
        }
    }

    @Test func aFailingFirstStatementFailsAsItselfAndTheConnectionGoesOn() async throws {
        try await withConnection { connection, _ in
            try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
            try connection.run("INSERT INTO t VALUES (\(1))")
            connection.begin(["BEGIN"])
            let error = #expect(throws: StoreError.self) { try connection.run("INSERT INTO t VALUES (\(1))") }
            #expect(error?.code == .conflict)
            // The transaction began and failed: it is rolled back, and the
            // connection is usable after.
            #expect(connection.inTransaction)
            connection.rollback()
            #expect(!connection.inTransaction)
            #expect(!connection.isBroken)
            // A start that the server refuses fails the statement that carried it.
            connection.begin(["BEGIN ISOLATION LEVEL NOT_A_LEVEL"])
            #expect(throws: StoreError.self) { try connection.run("INSERT INTO t VALUES (\(2))") }
            connection.rollback()
            #expect(try connection.query("SELECT count(*) AS c FROM t").first?["c"].integer == 1)
        }
    }

    @Test func aStatementPreparedFirstSendsTheStartBeforeIt() async throws {
        try await withConnection { connection, _ in
            try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY)")
            connection.begin(["BEGIN"])
            // Never prepared on this connection: prepared first, the start sent before.
            try connection.run("INSERT INTO t (n) SELECT \(5) WHERE true")
            #expect(connection.inTransaction)
            connection.rollback()
            #expect(try connection.query("SELECT count(*) AS c FROM t").first?["c"].integer == 0)
        }
    }

    @Test func independentStatementsRunTogetherAndAFailureIsTheirs() async throws {
        try await withConnection { connection, _ in
            try connection.execute("CREATE TABLE t (n bigint PRIMARY KEY, s text)")
            try connection.run("INSERT INTO t VALUES (\(1), \("one")), (\(2), \("two"))")
            connection.begin(["BEGIN"])
            let rows = try connection.queryAll([
                "SELECT s FROM t WHERE n = \(1)", "SELECT s FROM t WHERE n = \(3)", "SELECT count(*) AS c FROM t",
                "SELECT n FROM t WHERE n = \(2) FOR UPDATE",
            ])
            #expect(connection.inTransaction)
            #expect(rows.count == 4)
            #expect(rows[0].first?["s"].text == "one")
            #expect(rows[1].isEmpty)
            #expect(rows[2].first?["c"].integer == 2)
            #expect(rows[3].first?["n"].integer == 2)
            try connection.commit()
            // A failing statement fails the lot, and the connection goes on.
            let error = #expect(throws: StoreError.self) {
                try connection.queryAll(["SELECT \(1) AS a", "SELECT n / \(0) FROM t", "SELECT \(2) AS b"])
            }
            #expect(error?.message.contains("division by zero") == true)
            #expect(!connection.isBroken)
            #expect(try connection.queryAll(["SELECT \(7) AS x"]).first?.first?["x"].integer == 7)
        }
    }
}
