public import Foundation
public import IsletCore
public import IsletLog
public import Storage

/// What every service shares, injected once: the store (through its protocols
/// only), the clock, the lifecycle rules, the logger, and the hooks to the rest of
/// the server (waking the delivery worker, trusting new credentials).
///
/// A transaction is handed the whole session (`StoreSession`), since one may span
/// concerns; each service names the part it touches (its `Stores`, a composition of
/// Storage's protocols) as the type of its closures' session, and each function it
/// hands the session to names the narrower part that function uses, so that a
/// signature tells what of the store it reads or changes.
public struct ServiceEnvironment: Sendable {
    /// The database.
    public let store: any Store
    /// Where `now` comes from.
    public let clock: any WallClock
    /// The activity lifecycle windows.
    public let lifecycle: ActivityLifecycle
    /// The logger.
    public let logger: Logger
    /// How long an `Idempotency-Key` answer is replayed.
    public let idempotencyWindow: TimeInterval
    /// Called after pushes were queued.
    public let pushesQueued: @Sendable () -> Void
    /// Called after a write added or moved timed work (a scheduled send, a timeline,
    /// an activity's end time): the timekeeper, asleep until its next due item,
    /// looks again. (Other nodes hear it from the store: `StoreNotice.timersChanged`.)
    public let timersChanged: @Sendable () -> Void
    /// Called with an app that was given credentials (APNs or FCM; an embedded
    /// simulator may trust them).
    public let credentialsChanged: @Sendable (AppRecord) -> Void
    /// This node's id among the nodes sharing the database.
    public let nodeID: String
    /// How long before an activity's update window closes a timeline with `renew`
    /// starts its successor.
    public let renewLead: TimeInterval
    /// The server's budgets for every app (an app may override each figure).
    public let budget: SendBudget
    /// The server's rate limits for every app (an app may override each figure).
    public let rateLimits: RateLimitDefaults
    /// What the limits did, for `/metrics`.
    public let limitMetrics: LimitMetrics
    /// The receipts recorded, for `/metrics`.
    public let receiptMetrics = ReceiptMetrics()
    /// Days the server keeps history (`--history-retention-days`); an app may keep
    /// its own for less (see ``HistoryRetention``).
    public let historyRetentionDays: Double

    /// Creates an environment.
    public init(
        store: any Store, clock: any WallClock, lifecycle: ActivityLifecycle, logger: Logger,
        idempotencyWindow: TimeInterval, pushesQueued: @escaping @Sendable () -> Void = {},
        timersChanged: @escaping @Sendable () -> Void = {},
        credentialsChanged: @escaping @Sendable (AppRecord) -> Void = { _ in }, nodeID: String = "local",
        renewLead: TimeInterval = 15 * 60, budget: SendBudget = .standard, rateLimits: RateLimitDefaults = .none,
        limitMetrics: LimitMetrics = LimitMetrics(), historyRetentionDays: Double = HistoryRetention.standardDays
    ) {
        self.historyRetentionDays = historyRetentionDays
        self.budget = budget
        self.rateLimits = rateLimits
        self.limitMetrics = limitMetrics
        self.nodeID = nodeID
        self.renewLead = renewLead
        self.store = store
        self.clock = clock
        self.lifecycle = lifecycle
        self.logger = logger
        self.idempotencyWindow = idempotencyWindow
        self.pushesQueued = pushesQueued
        self.timersChanged = timersChanged
        self.credentialsChanged = credentialsChanged
    }

    /// Runs `body` as a read; a store failure becomes a `ServiceError`.
    func read<T: Sendable>(_ body: @escaping @Sendable (any StoreSession) throws -> T) async throws(ServiceError) -> T {
        do {
            return try await store.read(body)
        } catch {
            throw domainError(error)
        }
    }

    /// Runs `body` in one transaction; a store failure becomes a `ServiceError`.
    /// `durable: false` commits without waiting for the disk (see `Store.write`).
    func write<T: Sendable>(
        durable: Bool = true, _ body: @escaping @Sendable (any StoreSession) throws -> T
    ) async throws(ServiceError) -> T {
        do {
            return try await store.write(durable: durable, body)
        } catch {
            throw domainError(error)
        }
    }

    /// A service error as it is; a store error in domain terms (logged when it is
    /// Islet's fault); anything else a logged failure.
    func domainError(_ error: any Error) -> ServiceError { Self.domainError(error, logger: logger) }

    static func domainError(_ error: any Error, logger: Logger? = nil) -> ServiceError {
        if let error = error as? ServiceError { return error }
        let domain = (error as? StoreError).map(ServiceError.init) ?? ServiceError(.failed, "The server failed to answer; the failure is logged.")
        if domain.code != .conflict {
            logger?.error("store operation failed", ("error", .string("\(error)")))
        }
        return domain
    }
}
