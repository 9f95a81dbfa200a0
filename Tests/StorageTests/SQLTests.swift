import Foundation
import IsletTesting
import SQLiteStorage
import SQLStorage
import Storage
import Testing

@Suite("SQL with bound values")
struct SQLTests {
    @Test func valuesBecomeNumberedParametersInOrder() {
        let appID = "app_1"
        let limit = 50
        let blob = Data([0, 1, 255])
        let sql: SQL = "SELECT * FROM devices WHERE app_id = \(appID) AND weight > \(2.5) AND hash = \(blob) LIMIT \(limit)"
        let sqlite = sql.rendered(for: .sqlite)
        #expect(sqlite.text == "SELECT * FROM devices WHERE app_id = ?1 AND weight > ?2 AND hash = ?3 LIMIT ?4")
        #expect(sqlite.values == [.text("app_1"), .real(2.5), .blob(blob), .integer(50)])
        let postgres = sql.rendered(for: .postgresql)
        #expect(postgres.text == "SELECT * FROM devices WHERE app_id = $1 AND weight > $2 AND hash = $3 LIMIT $4")
        #expect(postgres.values == sqlite.values)
        #expect(sql.values(for: .sqlite) == sqlite.values)
    }

    @Test func aValueUsedTwiceIsBoundTwice() {
        let token = "ab"
        let sql: SQL = "SELECT 1 WHERE \(token) = \(token)"
        #expect(sql.rendered(for: .sqlite).text == "SELECT 1 WHERE ?1 = ?2")
        #expect(sql.rendered(for: .sqlite).values == [.text("ab"), .text("ab")])
    }

    @Test func textIsBoundNeverSpliced() {
        let hostile = "x'; DROP TABLE apps; --"
        let sql: SQL = "SELECT * FROM apps WHERE id = \(hostile)"
        #expect(sql.rendered(for: .sqlite).text == "SELECT * FROM apps WHERE id = ?1")
        #expect(sql.rendered(for: .sqlite).values == [.text(hostile)])
        #expect(!sql.description.contains("DROP"))
    }

    @Test func booleansBindAsIntegersInSQLiteAndAsBooleansInPostgreSQL() {
        let sql: SQL = "UPDATE apps SET strict = \(true), other = \(false)"
        #expect(sql.rendered(for: .sqlite).values == [.integer(1), .integer(0)])
        #expect(sql.rendered(for: .postgresql).values == [.bool(true), .bool(false)])
    }

    @Test func nilBindsAsNull() {
        let missing: String? = nil
        let present: Int64? = 7
        let sql: SQL = "INSERT INTO t VALUES (\(missing), \(present))"
        #expect(sql.rendered(for: .sqlite).values == [.null, .integer(7)])
        #expect(sql.rendered(for: .postgresql).values == [.null, .integer(7)])
    }

    @Test func listsAreOneParameter() {
        let ids = ["a", "b\"c"]
        let sql: SQL = "SELECT * FROM devices WHERE app_id = \("app") AND device_id \(in: ids) AND n \(in: [1, 2])"
        let sqlite = sql.rendered(for: .sqlite)
        #expect(sqlite.text == """
            SELECT * FROM devices WHERE app_id = ?1 AND device_id IN (SELECT value FROM json_each(?2)) \
            AND n IN (SELECT value FROM json_each(?3))
            """)
        #expect(sqlite.values == [.text("app"), .text(#"["a","b\"c"]"#), .text("[1,2]")])
        let postgres = sql.rendered(for: .postgresql)
        #expect(postgres.text == "SELECT * FROM devices WHERE app_id = $1 AND device_id = ANY($2) AND n = ANY($3)")
        #expect(postgres.values == [.text("app"), .array([.text("a"), .text("b\"c")]), .array([.integer(1), .integer(2)])])
    }

    @Test func rawFragmentsAndNestedStatementsKeepTheirValuesInOrder() {
        let columns = "id, name"
        let condition: SQL = "name = \("n") AND size > \(3)"
        var sql: SQL = "SELECT \(raw: columns) FROM t WHERE id = \(1) AND \(sql: condition)"
        sql.append(" ORDER BY \(raw: "id") LIMIT \(10)")
        let sqlite = sql.rendered(for: .sqlite)
        #expect(sqlite.text == "SELECT id, name FROM t WHERE id = ?1 AND name = ?2 AND size > ?3 ORDER BY id LIMIT ?4")
        #expect(sqlite.values == [.integer(1), .text("n"), .integer(3), .integer(10)])
        #expect(sql.rendered(for: .postgresql).text == "SELECT id, name FROM t WHERE id = $1 AND name = $2 AND size > $3 ORDER BY id LIMIT $4")
        let joined = SQL.joined(["SELECT \(1)", "SELECT \(2)", SQL(raw: "SELECT 3")], separator: " UNION ALL ")
        #expect(joined.rendered(for: .postgresql).text == "SELECT $1 UNION ALL SELECT $2 UNION ALL SELECT 3")
        #expect(joined.rendered(for: .postgresql).values == [.integer(1), .integer(2)])
        #expect(("SELECT \(1)" as SQL) + " + \(2)" == ("SELECT \(1) + \(2)" as SQL))
    }

    @Test func manyParametersNumberPastTheMadeOnes() {
        var sql: SQL = "SELECT \(0)"
        for index in 1..<25 { sql.append(", \(index)") }
        let text = sql.rendered(for: .sqlite).text
        #expect(text.hasPrefix("SELECT ?1, ?2,"))
        #expect(text.hasSuffix("?24, ?25"))
        #expect(sql.rendered(for: .postgresql).text.hasSuffix("$24, $25"))
        #expect(sql.rendered(for: .sqlite).values.count == 25)
    }

    @Test func sqliteRunsRenderedStatementsAndCachesByText() async throws {
        try await withTemporaryDirectory { dir in
            let connection = try SQLiteConnection(path: dir.appendingPathComponent("sql.sqlite").path)
            try connection.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, flag INTEGER, data BLOB) STRICT")
            for (index, name) in ["a", "b", "c"].enumerated() {
                try connection.run("INSERT INTO t (name, flag, data) VALUES (\(name), \(index % 2 == 0), \(Data([UInt8(index)])))")
            }
            let names = ["a", "c", "zz"]
            let rows = try connection.query("SELECT name, flag FROM t WHERE name \(in: names) AND flag = \(true) ORDER BY id")
            #expect(rows.map { $0["name"].text } == ["a", "c"])
            let none = try connection.query("SELECT name FROM t WHERE name \(in: [String]())")
            #expect(none.isEmpty)
            let returned = try connection.query("INSERT INTO t (name) VALUES (\("d")) RETURNING id")
            #expect(returned.first?["id"].integer == 4)
            let (first, _) = try connection.statement(for: "SELECT name FROM t WHERE id = \(1)")
            let (second, values) = try connection.statement(for: "SELECT name FROM t WHERE id = \(2)")
            #expect(first === second)
            #expect(try second.query(values: values).first?["name"].text == "b")
        }
    }
}
