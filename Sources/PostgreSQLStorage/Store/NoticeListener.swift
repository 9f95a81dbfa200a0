import Foundation
import IsletSync
import Storage

/// Listens, on a connection and a thread of its own, for the notices other nodes
/// send through the database (`LISTEN islet_<schema>`), and hands each to the
/// subscribers. When the connection is lost it opens another (waiting longer each
/// time, up to 5 s) and, once listening again, tells the subscribers to `resync`:
/// what was sent meanwhile is lost.
final class NoticeListener: Sendable {
    private struct State {
        var handlers: [@Sendable (StoreNotice) -> Void] = []
        var stopping = false
        var finished = false
    }

    private let url: PostgresURL
    private let channel: String
    private let applicationName: String
    private let state = ConditionLock(State())

    /// Starts listening on `channel`.
    init(url: PostgresURL, channel: String, applicationName: String) {
        self.url = url
        self.channel = channel
        self.applicationName = applicationName
        let thread = Thread { [self] in
            nameCurrentThread("islet-pg-listen")
            self.loop()
        }
        thread.start()
    }

    /// Adds a subscriber.
    func subscribe(_ handler: @escaping @Sendable (StoreNotice) -> Void) {
        state.withLock { $0.handlers.append(handler) }
    }

    /// Stops listening and waits for the thread to exit (within a second).
    func stop() {
        state.withLockBroadcasting { $0.stopping = true }
        state.wait(until: { $0.finished }) { _ in }
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func deliver(_ notice: StoreNotice) {
        for handler in state.withLock({ $0.handlers }) { handler(notice) }
    }

    private func loop() {
        var backoff = 0.1
        var listenedBefore = false
        while !stopping {
            do {
                let connection = try PostgresConnection(url: url, applicationName: applicationName)
                defer { connection.close() }
                try connection.listen(channel)
                if listenedBefore { deliver(.resync) }
                listenedBefore = true
                backoff = 0.1
                while !stopping {
                    for notification in try connection.waitForNotifications(timeout: .milliseconds(250)) {
                        if let notice = StoreNotice(payload: notification.payload) { deliver(notice) }
                    }
                }
            } catch {
                // Lost or refused: wait, then try again, until stopped.
                let until = Date().addingTimeInterval(backoff)
                state.wait(until: { $0.stopping || Date() >= until }, timeout: .milliseconds(Int(backoff * 1000))) { _ in }
                backoff = min(5, backoff * 2)
            }
        }
        state.withLockBroadcasting { $0.finished = true }
    }
}
