import Foundation
import Glibc
public import IsletCore
import IsletSync

/// How many sign-ins a client address may try in a minute: every dashboard sign-in
/// counts, and so does every admin bearer token refused. Past the limit, attempts
/// from that address are refused (`limited`, with the seconds until the oldest
/// attempt leaves the minute) before any token is looked at, so a token cannot be
/// guessed faster than the limit allows.
///
/// The window slides: an address has `attemptsPerMinute` attempts in any 60
/// seconds. An IPv6 address counts as its /64, which one client usually holds
/// whole. At most `maxAddresses` addresses are remembered; past that, addresses
/// whose attempts have all left the window are forgotten first, then the oldest.
public final class SignInLimiter: Sendable {
    /// The attempts an address may make in any minute.
    public let attemptsPerMinute: Int
    private let clock: any WallClock
    private let maxAddresses: Int
    private let state = Lock([String: [Date]]())

    /// A limiter of `attemptsPerMinute` attempts per address (0: no limit).
    public init(attemptsPerMinute: Int, clock: any WallClock, maxAddresses: Int = 10_000) {
        self.attemptsPerMinute = attemptsPerMinute
        self.clock = clock
        self.maxAddresses = maxAddresses
    }

    /// Passes when `address` is under the limit, without counting an attempt.
    public func check(_ address: String) throws(ServiceError) {
        guard attemptsPerMinute > 0 else { return }
        let address = Self.key(address)
        let now = clock.now()
        let wait = state.withLock { attempts -> TimeInterval? in
            Self.wait(Self.recent(attempts[address] ?? [], now: now), limit: attemptsPerMinute, now: now)
        }
        if let wait { throw Self.refusal(wait) }
    }

    /// Counts an attempt from `address`: refused (`limited`) when the address has
    /// already made its attempts this minute (the refused one is not counted).
    public func attempt(_ address: String) throws(ServiceError) {
        guard attemptsPerMinute > 0 else { return }
        let address = Self.key(address)
        let now = clock.now()
        let wait = state.withLock { attempts -> TimeInterval? in
            let recent = Self.recent(attempts[address] ?? [], now: now)
            if let wait = Self.wait(recent, limit: attemptsPerMinute, now: now) {
                attempts[address] = recent
                return wait
            }
            attempts[address] = recent + [now]
            if attempts.count > maxAddresses { Self.forget(&attempts, now: now, keeping: maxAddresses) }
            return nil
        }
        if let wait { throw Self.refusal(wait) }
    }

    /// Counts a failed attempt from `address` (a refused admin token), whether or
    /// not the address is over the limit.
    public func failed(_ address: String) {
        guard attemptsPerMinute > 0 else { return }
        let address = Self.key(address)
        let now = clock.now()
        state.withLock { attempts in
            attempts[address] = Array(Self.recent(attempts[address] ?? [], now: now).suffix(attemptsPerMinute - 1)) + [now]
            if attempts.count > maxAddresses { Self.forget(&attempts, now: now, keeping: maxAddresses) }
        }
    }

    /// Addresses remembered now (for tests and metrics).
    public var addressCount: Int { state.withLock { $0.count } }

    // MARK: - Rules

    static let window: TimeInterval = 60

    /// What an address is counted under: an IPv6 address as its /64 prefix, any
    /// other as it is.
    static func key(_ address: String) -> String {
        var bytes = in6_addr()
        guard address.contains(":"), inet_pton(AF_INET6, address.trimmingCharacters(in: ["[", "]"]), &bytes) == 1 else {
            return address
        }
        let prefix = withUnsafeBytes(of: &bytes) { Array($0.prefix(8)) }
        return prefix.map { String(format: "%02x", $0) }.joined() + "::/64"
    }

    /// The attempts of `times` still inside the window at `now`.
    static func recent(_ times: [Date], now: Date) -> [Date] {
        times.filter { now.timeIntervalSince($0) < window }
    }

    /// How long until an address with `recent` attempts may try again, or nil when
    /// it may now.
    static func wait(_ recent: [Date], limit: Int, now: Date) -> TimeInterval? {
        guard recent.count >= limit, let oldest = recent.min() else { return nil }
        return max(0, window - now.timeIntervalSince(oldest))
    }

    private static func forget(_ attempts: inout [String: [Date]], now: Date, keeping limit: Int) {
        attempts = attempts.filter { !recent($0.value, now: now).isEmpty }
        guard attempts.count > limit else { return }
        let newest = attempts.sorted { ($0.value.max() ?? .distantPast) > ($1.value.max() ?? .distantPast) }
        attempts = Dictionary(uniqueKeysWithValues: newest.prefix(limit).map { ($0.key, $0.value) })
    }

    private static func refusal(_ wait: TimeInterval) -> ServiceError {
        let seconds = max(1, Int(wait.rounded(.up)))
        return ServiceError(
            .limited, "Too many sign-in attempts from this address; try again in \(seconds) s.", retryAfter: seconds)
    }
}
