import Foundation

/// One upload waiting in the outbox: written to disk before it is tried, tried in
/// order (one at a time, so that an activity's token goes before its receipt and its
/// end), and dropped only on the server's final answer.
struct OutboxEntry: Codable, Sendable, Hashable {
    var id: String
    var upload: IsletUpload
    var method: String
    /// The path under `/v1/apps/{app}/devices/{device}` (empty for the registration).
    var path: String
    var body: Data?
    /// What makes two entries the same upload: a newer one replaces an older one
    /// still waiting (a token superseded before it went).
    var key: String
    /// The token (or registration body) it sends: once accepted, the same value is
    /// not sent again.
    var value: String?
    var idempotencyKey: String?
    var attempts: Int = 0
    var notBefore: Date
}

/// An activity IsletKit follows, by ActivityKit's id: kept across launches, so that
/// one that ended while the app was not running is reported at the next.
struct KnownActivity: Codable, Sendable, Hashable {
    var activityID: String
    var activityType: String
    var onChannel: Bool
}

/// Everything IsletKit keeps between launches, in one file written whole.
struct KitState: Codable, Sendable {
    var deviceID: String
    /// The registration body the server last accepted.
    var registered: String?
    var apnsToken: String?
    var userID: String?
    var tags: [String]
    /// Tokens the server holds, by key (`pts:<type>`, `act:<activity id>`).
    var accepted: [String: String] = [:]
    /// Keys of one-off uploads (ends, taps, receipts) accepted lately, newest last.
    var recent: [String] = []
    var known: [String: KnownActivity] = [:]
    var outbox: [OutboxEntry] = []
    /// Final refusals, by subject (`type:<type>`, or an activity id).
    var failures: [String: String] = [:]
    var lastError: String?
    /// After `logout()`, push-to-start tokens wait for the next user.
    var pushToStartPaused = false
    var secretRefused = false

    static let recentLimit = 500
}

/// The state file: read once, written whole (atomically) after each change.
struct StateFile: Sendable {
    let url: URL

    func read() -> KitState? {
        guard let data = FileManager.default.contents(atPath: url.path) else { return nil }
        return try? JSONDecoder().decode(KitState.self, from: data)
    }

    func write(_ state: KitState) {
        do {
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            try encoder.encode(state).write(to: url, options: .atomic)
        } catch {
            // The next change writes it again; the state in memory is whole.
        }
    }
}
