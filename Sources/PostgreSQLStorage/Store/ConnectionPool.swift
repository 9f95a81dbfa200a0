import Foundation
import IsletSync
import Storage

/// Up to `size` connections to one PostgreSQL database, each used by one thread at
/// a time: a caller takes one (waiting while every one is busy), runs its work on
/// it, and gives it back. A connection that broke is closed instead of given back,
/// and the next caller opens a fresh one.
///
/// `@unchecked Sendable`: a connection is either in `idle`, touched only under the
/// lock, or held by exactly one caller between `take` and `giveBack`; `url` and
/// `size` never change.
final class ConnectionPool: @unchecked Sendable {
    /// A connection moving between the idle list and one caller.
    ///
    /// `@unchecked Sendable`: it crosses threads only through the pool's lock, and is
    /// then used by the one thread that took it.
    private struct Held: @unchecked Sendable {
        let connection: PostgresConnection
    }

    private struct State {
        var idle: [Held] = []
        var open = 0
        var closed = false
    }

    let url: PostgresURL
    let size: Int
    private let applicationName: String
    private let state = ConditionLock(State())
    /// How long a caller waits for a connection before it is told the database is busy.
    private let waitLimit: Duration = .seconds(30)

    init(url: PostgresURL, size: Int, applicationName: String) {
        self.url = url
        self.size = max(1, size)
        self.applicationName = applicationName
    }

    /// Runs `body` with a connection of the pool.
    func withConnection<T>(_ body: (PostgresConnection) throws -> T) throws -> T {
        let connection = try take()
        defer { giveBack(connection) }
        return try body(connection)
    }

    /// Closes every idle connection; later calls fail with `unavailable`. A
    /// connection in use is closed when it comes back.
    func close() {
        let idle = state.withLockBroadcasting { state -> [Held] in
            state.closed = true
            state.open -= state.idle.count
            defer { state.idle = [] }
            return state.idle
        }
        for held in idle { held.connection.close() }
    }

    private enum Taken {
        case idle(Held)
        case open
        case closed
        case timedOut
    }

    private func take() throws -> PostgresConnection {
        // The condition's wait ends at its deadline (one instant, however often it wakes).
        let taken = state.wait(
            until: { $0.closed || !$0.idle.isEmpty || $0.open < size },
            timeout: waitLimit
        ) { state -> Taken in
            if state.closed { return .closed }
            if let held = state.idle.popLast() { return .idle(held) }
            if state.open < size {
                state.open += 1
                return .open
            }
            return .timedOut
        }
        switch taken {
        case .idle(let held):
            return held.connection
        case .closed:
            throw StoreError(.unavailable, "database unavailable: the store is closed")
        case .timedOut:
            throw StoreError(.busy, "no database connection came free within \(waitLimit) (pool of \(size))")
        case .open:
            do {
                return try PostgresConnection(url: url, applicationName: applicationName)
            } catch {
                state.withLockBroadcasting { $0.open -= 1 }
                throw error
            }
        }
    }

    private func giveBack(_ connection: PostgresConnection) {
        let keep = !connection.isBroken && !connection.inTransaction
        let closeIt = state.withLockBroadcasting { state -> Bool in
            if state.closed || !keep {
                state.open -= 1
                return true
            }
            state.idle.append(Held(connection: connection))
            return false
        }
        if closeIt { connection.close() }
    }
}
