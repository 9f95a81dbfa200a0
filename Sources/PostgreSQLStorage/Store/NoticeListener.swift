import Foundation
import IsletBackground
import IsletSync
import IsletThreads
import Storage

/// Listens, on a connection and a thread of its own, for the notices other nodes
/// send through the database (`LISTEN islet_<schema>`), and hands each to the
/// subscribers. When the connection is lost it opens another (waiting longer each
/// time, up to 5 s, on its sleeper's clock) and, once listening again, tells the
/// subscribers to `resync`: what was sent meanwhile is lost.
///
/// It keeps a thread (libpq's calls block) and the store's synchronous close stops
/// it; a stop rings its doorbell, which ends a wait between two tries at once.
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
    private let sleeper: any Sleeper
    private let stopBell = Doorbell()

    /// The first wait before opening a connection again.
    static let firstBackoff: TimeInterval = 0.1

    /// The wait after `backoff`: twice as long, up to 5 s.
    static func backoff(after backoff: TimeInterval) -> TimeInterval {
        min(5, backoff * 2)
    }

    /// Starts listening on `channel`.
    init(url: PostgresURL, channel: String, applicationName: String, sleeper: any Sleeper = SystemSleeper()) {
        self.url = url
        self.channel = channel
        self.applicationName = applicationName
        self.sleeper = sleeper
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
        stopBell.ring()
        state.wait(until: { $0.finished }) { _ in }
    }

    private var stopping: Bool { state.withLock { $0.stopping } }

    private func deliver(_ notice: StoreNotice) {
        for handler in state.withLock({ $0.handlers }) { handler(notice) }
    }

    private func loop() {
        var backoff = Self.firstBackoff
        var listenedBefore = false
        while !stopping {
            do {
                let connection = try PostgresConnection(url: url, applicationName: applicationName)
                defer { connection.close() }
                try connection.listen(channel)
                if listenedBefore { deliver(.resync) }
                listenedBefore = true
                backoff = Self.firstBackoff
                while !stopping {
                    for notification in try connection.waitForNotifications(timeout: .milliseconds(250)) {
                        if let notice = StoreNotice(payload: notification.payload) { deliver(notice) }
                    }
                }
            } catch {
                // Lost or refused: wait, then try again, until stopped.
                sleeper.block(for: backoff, doorbell: stopBell)
                backoff = Self.backoff(after: backoff)
            }
        }
        state.withLockBroadcasting { $0.finished = true }
    }
}
