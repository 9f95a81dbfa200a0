import Foundation
@testable import IsletServer
import Testing

/// What a configuration means for a start, worked out without touching the machine.
@Suite("Configuration resolution")
struct ConfigurationResolutionTests {
    @Test func theDatabaseIsTheDataFoldersFileUnlessOneIsGiven() {
        var config = Configuration()
        config.dataDirectory = "/srv/islet"
        #expect(config.resolvedDatabasePath == "/srv/islet/islet.sqlite")
        #expect(config.postgresURL == nil)
        config.databasePath = "/var/lib/islet.db"
        #expect(config.resolvedDatabasePath == "/var/lib/islet.db")
        config.databasePath = "postgresql://islet@db/islet"
        #expect(config.resolvedDatabasePath == "postgresql://islet@db/islet")
        #expect(config.postgresURL == "postgresql://islet@db/islet")
        #expect(config.adminTokenPath == "/srv/islet/admin-token")
        #expect(config.secretsKeyPath == "/srv/islet/secrets.key")
    }

    @Test func theDefaultNodeIDIsTheHostAndThePortOrTheProcess() {
        #expect(Configuration.defaultNodeID(hostName: "web-1", port: 8080, processID: 42) == "web-1:8080")
        #expect(Configuration.defaultNodeID(hostName: "web-1", port: 0, processID: 42) == "web-1:pid42")
    }

    @Test func theFoldersNeededAreTheDataFolderThenTheDatabasesFolder() {
        var config = Configuration()
        config.dataDirectory = "/srv/islet"
        let data = Configuration.RequiredFolder(path: "/srv/islet", setting: "--data-dir (ISLET_DATA_DIR)", mustBeWritable: true)
        // The default database is in the data folder.
        #expect(config.requiredFolders == [data])
        config.databasePath = "/var/lib/islet/db/islet.sqlite"
        #expect(config.requiredFolders == [
            data,
            Configuration.RequiredFolder(path: "/var/lib/islet/db", setting: "--database (ISLET_DATABASE)", mustBeWritable: false),
        ])
        // A database in the current folder, or on PostgreSQL, needs no folder of its own.
        config.databasePath = "islet.sqlite"
        #expect(config.requiredFolders == [data])
        config.databasePath = "postgres://db/islet"
        #expect(config.requiredFolders == [data])
    }

    @Test func theWindowsAndThePublicURLAreRead() {
        var config = Configuration()
        config.updateWindowHours = 2
        config.endWindowHours = 0.5
        #expect(config.lifecycleWindows.update == 7_200)
        #expect(config.lifecycleWindows.end == 1_800)
        #expect(!config.publicURLIsHTTPS)
        config.publicURL = "HTTPS://islet.example.com"
        #expect(config.publicURLIsHTTPS)
        config.publicURL = "http://islet.example.com"
        #expect(!config.publicURLIsHTTPS)
    }
}
