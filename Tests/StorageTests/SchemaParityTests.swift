import Foundation
import IsletTesting
import PostgreSQLStorage
import SQLStorage
import SQLiteStorage
import Storage
import Testing

/// The two schemas are kept by hand (`IsletSchema` for SQLite, `PostgresSchema` for
/// PostgreSQL). This suite migrates both, reads what each database's catalog says it
/// holds, and compares them: tables, columns with their types (mapped once, below),
/// nullability and defaults, indexes with their columns, uniqueness and predicates,
/// primary keys, unique constraints, foreign keys and checks. Every difference is
/// named; the ones Islet means are listed in `intended`, each with its reason.
@Suite("SQLite and PostgreSQL schemas")
struct SchemaParityTests {
    /// The differences Islet means, each with why.
    static let intended: [String: String] = [
        "column islet_migrations.version: type bigint on SQLite, integer on PostgreSQL":
            "the runner creates its bookkeeping table with one statement on both backends; 32 bits are ample for version numbers",
        "column islet_migrations.version: default autoincrement on SQLite, none on PostgreSQL":
            "SQLite makes an INTEGER PRIMARY KEY the rowid; the runner always writes the version",
        "index pushes_starts_by_device on pushes: columns (app_id, device_id, ?) on SQLite, (app_id, device_id) on PostgreSQL":
            "its third key is an expression, the time a start goes (coalesce(deferred_until, created_at)), the same on both; neither catalog names it as a column, and each reads it differently",
        "index pushes_lease on pushes: only on PostgreSQL":
            "only a shared store sweeps pushes whose lease ran out (DeliveryWorker, when store.isShared); SQLite is one node's and never runs that query",
    ]

    @Test(.requires(.postgres)) func bothBackendsHoldTheSameSchema() async throws {
        let sqlite = try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("islet.sqlite").path
            try SQLiteStore(path: path).close()
            let connection = try SQLiteConnection(path: path)
            return try SchemaModel(sqlite: connection)
        }
        let postgres = try await TestPostgres.withSchema { url in
            try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet-tests").close()
            let connection = try PostgresConnection(url: try PostgresURL(url), applicationName: "islet-tests")
            defer { connection.close() }
            return try SchemaModel(postgres: connection)
        }
        // Both catalogs were read: every table Islet has had since version 9 is there.
        for model in [sqlite, postgres] {
            #expect(model.tables.count >= 19)
            #expect(model.tables["dashboard_sessions"]?.columns.count == 7)
            #expect(model.tables["pushes"]?.indexes["pushes_due"]?.predicate == "status = 'queued'")
            #expect(model.tables["apps"]?.uniques.contains("(server_key_hash)") == true)
            #expect(model.tables["apps"]?.columns["device_secrets"]?.defaultValue == "'off'")
            #expect(model.tables["device_tags"]?.foreignKeys.contains("(app_id, device_id) → devices(app_id, device_id) on delete cascade") == true)
        }
        let differences = sqlite.differences(from: postgres)
        let unexplained = differences.filter { Self.intended[$0] == nil }
        #expect(unexplained.isEmpty, "the schemas differ:\n\(unexplained.joined(separator: "\n"))")
        let stale = Self.intended.keys.filter { !differences.contains($0) }.sorted()
        #expect(stale.isEmpty, "listed as intended but no longer found:\n\(stale.joined(separator: "\n"))")
    }

    /// The comparison names a column added on one side only, and every other kind of
    /// difference, without a database.
    @Test func theComparisonNamesEachDifference() {
        let devices = SchemaModel.Table(
            columns: [
                "app_id": .init(type: "text", notNull: true, defaultValue: nil),
                "enabled": .init(type: "boolean", notNull: true, defaultValue: "0"),
            ],
            primaryKey: ["app_id"], uniques: [], foreignKeys: [], checks: [],
            indexes: ["devices_on": .init(columns: ["enabled"], unique: false, predicate: "enabled = 1")])
        var other = devices
        other.columns["secret_hash"] = .init(type: "bytea", notNull: false, defaultValue: nil)
        other.columns["enabled"] = .init(type: "bigint", notNull: false, defaultValue: "1")
        other.indexes["devices_on"] = .init(columns: ["enabled", "app_id"], unique: true, predicate: nil)
        other.foreignKeys = ["(app_id) → apps(id) on delete cascade"]
        let differences = SchemaModel(tables: ["devices": devices]).differences(
            from: SchemaModel(tables: ["devices": other, "apps": devices]))
        #expect(
            differences == [
                "table apps: only on PostgreSQL",
                "column devices.enabled: type boolean on SQLite, bigint on PostgreSQL",
                "column devices.enabled: NOT NULL on SQLite, nullable on PostgreSQL",
                "column devices.enabled: default 0 on SQLite, 1 on PostgreSQL",
                "column devices.secret_hash: only on PostgreSQL",
                "index devices_on on devices: columns (enabled) on SQLite, (enabled, app_id) on PostgreSQL",
                "index devices_on on devices: unique false on SQLite, true on PostgreSQL",
                "index devices_on on devices: predicate enabled = 1 on SQLite, none on PostgreSQL",
                "foreign key devices(app_id) → apps(id) on delete cascade: only on PostgreSQL",
            ])
    }
}

/// A schema as a database's catalog describes it, in one vocabulary for both
/// backends: PostgreSQL's type names, defaults and predicates without casts.
struct SchemaModel {
    struct Column: Equatable {
        var type: String
        var notNull: Bool
        /// The default, normalised; `autoincrement` for a rowid, an identity or a serial.
        var defaultValue: String?
    }

    struct Index: Equatable {
        var columns: [String]
        var unique: Bool
        var predicate: String?
    }

    struct Table {
        var columns: [String: Column]
        var primaryKey: [String]
        /// Unique constraints, as `(a, b)`.
        var uniques: Set<String>
        /// Foreign keys, as `(a, b) → table(c, d) on delete …`.
        var foreignKeys: Set<String>
        /// Check constraints, normalised.
        var checks: Set<String>
        /// Indexes made by CREATE INDEX, by name.
        var indexes: [String: Index]
    }

    var tables: [String: Table]

    /// The columns SQLite keeps as INTEGER 0 or 1 and PostgreSQL as boolean.
    static let flags: Set<String> = [
        "apps.strict_activity_types", "pushes.environment_switched", "timelines.renew", "webhooks.enabled",
        "devices.frequent_updates", "pushes.priority_downgraded", "channels.managed", "activity_instances.subscribed",
        "activity_instances.joined", "activity_types.receipts",
    ]

    /// SQLite's declared type in PostgreSQL's terms: the mapping, written once.
    /// Whole numbers (times in milliseconds, counts, sequence numbers) are bigint,
    /// flags boolean.
    static func postgresType(sqlite type: String, flag: Bool) -> String {
        switch type.uppercased() {
        case "INTEGER": flag ? "boolean" : "bigint"
        case "TEXT": "text"
        case "BLOB": "bytea"
        case "REAL": "double precision"
        default: "unmapped SQLite type \(type)"
        }
    }

    /// Every difference between this schema (SQLite's) and `other` (PostgreSQL's),
    /// one line each, by table then kind.
    func differences(from other: SchemaModel) -> [String] {
        var found: [String] = []
        for name in Set(tables.keys).union(other.tables.keys).sorted() {
            guard let mine = tables[name], let theirs = other.tables[name] else {
                found.append("table \(name): only on \(tables[name] == nil ? "PostgreSQL" : "SQLite")")
                continue
            }
            for column in Set(mine.columns.keys).union(theirs.columns.keys).sorted() {
                guard let a = mine.columns[column], let b = theirs.columns[column] else {
                    found.append("column \(name).\(column): only on \(mine.columns[column] == nil ? "PostgreSQL" : "SQLite")")
                    continue
                }
                if a.type != b.type { found.append("column \(name).\(column): type \(a.type) on SQLite, \(b.type) on PostgreSQL") }
                if a.notNull != b.notNull {
                    found.append(
                        "column \(name).\(column): \(a.notNull ? "NOT NULL" : "nullable") on SQLite, "
                            + "\(b.notNull ? "NOT NULL" : "nullable") on PostgreSQL")
                }
                if a.defaultValue != b.defaultValue {
                    found.append(
                        "column \(name).\(column): default \(a.defaultValue ?? "none") on SQLite, \(b.defaultValue ?? "none") on PostgreSQL")
                }
            }
            if mine.primaryKey != theirs.primaryKey {
                found.append(
                    "primary key of \(name): (\(mine.primaryKey.joined(separator: ", "))) on SQLite, "
                        + "(\(theirs.primaryKey.joined(separator: ", "))) on PostgreSQL")
            }
            for index in Set(mine.indexes.keys).union(theirs.indexes.keys).sorted() {
                guard let a = mine.indexes[index], let b = theirs.indexes[index] else {
                    found.append("index \(index) on \(name): only on \(mine.indexes[index] == nil ? "PostgreSQL" : "SQLite")")
                    continue
                }
                if a.columns != b.columns {
                    found.append(
                        "index \(index) on \(name): columns (\(a.columns.joined(separator: ", "))) on SQLite, "
                            + "(\(b.columns.joined(separator: ", "))) on PostgreSQL")
                }
                if a.unique != b.unique { found.append("index \(index) on \(name): unique \(a.unique) on SQLite, \(b.unique) on PostgreSQL") }
                if a.predicate != b.predicate {
                    found.append(
                        "index \(index) on \(name): predicate \(a.predicate ?? "none") on SQLite, \(b.predicate ?? "none") on PostgreSQL")
                }
            }
            for (kind, a, b) in [
                ("unique constraint", mine.uniques, theirs.uniques), ("foreign key", mine.foreignKeys, theirs.foreignKeys),
                ("check", mine.checks, theirs.checks),
            ] {
                for item in a.subtracting(b).sorted() { found.append("\(kind) \(name)\(item): only on SQLite") }
                for item in b.subtracting(a).sorted() { found.append("\(kind) \(name)\(item): only on PostgreSQL") }
            }
        }
        return found
    }

    init(tables: [String: Table]) {
        self.tables = tables
    }

    // MARK: - SQLite's catalog

    /// The schema of the SQLite database `connection` has open, read from
    /// `sqlite_master` and the table-valued pragmas.
    init(sqlite connection: SQLiteConnection) throws {
        var tables: [String: Table] = [:]
        let master = try connection.query("SELECT type, name, tbl_name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'")
        let indexSQL = Dictionary(
            master.filter { $0["type"].text == "index" }.map { ($0["name"].text ?? "", $0["sql"].text ?? "") },
            uniquingKeysWith: { a, _ in a })
        for row in master where row["type"].text == "table" {
            let name = row["name"].text ?? ""
            let sql = row["sql"].text ?? ""
            let withoutRowID = sql.uppercased().contains("WITHOUT ROWID")
            let info = try connection.query("SELECT name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(\(name))")
            let keyed = info.filter { ($0["pk"].integer ?? 0) > 0 }.sorted { ($0["pk"].integer ?? 0) < ($1["pk"].integer ?? 0) }
            let primaryKey = keyed.map { $0["name"].text ?? "" }
            var columns: [String: Column] = [:]
            for column in info {
                let columnName = column["name"].text ?? ""
                let declared = column["type"].text ?? ""
                let inKey = (column["pk"].integer ?? 0) > 0
                let rowID = inKey && !withoutRowID && primaryKey.count == 1 && declared.uppercased() == "INTEGER"
                // A WITHOUT ROWID table's key and a rowid are never NULL, whatever the
                // column says; an ordinary table's other key can be, as SQLite allows.
                let notNull = column["notnull"].integer == 1 || (inKey && (withoutRowID || rowID))
                let flag = Self.flags.contains("\(name).\(columnName)")
                columns[columnName] = Column(
                    type: Self.postgresType(sqlite: declared, flag: flag), notNull: notNull,
                    defaultValue: rowID ? "autoincrement" : column["dflt_value"].text.map { Self.normalised($0) })
            }
            var uniques: Set<String> = []
            var indexes: [String: Index] = [:]
            for index in try connection.query("SELECT name, \"unique\", origin FROM pragma_index_list(\(name))") {
                let indexName = index["name"].text ?? ""
                let indexColumns = try connection.query("SELECT name FROM pragma_index_info(\(indexName)) ORDER BY seqno")
                    .map { $0["name"].text ?? "?" }
                switch index["origin"].text {
                case "u": uniques.insert("(\(indexColumns.joined(separator: ", ")))")
                case "c":
                    let predicate = indexSQL[indexName].flatMap { text -> String? in
                        guard let range = text.range(of: #"\sWHERE\s"#, options: [.regularExpression, .caseInsensitive]) else { return nil }
                        return Self.normalised(String(text[range.upperBound...]))
                    }
                    indexes[indexName] = Index(columns: indexColumns, unique: index["unique"].integer == 1, predicate: predicate)
                default: break  // the primary key's own index
                }
            }
            var foreignKeys: Set<String> = []
            let references = try connection.query(
                "SELECT id, \"table\", \"from\", \"to\", on_delete FROM pragma_foreign_key_list(\(name)) ORDER BY id, seq")
            for id in Set(references.compactMap { $0["id"].integer }).sorted() {
                let parts = references.filter { $0["id"].integer == id }
                let target = parts.first?["table"].text ?? "?"
                let onDelete = (parts.first?["on_delete"].text ?? "NO ACTION").lowercased()
                foreignKeys.insert(
                    "(\(parts.map { $0["from"].text ?? "?" }.joined(separator: ", "))) → \(target)"
                        + "(\(parts.map { $0["to"].text ?? "?" }.joined(separator: ", "))) on delete \(onDelete)")
            }
            tables[name] = Table(
                columns: columns, primaryKey: primaryKey, uniques: uniques, foreignKeys: foreignKeys,
                checks: Set(Self.checks(inCreateTable: sql).map { Self.normalised($0) }), indexes: indexes)
        }
        self.tables = tables
    }

    /// The expressions of the CHECK constraints in a CREATE TABLE statement.
    static func checks(inCreateTable sql: String) -> [String] {
        var found: [String] = []
        var rest = Substring(sql)
        while let range = rest.range(of: #"\bCHECK\s*\("#, options: [.regularExpression, .caseInsensitive]) {
            var depth = 1
            var end = range.upperBound
            while end < rest.endIndex, depth > 0 {
                if rest[end] == "(" { depth += 1 } else if rest[end] == ")" { depth -= 1 }
                end = rest.index(after: end)
            }
            found.append(String(rest[range.upperBound..<rest.index(before: end)]))
            rest = rest[end...]
        }
        return found
    }

    // MARK: - PostgreSQL's catalog

    /// The schema of the connection's current schema, read from
    /// `information_schema` and `pg_catalog`.
    init(postgres connection: PostgresConnection) throws {
        var tables: [String: Table] = [:]
        for row in try connection.query(
            """
            SELECT table_name::text AS name FROM information_schema.tables
            WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'
            """)
        {
            tables[row["name"].text ?? ""] = Table(columns: [:], primaryKey: [], uniques: [], foreignKeys: [], checks: [], indexes: [:])
        }
        for row in try connection.query(
            """
            SELECT table_name::text AS table_name, column_name::text AS name, data_type::text AS type,
                is_nullable::text AS nullable, column_default::text AS dflt, is_identity::text AS identity
            FROM information_schema.columns WHERE table_schema = current_schema()
            """)
        {
            let table = row["table_name"].text ?? ""
            let defaultValue: String? =
                if row["identity"].text == "YES" || row["dflt"].text?.hasPrefix("nextval(") == true {
                    "autoincrement"
                } else {
                    row["dflt"].text.map { Self.normalised($0) }
                }
            tables[table]?.columns[row["name"].text ?? ""] = Column(
                type: row["type"].text ?? "", notNull: row["nullable"].text == "NO", defaultValue: defaultValue)
        }
        let columnNames = { (table: String, numbers: String) in
            """
            array_to_string(ARRAY(SELECT a.attname::text FROM unnest(\(numbers)) WITH ORDINALITY AS k(attnum, n)
                JOIN pg_attribute a ON a.attrelid = \(table) AND a.attnum = k.attnum ORDER BY k.n), ',')
            """
        }
        for row in try connection.query(
            """
            SELECT t.relname::text AS table_name, c.contype::text AS kind, f.relname::text AS target,
                \(raw: columnNames("c.conrelid", "c.conkey")) AS columns,
                \(raw: columnNames("c.confrelid", "c.confkey")) AS target_columns,
                c.confdeltype::text AS on_delete, pg_get_constraintdef(c.oid) AS definition
            FROM pg_constraint c JOIN pg_class t ON t.oid = c.conrelid LEFT JOIN pg_class f ON f.oid = c.confrelid
            WHERE t.relnamespace = current_schema()::regnamespace AND c.contype IN ('p', 'u', 'f', 'c')
            """)
        {
            let table = row["table_name"].text ?? ""
            let columns = (row["columns"].text ?? "").split(separator: ",").map(String.init)
            let list = "(\(columns.joined(separator: ", ")))"
            switch row["kind"].text {
            case "p": tables[table]?.primaryKey = columns
            case "u": tables[table]?.uniques.insert(list)
            case "f":
                let actions = ["a": "no action", "r": "restrict", "c": "cascade", "n": "set null", "d": "set default"]
                let targetColumns = (row["target_columns"].text ?? "").split(separator: ",").joined(separator: ", ")
                tables[table]?.foreignKeys.insert(
                    "\(list) → \(row["target"].text ?? "?")(\(targetColumns)) on delete \(actions[row["on_delete"].text ?? ""] ?? "?")")
            default:
                let definition = row["definition"].text ?? ""
                let expression = definition.hasPrefix("CHECK ") ? String(definition.dropFirst(6)) : definition
                tables[table]?.checks.insert(Self.normalised(expression))
            }
        }
        for row in try connection.query(
            """
            SELECT t.relname::text AS table_name, i.relname::text AS name, x.indisunique AS is_unique,
                pg_get_expr(x.indpred, x.indrelid) AS predicate,
                \(raw: columnNames("x.indrelid", "x.indkey::int2[]")) AS columns
            FROM pg_index x JOIN pg_class i ON i.oid = x.indexrelid JOIN pg_class t ON t.oid = x.indrelid
            WHERE t.relnamespace = current_schema()::regnamespace
                AND NOT EXISTS (
                    SELECT 1 FROM pg_constraint c
                    WHERE c.conindid = x.indexrelid AND c.conrelid = x.indrelid AND c.contype IN ('p', 'u', 'x'))
            """)
        {
            tables[row["table_name"].text ?? ""]?.indexes[row["name"].text ?? ""] = Index(
                columns: (row["columns"].text ?? "").split(separator: ",").map(String.init), unique: row["is_unique"].bool == true,
                predicate: row["predicate"].text.map { Self.normalised($0) })
        }
        self.tables = tables
    }

    /// A default, predicate or check in one spelling for both backends: without
    /// PostgreSQL's casts and parentheses, `<>` as `!=`, `= ANY (ARRAY[…])` as
    /// `IN (…)`, booleans as 0 and 1, lowercase, single spaces.
    static func normalised(_ text: String) -> String {
        var text = text.replacingOccurrences(of: #"::[a-z_]+( [a-z_]+)*(\[\])?"#, with: "", options: .regularExpression)
        text = text.replacingOccurrences(
            of: #"=\s*ANY\s*\(ARRAY\[([^\]]*)\]\)"#, with: "IN ($1)", options: .regularExpression)
        text = text.lowercased().replacingOccurrences(of: "<>", with: "!=")
        text = text.replacingOccurrences(of: "(", with: " ").replacingOccurrences(of: ")", with: " ")
        text = text.replacingOccurrences(of: #"\s+"#, with: " ", options: .regularExpression)
            .trimmingCharacters(in: .whitespaces)
        switch text {
        case "false": return "0"
        case "true": return "1"
        default: return text
        }
    }
}
