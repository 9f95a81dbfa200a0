import Foundation
import IsletCore
import IsletLog
@testable import IsletServer
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
        ([], ["ISLET_PORT": "-1"], "--port (ISLET_PORT)", "the value of ISLET_PORT, \"-1\", is not a port number"),
        (["--host", "not-an-ip"], [:], "--host (ISLET_HOST)", "\"not-an-ip\" is not an IP address (such as 127.0.0.1, 0.0.0.0 or ::1) or localhost"),
        ([], ["ISLET_HOST": "example.com"], "--host (ISLET_HOST)", "not an IP address"),
        (["--log-level", "loud"], [:], "--log-level (ISLET_LOG_LEVEL)", "not a log level (one of debug, info, notice, warning, error)"),
        (["--log-format", "xml"], [:], "--log-format (ISLET_LOG_FORMAT)", "not a log format (one of json, logfmt)"),
        (["--max-body-bytes", "0"], [:], "--max-body-bytes (ISLET_MAX_BODY_BYTES)", "not a size"),
        (["--http-threads", "0"], [:], "--http-threads (ISLET_HTTP_THREADS)", "not a thread count"),
        (["--shutdown-grace-seconds", "-3"], [:], "--shutdown-grace-seconds (ISLET_SHUTDOWN_GRACE_SECONDS)", "not a number of seconds"),
        (["--shutdown-grace-seconds", "nan"], [:], "--shutdown-grace-seconds (ISLET_SHUTDOWN_GRACE_SECONDS)", "not a number of seconds"),
        (["--host", ""], [:], "--host (ISLET_HOST)", "an address is required"),
        (["--data-dir="], [:], "--data-dir (ISLET_DATA_DIR)", "a folder path is required"),
        // A rate limit's figures have the bounds the API gives them.
        (["--sends-per-second", "1e-320"], [:], "--sends-per-second (ISLET_SENDS_PER_SECOND)",
         "not a number of requests a second from 0.0002777777777777778 to 1000000"),
        ([], ["ISLET_REGISTRATIONS_PER_SECOND": "1e300"], "--registrations-per-second (ISLET_REGISTRATIONS_PER_SECOND)",
         "not a number of requests a second"),
        (["--registrations-per-second", "-0.0"], [:], "--registrations-per-second (ISLET_REGISTRATIONS_PER_SECOND)",
         "not a number of requests a second"),
        (["--sends-burst", "10000001"], [:], "--sends-burst (ISLET_SENDS_BURST)", "not a count from 1 to 10000000"),
        (["--priority-10-per-hour", "9223372036854775807"], [:], "--priority-10-per-hour (ISLET_PRIORITY_10_PER_HOUR)",
         "not a count from 1 to 100000"),
        // History is kept from an hour (what the budgets read) to ten years.
        (["--history-retention-days", "0"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)",
         "\"0\" is not a number of days from 1/24 (one hour) to 3650"),
        (["--history-retention-days", "-0.0"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "0.0416"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "5e-324"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "-1"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "nan"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        ([], ["ISLET_HISTORY_RETENTION_DAYS": "inf"], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)",
         "the value of ISLET_HISTORY_RETENTION_DAYS, \"inf\", is not a number of days"),
        (["--history-retention-days", "3650.5"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "1e308"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
        (["--history-retention-days", "thirty"], [:], "--history-retention-days (ISLET_HISTORY_RETENTION_DAYS)", "not a number of days"),
    ] as [([String], [String: String], String, String)])
    func badValuesNameTheirSetting(arguments: [String], environment: [String: String], setting: String, message: String) {
        let error = #expect(throws: ConfigurationError.self) { try load(arguments, environment) }
        #expect(error?.code == .invalidValue)
        #expect(error?.setting == setting)
        #expect(error?.message.contains(message) == true, "\(error?.message ?? "")")
        #expect(error?.description.contains("\n") == false)
        #expect(error?.description.hasPrefix("invalid setting \(setting): ") == true)
    }

    @Test func theHistoryRetentionTakesAnHourToTenYearsInFractionsOfDays() throws {
        #expect(try load([]).historyRetentionDays == 30)
        #expect(try load(["--history-retention-days", "0.041666666666666664"]).historyRetentionDays == 1.0 / 24)
        #expect(try load(["--history-retention-days=3650"]).historyRetentionDays == 3_650)
        #expect(try load([], ["ISLET_HISTORY_RETENTION_DAYS": "0.5"]).historyRetentionDays == 0.5)
        // The shortest retention is the longest window the budgets read.
        #expect(HistoryRetention.days.lowerBound * 86_400 == SendBudget.window)
        for days in [0, -0.0, .leastNonzeroMagnitude, .nan, .infinity, -.infinity, 1.0 / 48, 3_650.000_001, -1] {
            #expect(!HistoryRetention.accepts(days), "\(days)")
        }
        for days in [1.0 / 24, 0.5, 1, 30, 3_650] {
            #expect(HistoryRetention.accepts(days), "\(days)")
        }
        // An app's own retention is in force only when shorter than the server's.
        #expect(HistoryRetention.seconds(serverDays: 30, appDays: nil) == 30 * 86_400)
        #expect(HistoryRetention.seconds(serverDays: 30, appDays: 0.5) == 43_200)
        #expect(HistoryRetention.seconds(serverDays: 1, appDays: 7) == 86_400)
    }

    @Test func aRateLimitsBoundsAreTakenAsSettings() throws {
        let config = try load([
            "--sends-per-second", "0.0002777777777777778", "--sends-burst", "10000000", "--registrations-per-second",
            "1000000", "--registrations-burst", "1",
        ])
        #expect(config.sendsPerSecond == 1.0 / 3_600 && config.sendsBurst == 10_000_000)
        #expect(config.registrationsPerSecond == 1_000_000 && config.registrationsBurst == 1)
    }

    @Test func theClusterSettingsAreReadAndChecked() throws {
        let config = try load(
            ["--database", "postgresql://islet:s3cret@db.example:5432/islet?sslmode=require", "--node-id", "node-a",
             "--push-lease-seconds", "12"],
            ["ISLET_DATABASE_POOL_SIZE": "4"])
        #expect(config.postgresURL == "postgresql://islet:s3cret@db.example:5432/islet?sslmode=require")
        #expect(config.databasePoolSize == 4)
        #expect(config.resolvedNodeID == "node-a")
        #expect(config.pushLeaseSeconds == 12)
        #expect(try load(["--database", "/var/lib/islet/islet.sqlite"]).postgresURL == nil)
        #expect(try load(["--database", "POSTGRES://h/db"]).postgresURL == "POSTGRES://h/db")
        // The default node id is the host name and the port.
        var defaults = try load(["--port", "9001"])
        #expect(defaults.resolvedNodeID.hasSuffix(":9001"))
        defaults.port = 0
        #expect(defaults.resolvedNodeID.hasSuffix(":pid\(getpid())"))
        for (arguments, setting) in [
            (["--database", "mysql://h/db"], "--database (ISLET_DATABASE)"),
            (["--database-pool-size", "0"], "--database-pool-size (ISLET_DATABASE_POOL_SIZE)"),
            (["--node-id", "a b"], "--node-id (ISLET_NODE_ID)"),
            (["--node-id", ""], "--node-id (ISLET_NODE_ID)"),
            (["--push-lease-seconds", "0"], "--push-lease-seconds (ISLET_PUSH_LEASE_SECONDS)"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try load(arguments) }
            #expect(error?.setting == setting)
        }
    }

    @Test func theTimeSettingsAreReadAndChecked() throws {
        let config = try load(
            ["--renew-lead-minutes", "30", "--start-confirm-minutes", "5"], ["ISLET_EVENT_RETENTION_DAYS": "3"])
        #expect(config.renewLeadMinutes == 30)
        #expect(config.startConfirmMinutes == 5)
        #expect(config.eventRetentionDays == 3)
        let defaults = try load([])
        #expect(defaults.renewLeadMinutes == 15)
        for (arguments, setting) in [
            (["--renew-lead-minutes", "0"], "--renew-lead-minutes (ISLET_RENEW_LEAD_MINUTES)"),
            (["--renew-lead-minutes", "241"], "--renew-lead-minutes (ISLET_RENEW_LEAD_MINUTES)"),
            (["--start-confirm-minutes", "soon"], "--start-confirm-minutes (ISLET_START_CONFIRM_MINUTES)"),
        ] {
            let error = #expect(throws: ConfigurationError.self) { try load(arguments) }
            #expect(error?.setting == setting)
        }
    }

    @Test func aRefusedDatabaseURLNeverShowsItsPassword() throws {
        let flag = #expect(throws: ConfigurationError.self) { try load(["--database", "mysql://islet:hunter2pw@h/db"]) }
        #expect(flag?.message.contains("hunter2pw") == false)
        #expect(flag?.message.contains("***") == true)
        let variable = #expect(throws: ConfigurationError.self) {
            try load([], ["ISLET_DATABASE": "mysql://islet:hunter2pw@h/db?password=again"])
        }
        #expect(variable?.message.contains("hunter2pw") == false)
        #expect(variable?.message.contains("again") == false)
    }

    @Test func aFlagWinsOverABadEnvironmentValue() throws {
        // The environment's value is never read when a flag gives the setting.
        #expect(try load(["--port", "0"], ["ISLET_PORT": "99999"]).port == 0)
        #expect(try load(["--host=::1"], ["ISLET_HOST": "not-an-ip"]).host == "::1")
        #expect(try load(["--admin-token", "a-token-long-enough-1"], ["ISLET_ADMIN_TOKEN": "short"]).adminToken == "a-token-long-enough-1")
        // Without the flag the bad value is still refused.
        #expect(throws: ConfigurationError.self) { try load([], ["ISLET_PORT": "99999"]) }
    }

    @Test func addressesTheAPICanListenOn() throws {
        for host in ["127.0.0.1", "0.0.0.0", "::1", "::", "fe80::1", "localhost"] {
            #expect(try load(["--host", host]).host == host)
        }
    }

    @Test func aRefusedAdminTokenReadsAsASentenceAndIsNeverRepeated() {
        let fromEnvironment = #expect(throws: ConfigurationError.self) { try load([], ["ISLET_ADMIN_TOKEN": "short"]) }
        #expect(fromEnvironment?.description
            == "invalid setting --admin-token (ISLET_ADMIN_TOKEN): the value of ISLET_ADMIN_TOKEN is not a token of at least 16 characters without spaces")
        let fromFlag = #expect(throws: ConfigurationError.self) { try load(["--admin-token", "short"]) }
        #expect(fromFlag?.message == "the value given to --admin-token is not a token of at least 16 characters without spaces")
        #expect(fromFlag?.description.contains("short") == false)
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

    @Test func everyPropertyIsSetByOneSettingOrOnlyInCode() {
        // Set by the code that builds a configuration (tests, the harness), never by a flag.
        let codeOnly: Set = ["appKeyCacheSeconds", "maxTimelineBodyBytes"]
        let properties = Mirror(reflecting: Configuration()).children.compactMap(\.label)
        // `\Configuration.port` names the property `port`.
        let set = Configuration.settings.map { String(reflecting: $0.property).replacingOccurrences(of: "\\Configuration.", with: "") }
        #expect(Set(set).count == set.count, "a property is set by two settings")
        #expect(set.sorted() == properties.filter { !codeOnly.contains($0) }.sorted())
        #expect(Set(Configuration.settings.map(\.flag)).count == Configuration.settings.count)
    }

    @Test func eachDefaultShownIsTheDefault() {
        for setting in Configuration.settings {
            var config = Configuration()
            // A default that is a description (a property that starts nil) is no value to read.
            guard String(describing: Configuration()[keyPath: setting.property]) != "nil" else { continue }
            #expect(setting.apply(&config, setting.defaultText) == nil, "\(setting.flag)")
            #expect(config == Configuration(), "\(setting.flag): \(setting.defaultText)")
        }
        #expect(Configuration.setting(for: \.port).defaultText == "8080")
        #expect(Configuration.setting(for: \.pushLeaseSeconds).defaultText == "30")
        #expect(Configuration.setting(for: \.webhookRetryBaseSeconds).defaultText == "5")
        #expect(Configuration.setting(for: \.logFormat).defaultText == "logfmt")
        #expect(Configuration.setting(for: \.databasePath).defaultText == "<data-dir>/islet.sqlite")
    }

    @Test func eachVariableIsTheFlagInCapitals() {
        for setting in Configuration.settings {
            let variable = "ISLET_" + setting.flag.dropFirst(2).uppercased().replacingOccurrences(of: "-", with: "_")
            #expect(setting.environment == variable)
            #expect(setting.label == "\(setting.flag) (\(variable))")
        }
        #expect(Configuration.settings.filter(\.isSecret).map(\.flag) == ["--admin-token", "--secrets-key"])
    }

    @Test func helpListsEverySetting() {
        for setting in Configuration.settings {
            #expect(Configuration.helpText.contains(setting.flag))
            #expect(Configuration.helpText.contains(setting.environment))
        }
    }

    @Test func theAllowPrivateHelpNamesOnlyWhatItAllows() throws {
        let line = try #require(Configuration.helpText.split(separator: "\n").first { $0.contains("--webhooks-allow-private") })
        let allowed = try #require(line.split(separator: ";").first)
        let scopes: [NetworkAddressScope] = [
            .public, .loopback, .privateNetwork, .linkLocal, .metadata, .unspecified, .multicast, .broadcast, .reserved,
        ]
        for scope in scopes where scope != .public {
            let opened = scope.isRefusedForWebhooks(allowPrivate: false) && !scope.isRefusedForWebhooks(allowPrivate: true)
            #expect(allowed.contains(scope.description) == opened, "\(scope)")
            if !opened { #expect(line.contains(scope.description), "\(scope) is said to stay refused") }
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

            // The database's folder is made, as the data folder is.
            var databaseElsewhere = Configuration()
            databaseElsewhere.dataDirectory = dir.path
            databaseElsewhere.databasePath = dir.appendingPathComponent("missing/deeper/islet.sqlite").path
            let made = try databaseElsewhere.prepareFilesystem()
            #expect(FileManager.default.fileExists(atPath: dir.appendingPathComponent("missing/deeper").path))
            #expect(made == [dir.appendingPathComponent("missing/deeper").path, dir.appendingPathComponent("missing").path])

            // A database folder that cannot be made: the data folder made just before goes again.
            var databaseUnderFile = Configuration()
            databaseUnderFile.dataDirectory = dir.appendingPathComponent("fresh-data").path
            databaseUnderFile.databasePath = file.appendingPathComponent("islet.sqlite").path
            let e4 = #expect(throws: ConfigurationError.self) { try databaseUnderFile.prepareFilesystem() }
            #expect(e4?.setting == "--database (ISLET_DATABASE)")
            #expect(e4?.message.contains("is not a folder") == true, "\(e4?.message ?? "")")
            #expect(!FileManager.default.fileExists(atPath: databaseUnderFile.dataDirectory))

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
            // The data folder this start would have used is not left behind.
            config.dataDirectory = dir.appendingPathComponent("never-used/data").path
            #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Logger(sink: MemoryLogSink())) }
            #expect(!FileManager.default.fileExists(atPath: dir.appendingPathComponent("never-used").path))
        }
    }
}
