import Foundation
import IsletCore
import IsletCrypto
import IsletLog
import IsletServer
import IsletSync
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Simulators
import Storage
import Testing

/// Secrets at rest through a real start: the data folder and the files Islet writes
/// are its user's only; credentials are sealed in the database, those an older Islet
/// left plain are sealed at start and still sign and verify; a node without the
/// right key refuses to start; `islet secrets` makes and rotates keys.
@Suite("Secrets at rest")
struct SecretsAtRestTests {
    static let adminToken = "secrets-admin-token-0123456789"
    let executable = builtProductPath("islet")

    static func mode(_ path: String) throws -> Int {
        let attributes = try FileManager.default.attributesOfItem(atPath: path)
        return try #require((attributes[.posixPermissions] as? NSNumber)?.intValue)
    }

    /// A node's settings on `database` (a PostgreSQL URL, or SQLite in the data
    /// folder when nil), its secrets key generated in the data folder on SQLite.
    static func nodeConfiguration(in dir: URL, database: String?) -> Configuration {
        var config = Configuration()
        config.port = 0
        config.dataDirectory = dir.appendingPathComponent("data").path
        config.databasePath = database
        config.databasePoolSize = 2
        config.adminToken = Self.adminToken
        config.secretsKey = database.map { _ in TestPostgres.secretsKey }
        return config
    }

    /// The secrets key a node of `config` runs with.
    static func currentKey(_ config: Configuration) throws -> SecretsKey {
        try SecretsKey(base64: config.secretsKey ?? (try String(contentsOfFile: config.secretsKeyPath, encoding: .utf8)))
    }

    /// `islet secrets rotate` on `config`'s database, to `new` (written to a file in
    /// `dir`).
    func rotate(_ config: Configuration, to new: SecretsKey, in dir: URL) async throws
        -> (status: Int32, output: String, error: String)
    {
        let newFile = dir.appendingPathComponent("new.key")
        try (new.base64 + "\n").write(to: newFile, atomically: true, encoding: .utf8)
        return try await runCommand(
            executable,
            ["secrets", "rotate", "--new-key-file", newFile.path, "--data-dir", config.dataDirectory]
                + (config.databasePath.map { ["--database", $0] } ?? []),
            environment: config.secretsKey.map { ["ISLET_SECRETS_KEY": $0] } ?? [:])
    }

    static func quiet(_ sink: MemoryLogSink = MemoryLogSink()) -> Logger {
        Logger(level: .notice, format: .logfmt, sink: sink)
    }

    /// Creates an app with an APNs signing key, an FCM service account and a
    /// webhook; answers the app's id.
    static func createAppAndWebhook(_ application: Application) async throws -> String {
        let pem = try P256.SigningKey.generate().pemRepresentation
        let rsa = try RSA.SigningKey.generate().pemRepresentation
        let created = try await httpRequest(
            port: application.port, method: "POST", path: "/v1/apps",
            headers: ["Authorization": "Bearer \(adminToken)", "Content-Type": "application/json"],
            body: Data(JSONValue.object([
                "name": "Sealed", "bundle_id": "com.example.sealed",
                "apns": ["team_id": "TEAMID0001", "key_id": "KEYID00001", "private_key": .string(pem)],
                "fcm": ["service_account": [
                    "type": "service_account", "project_id": "sealed-project", "private_key": .string(rsa),
                    "client_email": "islet@sealed-project.iam.gserviceaccount.com",
                ]],
            ]).jsonText.utf8))
        try #require(created.status == 201, "\(created.text)")
        let app = try JSONValue(parsing: created.body)
        let id = try #require(app["id"]?.stringValue)
        let serverKey = try #require(app["server_key"]?.stringValue)
        let webhook = try await httpRequest(
            port: application.port, method: "POST", path: "/v1/apps/\(id)/webhooks",
            headers: ["Authorization": "Bearer \(serverKey)", "Content-Type": "application/json"],
            body: Data(#"{"url":"https://8.8.8.8/hooks","events":["activity.*"]}"#.utf8))
        try #require(webhook.status == 201, "\(webhook.text)")
        return id
    }

    /// The credential columns as the database holds them.
    static func rawCredentials(_ configuration: Configuration) throws -> [String] {
        let query = """
            SELECT apns_private_key AS v FROM apps WHERE apns_private_key IS NOT NULL
            UNION ALL SELECT fcm_private_key FROM apps WHERE fcm_private_key IS NOT NULL
            UNION ALL SELECT secret FROM webhooks
            UNION ALL SELECT previous_secret FROM webhooks WHERE previous_secret IS NOT NULL
            """
        if let url = configuration.postgresURL {
            let output = try TestPostgres.psql(url, "SELECT string_agg(v, '\u{1e}') FROM (\(query)) AS t")
            return output.isEmpty ? [] : output.components(separatedBy: "\u{1e}")
        }
        return try SQLiteConnection(path: configuration.resolvedDatabasePath).query(query, []).compactMap { $0[0].text }
    }

    static func expectSealed(_ values: [String], count: Int, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(values.count == count, sourceLocation: sourceLocation)
        for value in values {
            #expect(value.hasPrefix("sealed:v1:"), "\(value)", sourceLocation: sourceLocation)
            #expect(!value.contains("PRIVATE KEY") && !value.contains("whsec_"), sourceLocation: sourceLocation)
        }
    }

    // MARK: - Files

    @Test func theDataFolderAndEveryFileIsletWritesAreItsUsersOnly() async throws {
        try await withTemporaryDirectory { dir in
            let parent = dir.appendingPathComponent("state")
            let data = parent.appendingPathComponent("data")
            var config = Configuration()
            config.port = 0
            config.dataDirectory = data.path
            let firstLogs = MemoryLogSink()
            let application = try buildApplication(config, logger: Logger(level: .notice, format: .logfmt, sink: firstLogs))
            try application.start()
            // The key it made is named once, to be backed up.
            #expect(firstLogs.lines.contains { $0.contains("generated the secrets key") && $0.contains(config.secretsKeyPath) })
            let token = try #require(application.generatedAdminToken)
            let created = try await httpRequest(
                port: application.port, method: "POST", path: "/v1/apps",
                headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                body: Data(JSONValue.object([
                    "name": "Files", "bundle_id": "com.example.files",
                    "apns": [
                        "team_id": "TEAMID0001", "key_id": "KEYID00001",
                        "private_key": .string(try P256.SigningKey.generate().pemRepresentation),
                    ],
                ]).jsonText.utf8))
            #expect(created.status == 201)
            let files = try FileManager.default.contentsOfDirectory(atPath: data.path).sorted()
            #expect(Set(["admin-token", "islet.sqlite", "islet.sqlite-shm", "islet.sqlite-wal", "secrets.key"]).isSubset(of: files), "\(files)")
            for file in files {
                #expect(try Self.mode(data.appendingPathComponent(file).path) == 0o600, "\(file)")
                // No file holds the private key in plain text (the database, its WAL).
                let bytes = try Data(contentsOf: data.appendingPathComponent(file))
                #expect(bytes.range(of: Data("PRIVATE KEY".utf8)) == nil, "\(file)")
            }
            #expect(try Self.mode(data.path) == 0o700)
            #expect(try Self.mode(parent.path) == 0o700)
            await application.shutdown()

            // Files an older Islet left open to others are closed at the next start;
            // a folder open to others is named in a warning (it may not be Islet's alone).
            for file in try FileManager.default.contentsOfDirectory(atPath: data.path) {
                try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: data.appendingPathComponent(file).path)
            }
            try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: data.path)
            let logs = MemoryLogSink()
            let again = try buildApplication(config, logger: Self.quiet(logs))
            try again.start()
            for file in try FileManager.default.contentsOfDirectory(atPath: data.path) {
                #expect(try Self.mode(data.appendingPathComponent(file).path) == 0o600, "\(file)")
            }
            #expect(logs.lines.contains { $0.contains("the data folder is open to other users") && $0.contains("755") }, "\(logs.lines)")
            #expect(!logs.lines.contains { $0.contains("generated the secrets key") })
            await again.shutdown()
        }
    }

    // MARK: - Sealing what an older Islet wrote

    /// An app and a webhook as an Islet before sealing wrote them (a store without a
    /// key), before the server starts on the database: at start their credentials are
    /// sealed, and the app still signs (the simulator checks its provider token) and
    /// the webhook still verifies (a receiver with the Standard Webhooks library).
    @Test(.requires(.python)) func plainCredentialsOfAnOlderIsletAreSealedAtStartAndStillWork() async throws {
        let python = try PythonTools.python()
        let script = try PythonTools.script("scripts/peers/webhook_receiver.py")
        try await withTemporaryDirectory { folder in
            let signingKey = try P256.SigningKey.generate()
            let appID = "app_" + (try SecureRandom.bytes(10)).map { String(format: "%02x", $0) }.joined()
            let app = TestApp(
                id: appID, serverKey: "islet_sk_" + Base64URL.encode(try SecureRandom.bytes(32)),
                deviceKey: "islet_dk_" + Base64URL.encode(try SecureRandom.bytes(32)))
            let webhookSecret = "whsec_" + (try SecureRandom.bytes(32)).base64EncodedString()
            let secretFile = folder.appendingPathComponent("secret")
            try Data(webhookSecret.utf8).write(to: secretFile)
            let receiver = try ChildProcess(python, [script, secretFile.path])
            defer { receiver.stop() }
            let portLine = try #require(await receiver.line { $0.contains("\"port\"") }, "\(receiver.standardError)")
            let port = try #require(try JSONValue(parsing: Data(portLine.utf8))["port"]?.int64Value)

            let now = Date()
            let record = AppRecord(
                id: app.id, name: "Older", bundleID: "com.example.deliveries",
                credentials: APNsCredentials(teamID: "TEAMID0001", keyID: "KEYOLD0001", privateKeyPEM: signingKey.pemRepresentation),
                serverKeyHash: Digest.sha256(Data(app.serverKey.utf8)), deviceKeyHash: Digest.sha256(Data(app.deviceKey.utf8)),
                createdAt: now, updatedAt: now)
            let webhook = WebhookRecord(
                webhookID: "wh_" + (try SecureRandom.bytes(10)).map { String(format: "%02x", $0) }.joined(), appID: app.id,
                url: "http://127.0.0.1:\(port)/islet", events: ["activity.*"], description: nil, secret: webhookSecret,
                cursor: 0, createdAt: now, updatedAt: now)
            let failure = Lock<String?>(nil)
            try await ServerHarness.with(
                configure: { config in
                    config.webhooksAllowHTTP = true
                    config.webhooksAllowPrivate = true
                    do {
                        let store: any Store =
                            if let url = config.postgresURL { try PostgreSQLStore(url: url, poolSize: 1) } else {
                                try SQLiteStore(path: config.resolvedDatabasePath)
                            }
                        defer { store.close() }
                        try store.writeNow { session in
                            try session.insertApp(record)
                            try session.insertWebhook(webhook)
                        }
                    } catch {
                        failure.withLock { $0 = "\(error)" }
                    }
                },
                simulators: { options in
                    options.engine.trustedKeys.append(
                        TrustedKey(keyID: "KEYOLD0001", teamID: "TEAMID0001", publicKey: signingKey.publicKey))
                }
            ) { harness in
                #expect(failure.withLock { $0 } == nil, "the older Islet's rows: \(failure.withLock { $0 } ?? "")")
                Self.expectSealed(try Self.rawCredentials(harness.application.configuration), count: 2)

                // The app signs with the key it was given before.
                try await harness.registerStartable(app, "phone-1", userID: "user-1")
                #expect(try await harness.start(app, "order-1", audience: ["user_ids": ["user-1"]]).status == 202)
                let pushes = try await harness.settledPushes(app, "order-1", count: 1)
                #expect(pushes.map { $0["status"]?.stringValue } == ["sent"], "\(pushes)")
                // The webhook signs with the secret it was given before.
                var received: [JSONValue] = []
                let arrived = try await harness.eventually {
                    received = receiver.lines.compactMap { try? JSONValue(parsing: Data($0.utf8)) }.filter { $0["answered"] != nil }
                    return received.contains { $0["type"]?.stringValue == "activity.started" }
                }
                #expect(arrived, "\(receiver.lines)")
                #expect(!received.isEmpty && received.allSatisfy { $0["verified"] == .bool(true) }, "\(received)")
            }
        }
    }

    // MARK: - The key

    @Test func onSQLiteTheFirstStartMakesTheKeyAndAnotherKeyIsRefused() async throws {
        try await withTemporaryDirectory { dir in
            var config = Configuration()
            config.port = 0
            config.dataDirectory = dir.path
            config.adminToken = Self.adminToken
            let first = try buildApplication(config, logger: Self.quiet())
            try first.start()
            _ = try await Self.createAppAndWebhook(first)
            await first.shutdown()
            let keyFile = config.secretsKeyPath
            let key = try SecretsKey(base64: try String(contentsOfFile: keyFile, encoding: .utf8))
            let values = try Self.rawCredentials(config)
            Self.expectSealed(values, count: 3)
            for value in values { #expect(throws: Never.self) { try key.open(value) } }

            // Another key is refused, naming where it came from.
            config.secretsKey = try SecretsKey.generate().base64
            let given = #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Self.quiet()) }
            #expect(given?.setting == "--secrets-key (ISLET_SECRETS_KEY)")
            #expect(given?.message.contains("does not open the sealed values") == true, "\(String(describing: given))")
            // A lost key file: the key a start would make does not open the database
            // either, and is not kept.
            config.secretsKey = nil
            try FileManager.default.removeItem(atPath: keyFile)
            let lost = #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Self.quiet()) }
            #expect(lost?.message.contains("does not open the sealed values") == true, "\(String(describing: lost))")
            #expect(!FileManager.default.fileExists(atPath: keyFile))
        }
    }

    @Test func aKeyThatIsNot32BytesIsRefusedWithoutBeingShown() async throws {
        let short = Data(repeating: 7, count: 16).base64EncodedString()
        let flag = #expect(throws: ConfigurationError.self) {
            try Configuration.load(arguments: ["--secrets-key", short], environment: [:])
        }
        #expect(flag?.setting == "--secrets-key (ISLET_SECRETS_KEY)")
        #expect(flag?.description.contains("32 bytes in base64") == true, "\(String(describing: flag))")
        #expect(flag?.description.contains(short) == false)
        let variable = #expect(throws: ConfigurationError.self) {
            try Configuration.load(arguments: [], environment: ["ISLET_SECRETS_KEY": "not a key"])
        }
        #expect(variable?.description.contains("not a key") == false, "\(String(describing: variable))")
        // A key given twice is refused before anything starts.
        try await withTemporaryDirectory { dir in
            var config = Configuration()
            config.dataDirectory = dir.path
            config.secretsKey = try SecretsKey.generate().base64
            config.secretsKeyFile = dir.appendingPathComponent("secrets.key").path
            let twice = #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Self.quiet()) }
            #expect(twice?.setting == "--secrets-key-file (ISLET_SECRETS_KEY_FILE)")
            #expect(!FileManager.default.fileExists(atPath: config.resolvedDatabasePath))
        }
    }

    @Test(.requires(.postgres, .processes)) func onPostgreSQLANodeWithoutAKeyRefusesToStartInOneLine() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in try await TestPostgres.withSchema { url in
            let data = dir.appendingPathComponent("data").path
            let result = try await runCommand(executable, ["serve", "--port", "0", "--data-dir", data, "--database", url])
            #expect(result.status == 2)
            #expect(result.error.split(separator: "\n").count == 1, "\(result.error)")
            #expect(result.error.hasPrefix("islet: invalid setting --secrets-key (ISLET_SECRETS_KEY): "), "\(result.error)")
            #expect(result.error.contains("islet secrets generate"), "\(result.error)")
            #expect(result.error.contains("--secrets-key-file"), "\(result.error)")
            #expect(!FileManager.default.fileExists(atPath: data), "a start that failed leaves no folder behind")
        } }
    }

    @Test(.requires(.postgres, .processes)) func onPostgreSQLANodeWhoseKeyDoesNotOpenTheDatabaseRefusesToStart() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in try await TestPostgres.withSchema { url in
            var config = Configuration()
            config.port = 0
            config.dataDirectory = dir.path
            config.databasePath = url
            config.databasePoolSize = 2
            config.adminToken = Self.adminToken
            config.secretsKey = try SecretsKey.generate().base64
            let first = try buildApplication(config, logger: Self.quiet())
            try first.start()
            _ = try await Self.createAppAndWebhook(first)
            await first.shutdown()
            Self.expectSealed(try Self.rawCredentials(config), count: 3)

            let other = try SecretsKey.generate().base64
            let result = try await runCommand(
                executable, ["serve", "--port", "0", "--data-dir", dir.path, "--database", url],
                environment: ["ISLET_SECRETS_KEY": other])
            #expect(result.status == 2)
            #expect(result.error.split(separator: "\n").count == 1, "\(result.error)")
            #expect(result.error.hasPrefix("islet: invalid setting --secrets-key (ISLET_SECRETS_KEY): the key does not open the sealed values"), "\(result.error)")
            #expect(!result.error.contains(other))
        } }
    }

    @Test(.requires(.processes)) func secretsGeneratePrintsAFreshKeyOf32Bytes() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        let first = try await runCommand(executable, ["secrets", "generate"])
        let second = try await runCommand(executable, ["secrets", "generate"])
        #expect(first.status == 0 && second.status == 0)
        let key = first.output.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(Data(base64Encoded: key)?.count == 32, "\(first.output)")
        #expect(key != second.output.trimmingCharacters(in: .whitespacesAndNewlines))
        #expect(throws: Never.self) { try SecretsKey(base64: key) }
        #expect(try await runCommand(executable, ["secrets", "--help"]).status == 0)
        #expect(try await runCommand(executable, ["secrets"]).status == 2)
        #expect(try await runCommand(executable, ["secrets", "rotate"]).status == 2)
    }

    /// `islet secrets rotate` on the suite's database: on SQLite over the data
    /// folder's key, which it replaces; on PostgreSQL with the key in the environment.
    @Test(.requires(.processes)) func rotateSealsEverythingAgainAndTheOldKeyThenFails() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in try await TestPostgres.withSuiteDatabase { database in
            var config = Self.nodeConfiguration(in: dir, database: database)
            let first = try buildApplication(config, logger: Self.quiet())
            try first.start()
            let appID = try await Self.createAppAndWebhook(first)
            await first.shutdown()
            let old = try Self.currentKey(config)
            let before = try Self.rawCredentials(config)
            Self.expectSealed(before, count: 3)

            let new = try SecretsKey.generate()
            let result = try await rotate(config, to: new, in: dir)
            #expect(result.status == 0, "\(result.error)")
            #expect(result.output.contains("3 credential(s) sealed under the new key"), "\(result.output)")
            if database == nil {
                #expect(result.output.contains("replaced the one in \(config.secretsKeyPath)"), "\(result.output)")
                let kept = try String(contentsOfFile: config.secretsKeyPath, encoding: .utf8)
                #expect(kept.trimmingCharacters(in: .whitespacesAndNewlines) == new.base64)
                #expect(try Self.mode(config.secretsKeyPath) == 0o600)
            } else {
                #expect(result.output.contains("Start every node with the new key"), "\(result.output)")
            }
            let after = try Self.rawCredentials(config)
            Self.expectSealed(after, count: 3)
            #expect(Set(before).isDisjoint(with: after))
            for value in after {
                #expect(throws: CryptoError.self) { try old.open(value) }
                #expect(throws: Never.self) { try new.open(value) }
            }

            // The old key no longer starts a node; the new one does, and the app's
            // credentials read back.
            config.secretsKey = old.base64
            let refused = #expect(throws: ConfigurationError.self) { try buildApplication(config, logger: Self.quiet()) }
            #expect(refused?.message.contains("does not open the sealed values") == true)
            config.secretsKey = new.base64
            let again = try buildApplication(config, logger: Self.quiet())
            #expect(try again.store.readNow { try $0.app(id: appID) }?.credentials?.privateKeyPEM.contains("PRIVATE KEY") == true)
            await again.shutdown()
        } }
    }

    /// While a node runs on the database, `islet secrets rotate` refuses, saying
    /// why, and changes nothing (on SQLite the node holds the database's lock; on
    /// PostgreSQL its heartbeat is recent and it has not stopped). A key replaced
    /// under a running node anyway never seals anything of its: what it would store
    /// is 503, logged, and the database holds only values the new key opens.
    @Test(.requires(.processes)) func rotateRefusesWhileANodeRunsAndANodeNeverSealsUnderAReplacedKey() async throws {
        try #require(FileManager.default.isExecutableFile(atPath: executable))
        try await withTemporaryDirectory { dir in try await TestPostgres.withSuiteDatabase { database in
            let config = Self.nodeConfiguration(in: dir, database: database)
            let logs = MemoryLogSink()
            let node = try buildApplication(config, logger: Self.quiet(logs))
            try node.start()
            _ = try await Self.createAppAndWebhook(node)
            let old = try Self.currentKey(config)
            let before = try Self.rawCredentials(config)
            Self.expectSealed(before, count: 3)

            let new = try SecretsKey.generate()
            let result = try await rotate(config, to: new, in: dir)
            #expect(result.status == 1, "\(result.output)")
            #expect(result.error.contains("running on this database") || result.error.contains("ran on this database"), "\(result.error)")
            #expect(result.error.contains("stop") && result.error.contains("before rotating the secrets key"), "\(result.error)")
            #expect(try Self.rawCredentials(config) == before)
            if database == nil {
                #expect(try String(contentsOfFile: config.secretsKeyPath, encoding: .utf8).contains(old.base64))
            }

            // Replaced under the running node all the same, by a store of its own.
            let store: any Store =
                if let url = config.postgresURL {
                    try PostgreSQLStore(url: url, poolSize: 1, applicationName: "islet-tests", secrets: old)
                } else {
                    try SQLiteStore(path: config.resolvedDatabasePath, secrets: old)
                }
            let resealed: Int =
                if let postgres = store as? PostgreSQLStore { try postgres.resealSecrets(under: new) } else {
                    try #require(store as? SQLiteStore).resealSecrets(under: new)
                }
            store.close()
            #expect(resealed == 3)

            // The node stores no credential under the key it holds: 503, logged.
            let refused = try await httpRequest(
                port: node.port, method: "POST", path: "/v1/apps",
                headers: ["Authorization": "Bearer \(Self.adminToken)", "Content-Type": "application/json"],
                body: Data(JSONValue.object([
                    "name": "Late", "bundle_id": "com.example.late",
                    "apns": [
                        "team_id": "TEAMID0001", "key_id": "KEYID00001",
                        "private_key": .string(try P256.SigningKey.generate().pemRepresentation),
                    ],
                ]).jsonText.utf8))
            #expect(refused.status == 503, "\(refused.text)")
            #expect(refused.text.contains("secrets key changed"), "\(refused.text)")
            #expect(logs.lines.contains { $0.contains("no longer this node's") }, "\(logs.lines)")
            await node.shutdown()
            let after = try Self.rawCredentials(config)
            Self.expectSealed(after, count: 3)
            for value in after { #expect(throws: Never.self) { try new.open(value) } }
        } }
    }
}
