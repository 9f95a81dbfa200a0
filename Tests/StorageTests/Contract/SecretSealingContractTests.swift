import Foundation
import IsletCore
import IsletCrypto
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Storage
import Testing

/// The credential columns of a store given a secrets key: APNs private keys and
/// webhook secrets are sealed in the database (read back raw, beside the store) and
/// plain to its callers; plain values written before are sealed at open; a key
/// that does not open the database is refused; rotation seals everything again.
@Suite("Store contract: credentials sealed at rest")
struct SecretSealingContractTests {
    static let pem = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg\n-----END PRIVATE KEY-----\n"
    static let otherPEM = "-----BEGIN PRIVATE KEY-----\nMIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQh\n-----END PRIVATE KEY-----\n"

    static func app(_ pem: String = pem) -> AppRecord {
        var app = Fixture.app()
        app.credentials = APNsCredentials(teamID: "TEAM", keyID: "KEY", privateKeyPEM: pem)
        return app
    }

    static func webhook(secret: String = "whsec_current", previous: String? = "whsec_previous") -> WebhookRecord {
        WebhookRecord(
            webhookID: "wh_1", appID: "app_1", url: "https://hooks.example.com/1", events: ["*"], description: nil,
            secret: secret, previousSecret: previous, previousSecretUntil: Fixture.at(3600), cursor: 0,
            createdAt: Fixture.at(1), updatedAt: Fixture.at(1))
    }

    /// The raw credential columns: every one sealed, none with a plain key or secret.
    static func expectSealed(_ database: TestDatabase, count: Int, sourceLocation: SourceLocation = #_sourceLocation) throws -> [String] {
        let values = try database.credentialColumns()
        #expect(values.count == count, sourceLocation: sourceLocation)
        for value in values {
            #expect(value.hasPrefix("sealed:v1:"), "\(value)", sourceLocation: sourceLocation)
            #expect(!value.contains("PRIVATE KEY") && !value.contains("whsec_"), "\(value)", sourceLocation: sourceLocation)
        }
        return values
    }

    @Test(arguments: StoreBackend.all)
    func credentialsAreSealedWhenCreatedAndUpdatedAndPlainToTheCaller(_ backend: StoreBackend) async throws {
        let key = try SecretsKey.generate()
        try await withTestDatabase(backend) { database in
            let store = try database.open(key)
            defer { store.close() }
            try store.writeNow { session in
                try session.insertApp(Self.app())
                try session.insertWebhook(Self.webhook())
            }
            _ = try Self.expectSealed(database, count: 3)
            #expect(try store.readNow { try $0.app(id: "app_1") }?.credentials?.privateKeyPEM == Self.pem)
            let read = try #require(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_1") })
            #expect(read.secret == "whsec_current")
            #expect(read.previousSecret == "whsec_previous")
            #expect(try store.readNow { try $0.app(keyHash: Fixture.app().serverKeyHash) }?.app.credentials?.privateKeyPEM == Self.pem)

            // Updated, each way the store writes them.
            try store.writeNow { session in
                try session.updateApp(Self.app(Self.otherPEM))
                var webhook = Self.webhook(secret: "whsec_rotated", previous: "whsec_current")
                webhook.updatedAt = Fixture.at(2)
                try session.updateWebhook(webhook)
            }
            _ = try Self.expectSealed(database, count: 3)
            #expect(try store.readNow { try $0.apps() }.first?.credentials?.privateKeyPEM == Self.otherPEM)
            try store.writeNow { try $0.updateAppSettings(Self.app()) }
            _ = try Self.expectSealed(database, count: 3)
            #expect(try store.readNow { try $0.app(id: "app_1") }?.credentials?.privateKeyPEM == Self.pem)

            // A delivery claimed carries the secrets plain, to sign with.
            try store.writeNow { session in
                try session.appendEvents([
                    NewEvent(appID: "app_1", type: .activityStarted, activityID: "a1", occurredAt: Fixture.at(3), data: [:])
                ])
            }
            let events = try store.readNow { try $0.events(appID: "app_1", after: 0, patterns: [], limit: 10) }
            let sequence = try #require(events.last?.sequence)
            try store.writeNow {
                try $0.addDeliveries(webhookID: "wh_1", appID: "app_1", events: events, cursor: sequence, now: Fixture.at(4))
            }
            let deliveries = try store.writeNow {
                try $0.claimDueDeliveries(now: Fixture.at(5), limit: 10, nodeID: "node-1", leaseUntil: Fixture.at(60))
            }
            #expect(deliveries.first?.secrets == ["whsec_rotated", "whsec_current"])
        }
    }

    @Test(arguments: StoreBackend.all)
    func plainValuesWrittenBeforeAreSealedAtOpen(_ backend: StoreBackend) async throws {
        let key = try SecretsKey.generate()
        try await withTestDatabase(backend) { database in
            // Written the old way: a store without a key keeps them as given.
            do {
                let plain = try database.open(nil)
                defer { plain.close() }
                try plain.writeNow { session in
                    try session.insertApp(Self.app())
                    try session.insertWebhook(Self.webhook())
                }
            }
            #expect(try database.credentialColumns().sorted() == ["whsec_current", "whsec_previous", Self.pem.trimmed].sorted())
            let store = try database.open(key)
            defer { store.close() }
            _ = try Self.expectSealed(database, count: 3)
            #expect(try store.readNow { try $0.app(id: "app_1") }?.credentials?.privateKeyPEM == Self.pem)
            #expect(try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_1") }?.secret == "whsec_current")
        }
    }

    @Test(arguments: StoreBackend.all)
    func aKeyThatDoesNotOpenTheDatabaseIsRefused(_ backend: StoreBackend) async throws {
        let key = try SecretsKey.generate()
        try await withTestDatabase(backend) { database in
            do {
                let store = try database.open(key)
                defer { store.close() }
                try store.writeNow { try $0.insertApp(Self.app()) }
            }
            let error = #expect(throws: StoreError.self) { try database.open(try SecretsKey.generate()).close() }
            #expect(error?.code == .secretsKeyMismatch)
            // Without its check value too, the sealed values themselves refuse the key.
            try database.execute("DELETE FROM islet_metadata WHERE key = 'secrets_check'")
            let again = #expect(throws: StoreError.self) { try database.open(try SecretsKey.generate()).close() }
            #expect(again?.code == .secretsKeyMismatch)
            // The right key still opens it, and writes the check value again.
            let store = try database.open(key)
            defer { store.close() }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.credentials?.privateKeyPEM == Self.pem)
        }
    }

    @Test(arguments: StoreBackend.all)
    func rotationSealsEverythingAgainUnderTheNewKey(_ backend: StoreBackend) async throws {
        let old = try SecretsKey.generate()
        let new = try SecretsKey.generate()
        try await withTestDatabase(backend) { database in
            do {
                let store = try database.open(old)
                defer { store.close() }
                try store.writeNow { session in
                    try session.insertApp(Self.app())
                    try session.insertWebhook(Self.webhook())
                }
            }
            let before = try Self.expectSealed(database, count: 3)
            #expect(try database.reseal(from: old, to: new) == 3)
            let after = try Self.expectSealed(database, count: 3)
            #expect(Set(before).isDisjoint(with: after))
            for value in after {
                #expect(throws: CryptoError.self) { try old.open(value) }
            }
            let error = #expect(throws: StoreError.self) { try database.open(old).close() }
            #expect(error?.code == .secretsKeyMismatch)
            let store = try database.open(new)
            defer { store.close() }
            #expect(try store.readNow { try $0.app(id: "app_1") }?.credentials?.privateKeyPEM == Self.pem)
            let webhook = try store.readNow { try $0.webhook(appID: "app_1", webhookID: "wh_1") }
            #expect(webhook?.secret == "whsec_current")
            #expect(webhook?.previousSecret == "whsec_previous")
            // Rotating with a key that does not open the values changes nothing.
            let refused = #expect(throws: StoreError.self) { try database.reseal(from: old, to: try SecretsKey.generate()) }
            #expect(refused?.code == .secretsKeyMismatch)
            #expect(try database.credentialColumns().sorted() == after.sorted())
        }
    }
}

extension SecretSealingContractTests {
    static let answer = Data(#"{"created":true,"device_secret":"islet_ds_kept"}"#.utf8)

    @Test(arguments: StoreBackend.all)
    func anAnswerHoldingASecretIsSealedAtRestAndAgainOnRotation(_ backend: StoreBackend) async throws {
        let old = try SecretsKey.generate()
        let new = try SecretsKey.generate()
        try await withTestDatabase(backend) { database in
            do {
                let store = try database.open(old)
                defer { store.close() }
                try store.writeNow { session in
                    try session.insertApp(Fixture.app())
                    for (key, sealed) in [("sealed", true), ("plain", false)] {
                        try session.saveIdempotentAnswer(
                            appID: "app_1", key: key,
                            IdempotentAnswer(
                                requestHash: Data([1]), status: 201, body: Self.answer, createdAt: Fixture.at(1), sealed: sealed),
                            replacingBefore: Fixture.t0)
                    }
                }
                let read = try #require(try store.readNow { try $0.idempotentAnswer(appID: "app_1", key: "sealed", since: Fixture.t0) })
                #expect(read.body == Self.answer && read.sealed && read.status == 201)
                #expect(try store.readNow { try $0.idempotentAnswer(appID: "app_1", key: "plain", since: Fixture.t0) }?.sealed == false)
            }
            let before = try database.idempotencyBodies()
            #expect(before["plain"] == String(decoding: Self.answer, as: UTF8.self))
            let sealed = try #require(before["sealed"])
            #expect(sealed.hasPrefix("sealed:v1:") && !sealed.contains("islet_ds_"), "\(sealed)")

            _ = try database.reseal(from: old, to: new)
            let after = try database.idempotencyBodies()
            #expect(after["plain"] == before["plain"])
            #expect(after["sealed"] != sealed && after["sealed"]?.hasPrefix("sealed:v1:") == true)
            let store = try database.open(new)
            defer { store.close() }
            #expect(try store.readNow { try $0.idempotentAnswer(appID: "app_1", key: "sealed", since: Fixture.t0) }?.body == Self.answer)
        }
    }
}

/// A database of one backend that a test opens stores on, one after another, and
/// reads raw beside them.
struct TestDatabase {
    let backend: StoreBackend
    /// The SQLite file, or the PostgreSQL URL.
    let location: String

    /// A store on the database, sealing with `key`.
    func open(_ key: SecretsKey?) throws -> any Store {
        switch backend.kind {
        case .sqlite: try SQLiteStore(path: location, secrets: key)
        case .postgresql: try PostgreSQLStore(url: location, poolSize: 1, applicationName: "islet-tests", secrets: key)
        }
    }

    /// Seals every credential again under `new`, opened with `old`.
    func reseal(from old: SecretsKey, to new: SecretsKey) throws -> Int {
        switch backend.kind {
        case .sqlite:
            let store = try SQLiteStore(path: location, secrets: old)
            defer { store.close() }
            return try store.resealSecrets(under: new)
        case .postgresql:
            let store = try PostgreSQLStore(url: location, poolSize: 1, applicationName: "islet-tests", secrets: old)
            defer { store.close() }
            return try store.resealSecrets(under: new)
        }
    }

    /// The credential columns as the database holds them.
    func credentialColumns() throws -> [String] {
        try text("""
            SELECT apns_private_key AS v FROM apps WHERE apns_private_key IS NOT NULL
            UNION ALL SELECT secret FROM webhooks
            UNION ALL SELECT previous_secret FROM webhooks WHERE previous_secret IS NOT NULL
            """)
    }

    /// Runs one statement straight on the database.
    func execute(_ statement: String) throws {
        switch backend.kind {
        case .sqlite: try SQLiteConnection(path: location).execute(statement)
        case .postgresql: try TestPostgres.psql(location, statement)
        }
    }

    /// The bodies of the answers kept for idempotency keys, raw, by key.
    func idempotencyBodies() throws -> [String: String] {
        let body = backend.kind == .sqlite ? "CAST(body AS TEXT)" : "convert_from(body, 'UTF8')"
        var bodies: [String: String] = [:]
        for line in try text("SELECT key || '=' || \(body) AS v FROM idempotency_keys") {
            let parts = line.split(separator: "=", maxSplits: 1)
            bodies[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return bodies
    }

    /// The text values `query` answers, without surrounding white space (psql's
    /// output has none).
    private func text(_ query: String) throws -> [String] {
        switch backend.kind {
        case .sqlite:
            return try SQLiteConnection(path: location).query(query, []).compactMap { $0[0].text?.trimmed }
        case .postgresql:
            // One line of values apart, since a PEM key spans several.
            let output = try TestPostgres.psql(location, "SELECT string_agg(v, '\u{1e}') FROM (\(query)) AS t")
            return output.isEmpty ? [] : output.components(separatedBy: "\u{1e}").map(\.trimmed)
        }
    }
}

/// Runs `body` with a fresh database of `backend`: a file of a temporary folder, or
/// a schema of its own on the test server.
func withTestDatabase<T>(_ backend: StoreBackend, _ body: (TestDatabase) async throws -> T) async throws -> T {
    switch backend.kind {
    case .sqlite:
        try await withTemporaryDirectory { folder in
            try await body(TestDatabase(backend: backend, location: folder.appendingPathComponent("islet.sqlite").path))
        }
    case .postgresql:
        try await TestPostgres.withSchema { url in try await body(TestDatabase(backend: backend, location: url)) }
    }
}

private extension String {
    var trimmed: String { trimmingCharacters(in: .whitespacesAndNewlines) }
}
