import IsletSync
internal import CLinux
import Foundation
import Glibc
import IsletThreads

/// Tells streamed responses whose connection is suspended that their client hung up.
/// libmicrohttpd does not watch a suspended connection ("While a connection is
/// suspended, MHD will not detect disconnects by the client", microhttpd.h), and a
/// quiet stream stays suspended until its next write: without this, a client gone
/// from a quiet stream would be noticed only when its producer next writes.
///
/// One thread, started with the first watch, waits in `epoll_wait` on the sockets of
/// suspended streams, for hang-ups only (`EPOLLRDHUP`, and the `EPOLLHUP` and
/// `EPOLLERR` epoll always reports; bytes a client sends wake nothing). A socket is in
/// the set exactly while its connection is suspended: the content reader adds it just
/// after suspending the connection and whoever resumes it removes it first, both
/// under the stream's lock, so libmicrohttpd cannot have closed it meanwhile. Entries
/// are tagged with the stream's id, never reused, so an event read just before its
/// socket left the set names no other stream.
///
/// `@unchecked Sendable`: the descriptors are immutable after `init`; the table and
/// the thread's state are behind `state`.
final class HangupWatcher: @unchecked Sendable {
    private let epollFD: Int32
    private let wakeFD: Int32
    private let state = Lock(State())
    /// Whether the thread has ended, for `stop` to wait on.
    private let finished = ConditionLock(false)

    private struct State {
        var streams: [UInt64: HTTPBodyWriter] = [:]
        var started = false
        var stopped = false
    }

    /// The tag of the wake-up eventfd; stream ids start at 1.
    private static let wakeTag: UInt64 = 0

    init() {
        epollFD = islet_epoll_create()
        wakeFD = islet_eventfd_create()
        precondition(epollFD >= 0 && wakeFD >= 0, "cannot create epoll or eventfd: \(errno)")
        islet_epoll_control_tagged(epollFD, 0, wakeFD, ISLET_EPOLLIN, Self.wakeTag)
    }

    deinit {
        close(epollFD)
        close(wakeFD)
    }

    /// Watches `fd`, the socket of `stream`'s suspended connection. Does nothing once
    /// stopped (the server resumes every stream before it stops the watcher).
    func watch(_ fd: Int32, _ stream: HTTPBodyWriter, id: UInt64) {
        let start = state.withLock { s -> Bool? in
            guard !s.stopped else { return nil }
            s.streams[id] = stream
            defer { s.started = true }
            return !s.started
        }
        guard let start else { return }
        if start {
            let thread = Thread { [self] in
                nameCurrentThread("islet-http-hup")
                run()
            }
            thread.stackSize = 256 << 10
            thread.start()
        }
        islet_epoll_control_tagged(epollFD, 0, fd, ISLET_EPOLLRDHUP, id)
    }

    /// Stops watching `fd` (before its connection is resumed).
    func unwatch(_ fd: Int32, id: UInt64) {
        islet_epoll_control_tagged(epollFD, 2, fd, 0, id)
        state.withLock { _ = $0.streams.removeValue(forKey: id) }
    }

    /// Ends the thread, if it runs, and waits for it.
    func stop() {
        let running = state.withLock { s -> Bool in
            guard !s.stopped else { return false }
            s.stopped = true
            return s.started
        }
        guard running else { return }
        var one: UInt64 = 1
        _ = write(wakeFD, &one, 8)
        finished.wait(until: { $0 }) { _ in }
    }

    private func run() {
        var tags = [UInt64](repeating: 0, count: 256)
        var events = [UInt32](repeating: 0, count: 256)
        while true {
            let count = islet_epoll_wait_tagged(epollFD, &tags, &events, Int32(tags.count), -1)
            if count < 0 && errno != EINTR { break }
            var gone: [HTTPBodyWriter] = []
            var stopping = false
            state.withLock { s in
                for index in 0..<max(0, Int(count)) {
                    if tags[index] == Self.wakeTag {
                        stopping = s.stopped
                    } else if let stream = s.streams[tags[index]] {
                        gone.append(stream)
                    }
                }
            }
            // Outside the lock: a stream takes its own lock, then this one to unwatch.
            for stream in gone { stream.clientWentAway() }
            if stopping { break }
        }
        state.withLock { $0.streams = [:] }
        finished.withLockBroadcasting { $0 = true }
    }
}
