import Foundation
import IsletCore
import IsletLog
import IsletServer
import IsletTesting
import Testing

@Suite("Configuration")
struct ConfigurationTests {
    func load(_ arguments: [String], _ environment: [String: String] = [:]) throws(ConfigurationError) -> Configuration {
        try Configuration.load(arguments: arguments, environment: environment).configuration
    }

    @Test func defaults() throws {
        let config = try load([])
        #expect(config.host == "127.0.0.1")
        #expect(config.port == 8080)
        #expect(config.resolvedDatabasePath == "data/islet.sqlite")
        #expect(config.logLevel == .info)
        #expect(config.logFormat == .logfmt)
        #expect(config.maxBodyBytes == 65_536)
    }

    @Test func environmentThenFlagsWithFlagsWinning() throws {
        let config = try load(
            ["--port", "9000", "--log-format=json"],
            ["ISLET_PORT": "7000", "ISLET_HOST": "0.0.0.0", "ISLET_LOG_LEVEL": "DEBUG", "ISLET_DATABASE": "/tmp/x.db"])
        #expect(config.port == 9000)
        #expect(config.host == "0.0.0.0")
        #expect(config.logLevel == .debug)
        #expect(config.logFormat == .json)
        #expect(config.resolvedDatabasePath == "/tmp/x.db")
    }

    @Test(arguments: [
        (["--port", "70000"], [:], "--port (ISLET_PORT)", "\"70000\" is not a port number (0-65535)"),
        (["--port", "eighty"], [:], "--port (ISLET_PORT)", "\"eighty\" is not a port number"),
        ([], ["ISLET_PORT": "-1"], "--port (ISLET_PORT)", "ISLET_PORT=\"-1\" is not a port number"),
        (["--log-level", "loud"], [:], "--log-level (ISLET_LOG_LEVEL)", "not a log level (one of debug, info, notice, warning, error)"),
        (["--log-format", "xml"], [:], "--log-format (ISLET_LOG_FORMAT)", "not a log format (one of json, logfmt)"),
        (["--max-body-bytes", "0"], [:], "--max-body-bytes (ISLET_MAX_BODY_BYTES)", "not a size"),
        (["--http-threads", "0"], [:], "--http-threads (ISLET_HTTP_THREADS)", "not a thread count"),
        (["--shutdown-grace-seconds", "-3"], [:], "--shutdown-grace-seconds (ISLET_SHUTDOWN_GRACE_SECONDS)", "not a number of seconds"),
        (["--shutdown-grace-seconds", "nan"], [:], "--shutdown-grace-seconds (ISLET_SHUTDOWN_GRACE_SECONDS)", "not a number of seconds"),
        (["--host", ""], [:], "--host (ISLET_HOST)", "an address is required"),
        (["--data-dir="], [:], "--data-dir (ISLET_DATA_DIR)", "a folder path is required"),
    ] as [([String], [String: String], String, String)])
    func badValuesNameTheirSetting(arguments: [String], environment: [String: String], setting: String, message: String) {
        let error = #expect(throws: ConfigurationError.self) { try load(arguments, environment) }
        #expect(error?.code == .invalidValue)
        #expect(error?.setting == setting)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.description.contains("\n") == false)
        #expect(error?.description.hasPrefix("invalid setting \(setting): ") == true)
    }

    @Test func unknownAndIncompleteFlags() {
        let unknown = #expect(throws: ConfigurationError.self) { try load(["--prot", "1"]) }
        #expect(unknown?.code == .unknownOption)
        #expect(unknown?.description == "unknown option --prot: no such setting; see --help")
        let bare = #expect(throws: ConfigurationError.self) { try load(["8080"]) }
        #expect(bare?.code == .unknownOption)
        let missing = #expect(throws: ConfigurationError.self) { try load(["--port"]) }
        #expect(missing?.code == .missingValue)
        #expect(missing?.setting == "--port (ISLET_PORT)")
    }

    @Test func unknownIsletVariablesAreWarnedAbout() throws {
        let loaded = try Configuration.load(arguments: [], environment: ["ISLET_PROT": "1", "HOME": "/root"])
        #expect(loaded.warnings == ["ignoring unknown environment variable ISLET_PROT"])
    }

    @Test func helpListsEverySetting() {
        for setting in Configuration.settings {
            #expect(Configuration.helpText.contains(setting.flag))
            #expect(Configuration.helpText.contains(setting.environment))
        }
    }

    @Test func filesystemProblemsNameTheirSetting() async throws {
        try await withTemporaryDirectory { dir in
            let file = dir.appendingPathComponent("plain-file")
            try Data("x".utf8).write(to: file)

            var dataIsFile = Configuration()
            dataIsFile.dataDirectory = file.path
            let e1 = #expect(throws: ConfigurationError.self) { try dataIsFile.prepareFilesystem() }
            #expect(e1?.setting == "--data-dir (ISLET_DATA_DIR)")
            #expect(e1?.message.contains("not a folder") == true)

            var dataUnderFile = Configuration()
            dataUnderFile.dataDirectory = file.appendingPathComponent("sub").path
            let e2 = #expect(throws: ConfigurationError.self) { try dataUnderFile.prepareFilesystem() }
            #expect(e2?.setting == "--data-dir (ISLET_DATA_DIR)")
            #expect(e2?.message.contains("cannot create") == true)

            var databaseIsFolder = Configuration()
            databaseIsFolder.dataDirectory = dir.path
            databaseIsFolder.databasePath = dir.path
            let e3 = #expect(throws: ConfigurationError.self) { try databaseIsFolder.prepareFilesystem() }
            #expect(e3?.setting == "--database (ISLET_DATABASE)")

            var databaseNowhere = Configuration()
            databaseNowhere.dataDirectory = dir.path
            databaseNowhere.databasePath = dir.appendingPathComponent("missing/islet.sqlite").path
            let e4 = #expect(throws: ConfigurationError.self) { try databaseNowhere.prepareFilesystem() }
            #expect(e4?.message.contains("does not exist") == true)

            var fresh = Configuration()
            fresh.dataDirectory = dir.appendingPathComponent("a/b/c").path
            try fresh.prepareFilesystem()
            #expect(FileManager.default.fileExists(atPath: fresh.dataDirectory))
        }
    }

    @Test func unreadableDatabaseFileStopsTheBuild() async throws {
        try await withTemporaryDirectory { dir in
            var config = Configuration()
            config.dataDirectory = dir.path
            config.databasePath = dir.appendingPathComponent("not-a-db.sqlite").path
            try Data(repeating: 0x42, count: 8192).write(to: URL(fileURLWithPath: config.databasePath!))
            let error = #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Logger(sink: MemoryLogSink())) }
            #expect(error?.setting == "--database (ISLET_DATABASE)")
            #expect(error?.message.contains("not a database") == true)
        }
    }
}
