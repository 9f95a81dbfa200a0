internal import CCurl
import Foundation
import IsletSync
import IsletThreads

/// What other threads share with the loop thread: new transfers, the stop request,
/// and those waiting for the thread to finish. Everything behind one lock.
final class TransferInbox: Sendable {
    private struct State {
        var pending: [Transfer] = []
        /// Whether the loop has been woken since it last took `pending`.
        var wakePending = false
        var stopping = false
        /// The multi handle to wake, until the loop is about to free it.
        var wakeup: MultiWakeup?
        var finished = false
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state: Lock<State>

    init(wakeup: MultiWakeup) {
        state = Lock(State(wakeup: wakeup))
    }

    /// Queues `transfer` for the loop and wakes it; false once the client stops.
    func submit(_ transfer: Transfer) -> Bool {
        state.withLock { state in
            guard !state.stopping else { return false }
            state.pending.append(transfer)
            // Woken under the lock: the loop frees the multi handle only after taking
            // it out of here under the same lock.
            if !state.wakePending, let wakeup = state.wakeup {
                state.wakePending = true
                wakeup.wake()
            }
            return true
        }
    }

    /// The transfers queued since the last call, and whether to stop.
    func take() -> (transfers: [Transfer], stopping: Bool) {
        state.withLock { state in
            state.wakePending = false
            defer { state.pending.removeAll() }
            return (state.pending, state.stopping)
        }
    }

    /// Asks the loop to stop, without waiting.
    func requestStop() {
        state.withLock { state in
            state.stopping = true
            state.wakeup?.wake()
        }
    }

    /// Asks the loop to stop and waits for its thread to have finished.
    func stopAndWait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let finished = state.withLock { state -> Bool in
                if state.finished { return true }
                state.stopping = true
                state.waiters.append(continuation)
                state.wakeup?.wake()
                return false
            }
            if finished { continuation.resume() }
        }
    }

    /// For the loop as it stops: no more wakeups, no more transfers; answers those
    /// queued and not taken.
    func close() -> [Transfer] {
        state.withLock { state in
            state.stopping = true
            state.wakeup = nil
            defer { state.pending.removeAll() }
            return state.pending
        }
    }

    /// For the loop once it has freed everything: wakes those waiting in `stopAndWait`.
    func markFinished() {
        let waiters = state.withLock { state in
            state.finished = true
            defer { state.waiters.removeAll() }
            return state.waiters
        }
        for waiter in waiters { waiter.resume() }
    }
}

/// The one owner of the multi handle and every easy handle: runs on a thread of its
/// own, adds new transfers, drives libcurl with `curl_multi_perform` and
/// `curl_multi_poll` (woken early by `curl_multi_wakeup` when a request arrives),
/// and completes each transfer once it is done, or when the client shuts down.
///
/// `@unchecked Sendable`: the client makes the loop and hands it to its thread before
/// that thread starts; from then on only that thread touches it, and others reach it
/// only through `inbox`, which has its own lock.
final class TransferLoop: @unchecked Sendable {
    /// The name of the loop's thread.
    static let threadName = "islet-http-out"
    /// Easy handles kept for reuse beyond those in use: enough for the busiest moment
    /// without holding memory for a burst long gone.
    private static let freeHandleLimit = 1024

    let inbox: TransferInbox
    private var multi: MultiHandle?
    private let configuration: HTTPClientConfiguration
    /// Transfers libcurl is running, by their easy handle.
    private var running: [UnsafeMutableRawPointer: Transfer] = [:]
    private var freeHandles: [EasyHandle] = []

    init(configuration: HTTPClientConfiguration) throws(OutboundFailure) {
        let initialized = CurlLibrary.initialized
        guard initialized == CURLE_OK else {
            throw OutboundFailure(.other, "libcurl could not start: \(CurlLibrary.text(initialized))")
        }
        guard let multi = MultiHandle() else { throw OutboundFailure(.other, "libcurl could not make a multi handle") }
        // Connection limits, and as many idle connections kept for reuse as may be open
        // (by default libcurl keeps 4 per easy handle added, which churns under load).
        // https://curl.se/libcurl/c/CURLMOPT_MAX_HOST_CONNECTIONS.html
        let perHost = max(1, configuration.maxConnectionsPerHost)
        let total = max(perHost, configuration.maxTotalConnections)
        let codes = [
            islet_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAX_HOST_CONNECTIONS, perHost),
            islet_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAX_TOTAL_CONNECTIONS, total),
            islet_curl_multi_setopt_long(multi.pointer, CURLMOPT_MAXCONNECTS, total),
        ]
        guard codes.allSatisfy({ $0 == CURLM_OK }) else {
            throw OutboundFailure(.other, "libcurl refused the connection limits")
        }
        self.multi = multi
        self.configuration = configuration
        inbox = TransferInbox(wakeup: MultiWakeup(pointer: multi.pointer))
    }

    /// Starts the loop's thread.
    func start() {
        let thread = Thread { [self] in
            // Named from inside: on Linux a name given before `start` never reaches
            // the system (`top -H`, `perf`), which takes at most 15 bytes.
            nameCurrentThread(Self.threadName)
            run()
        }
        thread.stackSize = 1 << 20
        thread.start()
    }

    private func run() {
        guard let multi = multi?.pointer else { return }
        while true {
            let (transfers, stopping) = inbox.take()
            if stopping {
                for transfer in transfers { transfer.complete(.failure(Self.shutDown)) }
                break
            }
            for transfer in transfers { begin(transfer, multi) }
            var active: Int32 = 0
            _ = curl_multi_perform(multi, &active)
            finishDone(multi)
            // Waits for socket activity, libcurl's next timer, a wakeup, or at most this.
            _ = curl_multi_poll(multi, nil, 0, 250, nil)
        }
        stop(multi)
    }

    /// Hands `transfer` to libcurl on an easy handle from the free list.
    private func begin(_ transfer: Transfer, _ multi: UnsafeMutableRawPointer) {
        guard let easy = freeHandles.popLast() ?? EasyHandle() else {
            transfer.complete(.failure(OutboundFailure(.other, "libcurl could not make an easy handle")))
            return
        }
        curl_easy_reset(easy.pointer)
        if let failure = transfer.configure(easy, configuration: configuration) {
            recycle(easy)
            transfer.complete(.failure(failure))
            return
        }
        let added = curl_multi_add_handle(multi, easy.pointer)
        guard added == CURLM_OK else {
            recycle(easy)
            let text = String(cString: curl_multi_strerror(added))
            transfer.complete(.failure(OutboundFailure(.other, "libcurl did not take the request: \(text)")))
            return
        }
        transfer.easy = easy
        running[easy.pointer] = transfer
    }

    /// Completes every transfer libcurl reports done.
    private func finishDone(_ multi: UnsafeMutableRawPointer) {
        var left: Int32 = 0
        while let message = curl_multi_info_read(multi, &left) {
            guard message.pointee.msg == CURLMSG_DONE, let handle = message.pointee.easy_handle else { continue }
            let code = islet_curl_msg_result(message)
            guard let transfer = running.removeValue(forKey: handle) else { continue }
            let outcome = transfer.outcome(code)
            _ = curl_multi_remove_handle(multi, handle)
            if let easy = transfer.easy { recycle(easy) }
            transfer.easy = nil
            transfer.complete(outcome)
        }
    }

    private func recycle(_ easy: EasyHandle) {
        if freeHandles.count < Self.freeHandleLimit { freeHandles.append(easy) }
    }

    /// Fails whatever is queued or running, then frees every easy handle and the multi
    /// handle (closing the kept-alive connections), in the order libcurl asks:
    /// https://curl.se/libcurl/c/curl_multi_cleanup.html
    private func stop(_ multi: UnsafeMutableRawPointer) {
        let queued = inbox.close()
        for transfer in queued { transfer.complete(.failure(Self.shutDown)) }
        for (handle, transfer) in running {
            _ = curl_multi_remove_handle(multi, handle)
            transfer.easy = nil
            transfer.complete(.failure(Self.shutDown))
        }
        running = [:]
        freeHandles = []
        self.multi = nil
        inbox.markFinished()
    }

    private static let shutDown = OutboundFailure(.shutDown, "the HTTP client shut down before the request finished")
}
