import Foundation
import IsletCore
import IsletTesting
import PostgreSQLStorage
import SQLiteStorage
import Storage
import Testing

/// A store backend the contract suites run against: each test opens a fresh store of
/// it (SQLite in a temporary folder, PostgreSQL in a schema of its own on the test
/// server). A new backend joins `all` and every suite runs on it.
struct StoreBackend: Sendable, CustomTestStringConvertible {
    enum Kind: Sendable { case sqlite, postgresql }

    /// The backend's name, as `Store.backend` reports it.
    let name: String
    let kind: Kind

    var testDescription: String { name }

    /// SQLite, in a file of a temporary folder.
    static let sqlite = StoreBackend(name: "sqlite", kind: .sqlite)
    /// PostgreSQL, in a fresh schema of the test server (`ISLET_TEST_POSTGRES_URL`),
    /// on a pool of two connections.
    static let postgresql = StoreBackend(name: "postgresql", kind: .postgresql)

    /// Every backend the contract suites run against: PostgreSQL only when its tier
    /// is enabled (`ISLET_TEST_TIERS`), since it needs a server.
    static var all: [StoreBackend] { TestTier.postgres.isEnabled ? [.sqlite, .postgresql] : [.sqlite] }
}

/// The contract suites' PostgreSQL runs, named: when the tier is off, this is the
/// test that says they were skipped and why.
@Suite("Store contracts on PostgreSQL")
struct ContractBackends {
    @Test(.requires(.postgres)) func theContractSuitesRunOnPostgreSQLToo() {
        #expect(StoreBackend.all.map(\.name) == ["sqlite", "postgresql"])
    }
}

/// Runs `body` with a fresh store of `backend`, closed (and its schema dropped)
/// afterwards.
func withStore<T>(_ backend: StoreBackend, _ body: (any Store) async throws -> T) async throws -> T {
    switch backend.kind {
    case .sqlite:
        return try await withTemporaryDirectory { folder in
            let path = folder.appendingPathComponent("islet.sqlite").path
            return try await withOpenedStore({ try SQLiteStore(path: path) }) { store in
                #expect(store.backend == backend.name)
                return try await body(store)
            }
        }
    case .postgresql:
        return try await TestPostgres.withSchema { url in
            try await withOpenedStore({ try PostgreSQLStore(url: url, poolSize: 2, applicationName: "islet-tests") }) { store in
                #expect(store.backend == backend.name)
                return try await body(store)
            }
        }
    }
}

/// Values the contract suites share.
enum Fixture {
    /// A fixed start of time, in whole milliseconds.
    static let t0 = Date(unixMilliseconds: 1_700_000_000_000)

    /// The lease claims in the suites hold: node `node-1`'s, for an hour.
    static let lease = PushLease(nodeID: "node-1", until: at(3600))

    /// `seconds` after `t0`.
    static func at(_ seconds: Double) -> Date {
        Date(unixMilliseconds: t0.unixMilliseconds + Int64(seconds * 1000))
    }

    /// An app whose key hashes derive from its id.
    static func app(_ id: String = "app_1", createdAt: Date = t0, credentials: Bool = false) -> AppRecord {
        AppRecord(
            id: id, name: "App \(id)", bundleID: "com.example.\(id)",
            credentials: credentials ? APNsCredentials(teamID: "TEAM", keyID: "KEY", privateKeyPEM: "PEM \(id)") : nil,
            serverKeyHash: Data("server \(id)".utf8), deviceKeyHash: Data("device \(id)".utf8),
            createdAt: createdAt, updatedAt: createdAt)
    }

    /// A registration from an iOS device.
    static func registration(
        token: String? = nil, userID: String?? = nil, tags: [String]? = nil, environment: APNsEnvironment = .sandbox
    ) -> DeviceRegistration {
        DeviceRegistration(platform: "ios", environment: environment, apnsToken: token, userID: userID, tags: tags)
    }

    /// What a Live Activity push says.
    static func content(_ event: PushEvent = .update) -> SendContent {
        SendContent(
            event: event, topic: "com.example.app_1.push-type.liveactivity", pushType: .liveactivity,
            priority: .immediate, expiration: 1_700_003_600, collapseID: nil, payload: Data(#"{"aps":{}}"#.utf8))
    }

    /// A target on the sandbox.
    static func target(_ deviceID: String, _ token: String, _ environment: APNsEnvironment = .sandbox) -> PushTarget {
        PushTarget(deviceID: deviceID, token: token, environment: environment)
    }

    /// A schema with one content-state field.
    static func schema(_ field: String = "score") -> ActivityTypeSchema {
        ActivityTypeSchema(attributes: [:], contentState: [field: FieldSchema(.int)])
    }
}

/// Mints `apns-id`s in order: `id-1`, `id-2`, …
final class IDMinter {
    private var next = 0
    func mint() -> String {
        next += 1
        return "id-\(next)"
    }
}

extension StoreSession {
    /// Adds an activity of `appID` started at `now`, and answers its sequence.
    @discardableResult
    func startActivity(
        _ activityID: String, appID: String = "app_1", type: String = "Match", origin: ActivityRecord.Origin = .remote,
        endAt: Date? = nil, replacing: Bool = false, at now: Date = Fixture.t0
    ) throws -> Int64 {
        try insertActivity(
            appID: appID, activityID: activityID, activityType: type, origin: origin, attributes: .object(["a": .integer(1)]),
            contentState: .object(["score": .integer(0)]), lastTimestamp: 1, endAt: endAt, replacing: replacing, now: now)
    }

    /// Queues one push of `event` per target for an activity, through a send of its own.
    @discardableResult
    func queue(
        _ event: PushEvent, activityID: String?, targets: [PushTarget], kind: PushTokenKind = .liveActivityUpdate,
        activityType: String? = nil, minter: IDMinter, at now: Date = Fixture.t0
    ) throws -> Int64 {
        let send = try insertSend(appID: "app_1", activityID: activityID, content: Fixture.content(event), now: now)
        try enqueuePushes(
            sendID: send, appID: "app_1", activityID: activityID, activityType: activityType, event: event, tokenKind: kind,
            targets: targets, now: now, mintID: minter.mint)
        return send
    }
}
