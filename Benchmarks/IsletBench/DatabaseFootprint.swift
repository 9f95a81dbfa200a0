import Foundation
import SQLiteStorage

/// A stopped server's SQLite database, measured: its bytes on disk (the file and its
/// WAL, once `PRAGMA wal_checkpoint(TRUNCATE)` has moved the WAL into the file) and
/// its rows (`count(*)` of every table, summed). Two of them, before and after a
/// fan-out, give its growth per push.
struct DatabaseFootprint {
    let bytes: Int64
    /// The rows of each table.
    let rowsByTable: [String: Int64]
    var rows: Int64 { rowsByTable.values.reduce(0, +) }

    init(path: String) throws {
        let connection = try SQLiteConnection(path: path)
        _ = try connection.query("PRAGMA wal_checkpoint(TRUNCATE)", [])
        let tables = try connection.query(
            "SELECT name FROM sqlite_schema WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name", []
        ).compactMap { $0[0].text }
        var rows: [String: Int64] = [:]
        for table in tables {
            let quoted = "\"" + table.replacingOccurrences(of: "\"", with: "\"\"") + "\""
            rows[table] = try connection.query("SELECT count(*) FROM \(quoted)", []).first?[0].integer ?? 0
        }
        rowsByTable = rows
        bytes = Self.size(path) + Self.size(path + "-wal")
    }

    /// The tables that gained or lost rows since `before`, as `name:added,…`.
    func rowsAdded(since before: DatabaseFootprint) -> String {
        rowsByTable.keys.sorted().compactMap { table in
            let added = rowsByTable[table]! - (before.rowsByTable[table] ?? 0)
            return added == 0 ? nil : "\(table):\(added)"
        }.joined(separator: ",")
    }

    private static func size(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
