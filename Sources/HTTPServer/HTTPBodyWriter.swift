import IsletSync
internal import CMicroHTTPD
public import Foundation
import Synchronization

/// Where the producer of a streamed response (`HTTPResponse.stream`) writes its body.
/// Bytes written are queued and sent as soon as the connection can take them; the
/// response ends when the producer returns. A writer is closed (writes answer false)
/// once the client has gone, the server stops, the response has ended, or the client
/// fell more than `HTTPServerConfiguration.streamBufferBytes` behind; its producer
/// should then return.
///
/// The connection is suspended whenever nothing is queued, so a quiet stream costs
/// libmicrohttpd's threads nothing; a write resumes it. Suspended, libmicrohttpd does
/// not see the client hang up (microhttpd.h, `MHD_suspend_connection`), so the
/// server's `HangupWatcher` watches those sockets instead.
public final class HTTPBodyWriter: Sendable {
    /// Never reused within a process: it tags the socket in the hang-up watcher's set.
    let id: UInt64
    private let streams: StreamRegistry
    private let state: Lock<State>

    private struct State {
        /// The connection, nil once libmicrohttpd is done with the response.
        var connection: ConnectionHandle?
        /// Its socket, which libmicrohttpd owns (-1 when unknown).
        var fd: Int32 = -1
        /// Bytes queued: `pending[sent...]` are still to be sent.
        var pending: [UInt8] = []
        var sent = 0
        /// Whether writes are taken.
        var accepting = true
        /// End the body after what is queued (the producer returned, or the server stops).
        var ending = false
        /// Close the connection without the last chunk, dropping what is queued (the
        /// client has gone, or fell too far behind).
        var aborted = false
        /// Whether the connection is suspended now (by the content reader, which
        /// found nothing queued); whoever clears this resumes it, exactly once.
        var suspended = false
        /// Tasks waiting in `closed(within:)`.
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        var nextWaiter: UInt64 = 0

        var queued: Int { pending.count - sent }
    }

    init(id: UInt64, streams: StreamRegistry) {
        self.id = id
        self.streams = streams
        self.state = Lock(State())
    }

    /// Queues `data` for the client. Answers false, taking nothing, once the writer is
    /// closed; a write that would put more than the buffer bound in the queue closes
    /// it (the client is too slow) and answers false.
    @discardableResult
    public func write(_ data: Data) -> Bool {
        let (taken, resume, waiters) = state.withLock { s -> (Bool, ConnectionHandle?, [CheckedContinuation<Void, Never>]) in
            guard s.accepting else { return (false, nil, []) }
            guard !data.isEmpty else { return (true, nil, []) }
            if s.queued + data.count > streams.bufferLimit {
                let (resume, waiters) = close(&s, abort: true)
                return (false, resume, waiters)
            }
            if s.sent > 0 && s.sent >= s.pending.count / 2 {
                s.pending.removeFirst(s.sent)
                s.sent = 0
            }
            s.pending.append(contentsOf: data)
            return (true, takeResume(&s), [])
        }
        finishClosing(resume, waiters)
        return taken
    }

    /// Whether the writer is closed: the client has gone, the server stops, the
    /// response has ended, or the client fell too far behind.
    public var isClosed: Bool { state.withLock { !$0.accepting } }

    /// Bytes written and not yet taken by the connection: a producer with much to
    /// send waits while this is high, instead of running into the bound.
    public var queuedBytes: Int { state.withLock { $0.queued } }

    /// Ends the response cut short: what is queued is dropped and the body ends
    /// without its last chunk, so that the client sees it incomplete (for a
    /// producer that failed part way, whose body must not pass for whole). Nothing
    /// once the writer is closed.
    public func abort() {
        let (resume, waiters) = state.withLock { s -> (ConnectionHandle?, [CheckedContinuation<Void, Never>]) in
            guard s.accepting else { return (nil, []) }
            return close(&s, abort: true)
        }
        finishClosing(resume, waiters)
    }

    /// Waits until the writer is closed or `timeout` has passed, and answers whether it
    /// is closed: for a producer that sleeps between events and must still return
    /// soon after its client goes. Returns early, answering `isClosed`, when the
    /// calling task is cancelled.
    public func closed(within timeout: Duration) async -> Bool {
        if isClosed { return true }
        await withTaskGroup(of: Void.self) { group in
            group.addTask { await self.waitUntilClosed() }
            let clock = streams.clock
            group.addTask { try? await clock.sleep(for: timeout) }
            await group.next()
            group.cancelAll()
        }
        return isClosed
    }

    private func waitUntilClosed() async {
        let id = state.withLock { s -> UInt64 in
            s.nextWaiter += 1
            return s.nextWaiter
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let waiting = state.withLock { s -> Bool in
                    guard s.accepting else { return false }
                    s.waiters[id] = continuation
                    return true
                }
                if !waiting {
                    continuation.resume()
                } else if Task.isCancelled {
                    // Cancelled before the waiter was recorded: the handler found nothing.
                    stopWaiting(id)
                }
            }
        } onCancel: {
            stopWaiting(id)
        }
    }

    private func stopWaiting(_ id: UInt64) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
    }

    // MARK: The server's side

    /// Records the connection the response is queued on (on the event-loop thread,
    /// before libmicrohttpd can call `read`).
    func attach(connection: OpaquePointer) {
        let fd = islet_mhd_connection_fd(connection)
        state.withLock { s in
            s.connection = ConnectionHandle(pointer: connection)
            s.fd = fd
        }
    }

    /// libmicrohttpd's content reader: copies up to `capacity` queued bytes to
    /// `buffer`. With nothing queued it suspends the connection and answers 0 (a
    /// write or the end resumes it), the pattern microhttpd.h gives for "no data
    /// yet"; suspending is allowed from a content reader, and in this daemon's mode
    /// answering 0 without suspending would spin its thread.
    func read(into buffer: UnsafeMutableRawPointer, capacity: Int) -> Int {
        state.withLock { s -> Int in
            if s.aborted { return ISLET_MHD_READER_END_WITH_ERROR }
            if s.queued > 0 {
                let count = min(s.queued, capacity)
                let start = s.sent
                s.pending.withUnsafeBytes { buffer.copyMemory(from: $0.baseAddress! + start, byteCount: count) }
                s.sent += count
                if s.sent == s.pending.count {
                    // Keep a small buffer's storage for the next event; give back a large one.
                    s.pending.removeAll(keepingCapacity: s.pending.count <= 64 * 1024)
                    s.sent = 0
                }
                return count
            }
            if s.ending { return ISLET_MHD_READER_END_OF_STREAM }
            guard let connection = s.connection else { return ISLET_MHD_READER_END_WITH_ERROR }
            // Under the lock, so that a write cannot resume the connection before it
            // is suspended.
            MHD_suspend_connection(connection.pointer)
            s.suspended = true
            if s.fd >= 0 { streams.watcher.watch(s.fd, self, id: id) }
            return 0
        }
    }

    /// The producer has returned, or the server stops: no more writes are taken, and
    /// the body ends after what is queued.
    func finish() {
        let (resume, waiters) = state.withLock { close(&$0, abort: false) }
        finishClosing(resume, waiters)
    }

    /// The hang-up watcher saw the client go while the connection was suspended.
    func clientWentAway() {
        let (resume, waiters) = state.withLock { s -> (ConnectionHandle?, [CheckedContinuation<Void, Never>]) in
            guard s.connection != nil else { return (nil, []) }
            return close(&s, abort: true)
        }
        finishClosing(resume, waiters)
    }

    /// libmicrohttpd is done with the response (it ended, the client went, or the
    /// daemon stopped): the connection must not be touched again.
    func responseReleased() {
        let waiters = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            // Never suspended here: libmicrohttpd releases only connections it runs,
            // and the server resumes every stream before stopping the daemon.
            if s.suspended {
                s.suspended = false
                if s.fd >= 0 { streams.watcher.unwatch(s.fd, id: id) }
            }
            s.connection = nil
            s.fd = -1
            return close(&s, abort: true).waiters
        }
        for waiter in waiters { waiter.resume() }
        streams.remove(self)
    }

    /// Closes the writer (under the lock): no more writes, waiters released, and the
    /// connection, if suspended, handed back for the caller to resume.
    private func close(_ s: inout State, abort: Bool) -> (resume: ConnectionHandle?, waiters: [CheckedContinuation<Void, Never>]) {
        s.accepting = false
        if abort {
            s.aborted = true
            s.pending = []
            s.sent = 0
        } else {
            s.ending = true
        }
        let waiters = Array(s.waiters.values)
        s.waiters = [:]
        return (takeResume(&s), waiters)
    }

    /// Takes the connection out of suspension (under the lock), for the caller to
    /// resume once the lock is released: the one resume for the one suspend.
    private func takeResume(_ s: inout State) -> ConnectionHandle? {
        guard s.suspended, let connection = s.connection else { return nil }
        s.suspended = false
        // Out of the watched set while the connection is still suspended, so while
        // libmicrohttpd cannot have closed its socket.
        if s.fd >= 0 { streams.watcher.unwatch(s.fd, id: id) }
        streams.resuming.enter()
        return connection
    }

    /// Resumes the connection taken by `takeResume`, outside the lock (a system call
    /// that takes libmicrohttpd's own lock), and wakes the waiters.
    private func finishClosing(_ resume: ConnectionHandle?, _ waiters: [CheckedContinuation<Void, Never>]) {
        if let resume {
            MHD_resume_connection(resume.pointer)
            streams.resuming.leave()
        }
        for waiter in waiters { waiter.resume() }
    }
}
