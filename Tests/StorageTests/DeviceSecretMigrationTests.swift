import Foundation
import IsletCore
import IsletTesting
@testable import PostgreSQLStorage
import SQLStorage
import SQLiteStorage
import Storage
import Testing

/// Migration 10 ("device secrets") on a database of version 9, as a deployed Islet
/// holds it: the apps it holds keep working without secrets (`off`), their devices
/// have none, and apps written afterwards keep the setting they are given.
@Suite("Migration 10: device secrets")
struct DeviceSecretMigrationTests {
    /// An app and a device as version 9 wrote them.
    static let version9Rows = """
        INSERT INTO apps (id, name, bundle_id, server_key_hash, device_key_hash, created_at, updated_at)
            VALUES ('app_old', 'Old', 'com.example.old', %SERVER%, %DEVICE%, 1700000000000, 1700000000000);
        INSERT INTO devices (app_id, device_id, platform, environment, created_at, updated_at)
            VALUES ('app_old', 'd1', 'ios', 'sandbox', 1700000000000, 1700000000000);
        """

    @Test func onSQLiteAnExistingAppIsOffAndItsDevicesHaveNoSecret() async throws {
        try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("islet.sqlite").path
            do {
                let connection = try SQLiteConnection(path: path)
                let version9 = IsletSchema.migrations.filter { $0.version <= 9 }
                #expect(try Migrator(migrations: version9).migrate(connection) == Array(1...9))
                try connection.execute(
                    Self.version9Rows.replacingOccurrences(of: "%SERVER%", with: "X'01'")
                        .replacingOccurrences(of: "%DEVICE%", with: "X'02'"))
            }
            let store = try SQLiteStore(path: path)
            defer { store.close() }
            try await Self.expectMigrated(store)
        }
    }

    @Test(.requires(.postgres)) func onPostgreSQLAnExistingAppIsOffAndItsDevicesHaveNoSecret() async throws {
        try await TestPostgres.withSchema { url in
            do {
                let connection = try PostgresConnection(url: try PostgresURL(url), applicationName: "islet-tests")
                defer { connection.close() }
                let version9 = PostgresSchema.migrations.filter { $0.version <= 9 }
                #expect(try PostgresMigrator.migrate(connection, migrations: version9).last == 9)
                try connection.execute(
                    Self.version9Rows.replacingOccurrences(of: "%SERVER%", with: "'\\x01'::bytea")
                        .replacingOccurrences(of: "%DEVICE%", with: "'\\x02'::bytea"))
            }
            let store = try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet-tests")
            defer { store.close() }
            try await Self.expectMigrated(store)
        }
    }

    static func expectMigrated(_ store: any Store) async throws {
        #expect(try store.readNow { try $0.schemaVersion() } >= 10)
        let old = try #require(try store.readNow { try $0.app(id: "app_old") })
        #expect(old.deviceSecrets == .off)
        #expect(try store.readNow { try $0.device(appID: "app_old", deviceID: "d1") }?.hasSecret == false)
        #expect(try store.writeNow { try $0.deviceAccess(appID: "app_old", deviceID: "d1", exclusive: false) }
            == DeviceAccess(policy: .off, environment: .sandbox, secretHash: nil, platform: "ios"))
        // An app written after the migration keeps the setting it is written with.
        let new = {
            var app = Fixture.app("app_new")
            app.deviceSecrets = .required
            return app
        }()
        try await store.write { try $0.insertApp(new) }
        #expect(try store.readNow { try $0.app(id: "app_new") }?.deviceSecrets == .required)
        #expect(try store.readNow { try $0.app(id: "app_old") }?.deviceSecrets == .off)
    }
}
