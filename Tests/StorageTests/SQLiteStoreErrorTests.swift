import Foundation
import IsletTesting
import SQLiteStorage
import Storage
import Testing

@Suite("SQLite store: SQLite's failures in the store's terms")
struct SQLiteStoreErrorTests {
    @Test func openingSomethingThatIsNotADatabaseIsCorruptWithSQLitesMessage() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("garbage.sqlite")
            try Data(repeating: 0x42, count: 8192).write(to: path)
            let error = #expect(throws: StoreError.self) { try SQLiteStore(path: path.path) }
            #expect(error?.code == .corrupt)
            #expect(error?.message == "file is not a database")
        }
    }

    @Test func aFileThatCannotBeOpenedIsUnavailable() async {
        await withTemporaryDirectory { dir in
            let error = #expect(throws: StoreError.self) {
                try SQLiteStore(path: dir.appendingPathComponent("no/such/folder/islet.sqlite").path)
            }
            #expect(error?.code == .unavailable)
            #expect(error?.message.isEmpty == false)
        }
    }

    @Test func everyResultCodeMapsToOneStoreCode() {
        // SQLite's primary result codes, and extended ones on top of them.
        let cases: [(Int32, StoreError.Code)] = [
            (19, .conflict), (2067, .conflict), (1555, .conflict), (787, .conflict),  // CONSTRAINT, UNIQUE, PRIMARYKEY, FOREIGNKEY
            (5, .busy), (517, .busy), (6, .busy),  // BUSY, BUSY_SNAPSHOT, LOCKED
            (14, .unavailable), (10, .unavailable), (3850, .unavailable), (13, .unavailable), (8, .unavailable),  // CANTOPEN, IOERR, IOERR_LOCK, FULL, READONLY
            (11, .corrupt), (26, .corrupt), (1, .corrupt), (21, .corrupt),  // CORRUPT, NOTADB, ERROR, MISUSE
        ]
        for (resultCode, expected) in cases {
            let error = SQLiteError(code: .other, resultCode: resultCode, message: "sqlite says \(resultCode)")
            #expect(error.storeError.code == expected, "result code \(resultCode)")
            #expect(error.storeError.message == "sqlite says \(resultCode)")
        }
        #expect(SQLiteError(code: .closed, message: "the database is closed").storeError.code == .unavailable)
        #expect(SQLiteError(code: .migration, message: "newer").storeError.code == .corrupt)
    }

    @Test func theStoreRunsInsideOneDatabaseWithItsSchema() async throws {
        try await withTemporaryDirectory { dir in
            let path = dir.appendingPathComponent("islet.sqlite").path
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            #expect(store.backend == "sqlite")
            #expect(store.location == path)
            #expect(try store.readNow { try $0.schemaVersion() } == IsletSchema.migrations.count)
        }
    }
}
