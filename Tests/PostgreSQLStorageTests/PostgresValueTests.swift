import Foundation
import PostgreSQLStorage
import SQLStorage
import Storage
import Testing

@Suite("PostgreSQL values", .requires(.postgres))
struct PostgresValueTests {
    @Test("integers, the extremes included, come back as they went")
    func integers() async throws {
        try await withConnection { (connection, _) throws in
            for number in [Int64.min, Int64.max, 0, -1, 42] {
                let rows = try connection.query("SELECT \(number) AS n, pg_typeof(\(number))::text AS type")
                #expect(rows.first?["n"] == .integer(number))
                #expect(rows.first?["type"] == .text("bigint"))
            }
            let small = try connection.query("SELECT 7::int2 AS a, 8::int4 AS b, 9::oid AS c")
            #expect(small.first?.values == [.integer(7), .integer(8), .integer(9)])
        }
    }

    @Test("reals, the special ones included, and numerics come back as doubles")
    func reals() async throws {
        try await withConnection { (connection, _) throws in
            for number in [1.5, -0.25, 0.1, 1e300, -Double.leastNonzeroMagnitude, Double.infinity, -Double.infinity] {
                let rows = try connection.query("SELECT \(number) AS r")
                #expect(rows.first?["r"] == .real(number))
            }
            let notANumber = try connection.query("SELECT \(Double.nan) AS r")
            #expect(notANumber.first?["r"].real?.isNaN == true)
            let numeric = try connection.query("SELECT 12.5::numeric AS n, 1.25::float4 AS f")
            #expect(numeric.first?.values == [.real(12.5), .real(1.25)])
        }
    }

    @Test("text with quotes, backslashes, placeholders and non-ASCII comes back as it went")
    func text() async throws {
        try await withConnection { (connection, _) throws in
            for text in ["plain", "", "it's \"quoted\" and \\ back\\slashed", "$1 and ?1", "ünïcödé 🚀 日本語", "line\nbreak\ttab"] {
                let rows = try connection.query("SELECT \(text) AS t, length(\(text)) AS n")
                #expect(rows.first?["t"] == .text(text))
                #expect(rows.first?["n"] == .integer(Int64(text.count)))
            }
        }
    }

    @Test("text with a NUL character is refused before it reaches the server")
    func nulInText() async throws {
        try await withConnection { (connection, _) throws in
            let error = #expect(throws: StoreError.self) { try connection.query("SELECT \("a\u{0}b") AS t") }
            #expect(error?.message.contains("NUL") == true)
            #expect(try connection.query("SELECT 1 AS one").first?["one"] == .integer(1))
        }
    }

    @Test("blobs go as bytes: empty, with zero bytes, not UTF-8")
    func blobs() async throws {
        try await withConnection { (connection, _) throws in
            let blobs = [Data(), Data([0]), Data([0, 1, 2, 0, 255, 254]), Data([0xC3, 0x28, 0xFF, 0x00, 0x5C, 0x78]), Data("\\x41".utf8)]
            for blob in blobs {
                let rows = try connection.query("SELECT \(blob) AS b, octet_length(\(blob)) AS n")
                #expect(rows.first?["b"] == .blob(blob))
                #expect(rows.first?["n"] == .integer(Int64(blob.count)))
            }
            let large = Data((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            #expect(try connection.query("SELECT \(large) AS b").first?["b"] == .blob(large))
        }
    }

    @Test("booleans bind and read as booleans")
    func booleans() async throws {
        try await withConnection { (connection, _) throws in
            let rows = try connection.query("SELECT \(true) AS yes, \(false) AS no, \(true) AND NOT \(false) AS both")
            #expect(rows.first?.values == [.bool(true), .bool(false), .bool(true)])
        }
    }

    @Test("NULLs of every kind are stored and read back as NULL")
    func nulls() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute("CREATE TABLE v (i int8, r float8, t text, b bytea, f bool)")
            let none: String? = nil
            try connection.run("INSERT INTO v VALUES (\(SQLValue.null), \(SQLValue.null), \(none), \(SQLValue.null), \(SQLValue.null))")
            let rows = try connection.query("SELECT i, r, t, b, f FROM v")
            #expect(rows.count == 1)
            #expect(rows.first?.values == [.null, .null, .null, .null, .null])
            #expect(try connection.query("SELECT \(SQLValue.null)::int8 AS n").first?["n"] == .null)
        }
    }

    @Test("values stored in typed columns read back as they went")
    func storedRoundTrip() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute("CREATE TABLE v (i int8, r float8, t text, b bytea, f bool)")
            let blob = Data([0, 0xFF, 0x80, 0])
            try connection.run("INSERT INTO v VALUES (\(Int64.min), \(2.5), \("a'b\"c\\d"), \(blob), \(true))")
            let row = try #require(connection.query("SELECT i, r, t, b, f FROM v").first)
            #expect(row.values == [.integer(Int64.min), .real(2.5), .text("a'b\"c\\d"), .blob(blob), .bool(true)])
            #expect(row["t"] == .text("a'b\"c\\d"))
            #expect(row[3] == .blob(blob))
        }
    }

    @Test("lists bind as arrays for membership, with quotes and backslashes escaped")
    func lists() async throws {
        try await withConnection { (connection, _) throws in
            try connection.execute("CREATE TABLE v (i int8, t text)")
            let texts = ["a", "b\"c", "d\\e", "{x,y}", "NULL", " spaced ", "é"]
            for (index, text) in texts.enumerated() {
                try connection.run("INSERT INTO v VALUES (\(index), \(text))")
            }
            let found = try connection.query("SELECT t FROM v WHERE t \(in: ["b\"c", "d\\e", "{x,y}", "NULL", "absent"]) ORDER BY i")
            #expect(found.map { $0["t"] } == [.text("b\"c"), .text("d\\e"), .text("{x,y}"), .text("NULL")])
            let byNumber = try connection.query("SELECT t FROM v WHERE i \(in: [0, 6, Int.max]) ORDER BY i")
            #expect(byNumber.map { $0["t"] } == [.text("a"), .text("é")])
            #expect(try connection.query("SELECT t FROM v WHERE t \(in: [String]())").isEmpty)
            #expect(try connection.query("SELECT t FROM v WHERE i \(in: [Int]())").isEmpty)
        }
    }

    @Test("an array's elements arrive whole, NULL apart from the text NULL")
    func arrayElements() async throws {
        try await withConnection { (connection, _) throws in
            let array = SQLValue.array([.text("a"), .text("b\"c"), .text("d\\e"), .text("NULL"), .null, .text("")])
            let rows = try connection.query("SELECT unnest(\(array)) AS e")
            #expect(rows.map { $0["e"] } == [.text("a"), .text("b\"c"), .text("d\\e"), .text("NULL"), .null, .text("")])
            let numbers = SQLValue.array([.integer(Int64.min), .integer(Int64.max)])
            #expect(try connection.query("SELECT unnest(\(numbers)) AS e").map { $0["e"] } == [.integer(Int64.min), .integer(Int64.max)])
            let typed = try connection.query("SELECT pg_typeof(\(SQLValue.array([.text("a")])))::text AS t, pg_typeof(\(numbers))::text AS n")
            #expect(typed.first?.values == [.text("text[]"), .text("bigint[]")])
            // An empty array takes the type of where it stands.
            let empty = SQLValue.array([])
            #expect(try connection.query("SELECT cardinality(\(empty)::int8[]) AS a, cardinality(\(empty)::text[]) AS b").first?.values == [.integer(0), .integer(0)])
            // Arrays read back as their text.
            #expect(try connection.query("SELECT ARRAY['a', 'b']::text[] AS a").first?["a"] == .text("{a,b}"))
        }
    }
}
