import Foundation
import IsletCore
import IsletTesting
import SQLStorage
import SQLiteStorage
import Testing

/// A database written by an earlier version of the schema keeps its data through the
/// later steps (SQLite; PostgreSQL's `ALTER TABLE … RENAME COLUMN` keeps data by
/// definition, and its steps are the same text, `SharedSchema`).
@Suite("Upgrades of a database written by an earlier schema")
struct SchemaUpgradeTests {
    @Test func aPushsServiceMessageIDSurvivesTheRenameOfItsColumn() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("islet.sqlite").path
            let connection = try SQLiteConnection(path: path)
            // The database as version 29 left it: the id in `apns_unique_id`.
            #expect(try Migrator(migrations: Array(IsletSchema.migrations.prefix(29))).migrate(connection) == Array(1...29))
            try Self.insertEveryRequiredColumn(of: "apps", connection, ["id": "'app_1'"])
            try Self.insertEveryRequiredColumn(of: "sends", connection, ["id": "1", "app_id": "'app_1'"])
            try Self.insertEveryRequiredColumn(
                of: "pushes", connection,
                ["id": "1", "send_id": "1", "app_id": "'app_1'", "apns_unique_id": "'projects/p/messages/0:1'"])
            #expect(try Migrator(migrations: IsletSchema.migrations).migrate(connection) == [30])
            let kept = try connection.query("SELECT service_message_id FROM pushes WHERE id = 1", []).map { $0[0].text }
            #expect(kept == ["projects/p/messages/0:1"])
            let columns = try connection.query("SELECT name FROM pragma_table_info('pushes')", []).map { $0[0].text }
            #expect(columns.contains("service_message_id") && !columns.contains("apns_unique_id"))
        }
    }

    /// Inserts one row into `table` with `values` and a value of its type for every
    /// other column that is `NOT NULL` without a default.
    static func insertEveryRequiredColumn(of table: String, _ connection: SQLiteConnection, _ values: [String: String]) throws {
        var all = values
        let columns = "SELECT name, type, \"notnull\", dflt_value FROM pragma_table_info('\(table)')"
        for row in try connection.query(columns, []) {
            let name = row[0].text ?? ""
            guard all[name] == nil, row[2] == .integer(1), row[3].isNull else { continue }
            switch row[1].text ?? "" {
            case "BLOB": all[name] = "x'0\(all.count % 10)'"
            case "INTEGER", "REAL": all[name] = "\(all.count)"
            default: all[name] = "'\(name)-\(all.count)'"
            }
        }
        let names = all.keys.sorted()
        try connection.execute("INSERT INTO \(table) (\(names.joined(separator: ", "))) VALUES (\(names.map { all[$0]! }.joined(separator: ", ")))")
    }
}
