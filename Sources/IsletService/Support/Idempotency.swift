public import Foundation
public import IsletCore
import Storage

/// An `Idempotency-Key` and the fingerprint of the command it came with (the
/// caller's choice: the HTTP layer hashes method, path and body).
public struct IdempotencyKey: Sendable, Hashable {
    /// The key, as the client sent it (checked by the service).
    public let key: String
    /// What identifies the command's content.
    public let fingerprint: Data

    /// Creates a key.
    public init(key: String, fingerprint: Data) {
        self.key = key
        self.fingerprint = fingerprint
    }

    /// The name clients know the key by.
    public static let field = "Idempotency-Key"
    /// How long a key's first answer is replayed (and then forgotten): a day.
    public static let replayWindow: TimeInterval = 24 * 3600

    /// 1 to 255 visible ASCII characters.
    static func isWellFormed(_ key: String) -> Bool {
        (1...255).contains(key.utf8.count) && key.utf8.allSatisfy { (0x21...0x7E).contains($0) }
    }
}

/// A result that can be stored with its idempotency key and replayed: its JSON form
/// is what the first answer said.
public protocol ReplayableResult: Sendable {
    /// The result as stored (and as the API shows it).
    var json: JSONValue { get }
    /// Whether the command changed something (pushes queued); a replay of a result
    /// that did nothing is still a replay.
    var accepted: Bool { get }
    /// Reads a stored result back.
    init(json: JSONValue) throws
    /// Pushes the command queued at priority 5 instead of 10, and starts it held
    /// back: what the limits did, for `/metrics`.
    var limited: (downgraded: Int, deferred: Int) { get }
}

extension ReplayableResult {
    public var limited: (downgraded: Int, deferred: Int) { (0, 0) }
}

extension ServiceEnvironment {
    /// Counts what the limits did to the pushes of a command of `appID` that
    /// committed (a replay queued nothing, and is not counted).
    func countLimits(appID: String, _ result: some ReplayableResult) {
        let (downgraded, deferred) = result.limited
        limitMetrics.downgraded(appID: appID, count: downgraded)
        limitMetrics.deferred(appID: appID, count: deferred)
    }
}

/// A service's answer to a command that may carry an idempotency key.
public struct Replayable<Result: ReplayableResult>: Sendable {
    /// The result, first given or replayed.
    public let result: Result
    /// Whether this is the stored answer of an earlier command with the same key.
    public let replayed: Bool
}

extension ServiceEnvironment {
    /// Runs `work` in one write transaction, behind `idempotency` when given: the
    /// first result is stored in the same transaction as what it queued, so a
    /// repeated command replays it (nothing queued again) or, with other content,
    /// is refused. A thrown error rolls everything back and is not remembered. Two
    /// commands with one key at once: the second one's save collides, and it runs
    /// again to find (and replay) the first one's answer.
    func idempotentWrite<R: ReplayableResult>(
        appID: String, idempotency: IdempotencyKey?, now: Date,
        _ work: @escaping @Sendable (any StoreSession) throws -> R
    ) async throws(ServiceError) -> Replayable<R> {
        if let idempotency, !IdempotencyKey.isWellFormed(idempotency.key) {
            throw ServiceError.invalid(
                "The Idempotency-Key header must be 1 to 255 visible ASCII characters.", field: IdempotencyKey.field,
                "must be 1 to 255 visible ASCII characters")
        }
        let since = now.addingTimeInterval(-idempotencyWindow)
        var attempt = 0
        while true {
            attempt += 1
            do {
                let answer = try await store.write { session -> Replayable<R> in
                    if let idempotency,
                        let earlier = try session.idempotentAnswer(appID: appID, key: idempotency.key, since: since)
                    {
                        guard earlier.requestHash == idempotency.fingerprint else {
                            throw ServiceError.invalid(
                                "The Idempotency-Key \(idempotency.key) was used with a different request; use a new key for a new request.",
                                field: IdempotencyKey.field, "was used with a different request")
                        }
                        guard let json = try? JSONValue(parsing: earlier.body) else {
                            throw StoreError(.corrupt, "the stored answer of an idempotency key does not parse")
                        }
                        return Replayable(result: try R(json: json), replayed: true)
                    }
                    let result = try work(session)
                    if let idempotency {
                        try session.saveIdempotentAnswer(
                            appID: appID, key: idempotency.key,
                            IdempotentAnswer(
                                requestHash: idempotency.fingerprint, status: result.accepted ? 202 : 200,
                                body: Data(result.json.jsonText.utf8), createdAt: now),
                            replacingBefore: since)
                    }
                    return Replayable(result: result, replayed: false)
                }
                if !answer.replayed && answer.result.accepted {
                    countLimits(appID: appID, answer.result)
                    pushesQueued()
                }
                return answer
            } catch let error as StoreError where error.code == .conflict && idempotency != nil && attempt == 1 {
                continue
            } catch {
                throw domainError(error)
            }
        }
    }
}
