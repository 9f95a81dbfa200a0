internal import CPostgres
import Glibc
public import Storage

/// A notification a connection received on a channel it listens to (`NOTIFY`,
/// `pg_notify`).
public struct PostgresNotification: Sendable, Hashable {
    /// The channel it was sent on.
    public let channel: String
    /// What the sender attached, `""` when nothing.
    public let payload: String

    /// A notification of `payload` on `channel`.
    public init(channel: String, payload: String) {
        self.channel = channel
        self.payload = payload
    }
}

extension PostgresConnection {
    /// Starts listening to `channel` (`LISTEN`): notifications sent on it from now
    /// on are kept for ``waitForNotifications(timeout:)``. The channel's name is
    /// lowercase letters, digits and `_`, at most 63 of them.
    public func listen(_ channel: String) throws(StoreError) {
        let name = try Self.checkedChannel(channel)
        try execute("LISTEN \"\(name)\"")
    }

    /// Sends `payload` on `channel` (`pg_notify`): delivered to every listener when
    /// the current transaction commits, or at once outside one.
    public func notify(_ channel: String, payload: String) throws(StoreError) {
        let name = try Self.checkedChannel(channel)
        _ = try query("SELECT pg_notify(\(name), \(payload))")
    }

    /// The notifications received on the channels this connection listens to,
    /// waiting up to `timeout` for the first when none has come yet; `[]` when none
    /// comes in time. Throws `StoreError(.unavailable, …)` when the connection is
    /// lost while waiting. Call it between statements, not inside a transaction's
    /// work: it reads the connection's socket.
    public func waitForNotifications(timeout: Duration) throws(StoreError) -> [PostgresNotification] {
        let connection = try open()
        var received = drainNotifications(connection)
        let clock = ContinuousClock()
        let deadline = clock.now + timeout
        while received.isEmpty {
            let socket = PQsocket(connection)
            guard socket >= 0 else { throw failure(nil) }
            let left = clock.now.duration(to: deadline)
            guard left > .zero else { break }
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let (seconds, attoseconds) = left.components
            let milliseconds = Int32(clamping: seconds * 1_000 + attoseconds / 1_000_000_000_000_000 + 1)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready < 0 {
                if errno == EINTR { continue }
                throw StoreError(.unavailable, PostgresFailure.unavailablePrefix + "poll failed: \(String(cString: strerror(errno)))")
            }
            if ready == 0 { continue }
            guard PQconsumeInput(connection) == 1, PQstatus(connection) == CONNECTION_OK else { throw failure(nil) }
            received = drainNotifications(connection)
        }
        return received
    }

    /// Every notification libpq has read so far.
    private func drainNotifications(_ connection: OpaquePointer) -> [PostgresNotification] {
        var received: [PostgresNotification] = []
        while let notice = PQnotifies(connection) {
            defer { PQfreemem(notice) }
            received.append(
                PostgresNotification(
                    channel: String(cString: notice.pointee.relname),
                    payload: notice.pointee.extra.map { String(cString: $0) } ?? ""))
        }
        return received
    }

    /// `channel` when it is a name Islet listens to (lowercase letters, digits,
    /// `_`; 1 to 63 of them), so that it can stand quoted in `LISTEN` as it is.
    private static func checkedChannel(_ channel: String) throws(StoreError) -> String {
        let allowed = !channel.isEmpty && channel.utf8.count <= 63
            && channel.utf8.allSatisfy { byte in
                (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
                    || byte == UInt8(ascii: "_")
            }
        guard allowed else {
            throw StoreError(.corrupt, "the channel name \(channel) is not lowercase letters, digits and _ (at most 63)")
        }
        return channel
    }
}
