internal import CNGHTTP2
import Foundation

/// One client-side HTTP/2 connection of an `HTTP2Client`.
final class ClientConnection: H2Connection {
    /// `unowned(unsafe)`: the core outlives every callback of its connections (a
    /// client going away closes them first, see `HTTP2Client.deinit`), and the
    /// timers that may fire later stop at the closed phase before reaching it.
    private unowned(unsafe) let core: ClientCore
    /// Each open stream's request, which also gathers the answer.
    private var streams: [Int32: PendingRequest] = [:]
    /// The stream whose answer is being read: its header fields arrive one after
    /// the other.
    private var lastStream: (id: Int32, pending: PendingRequest)?
    private let scheme: String
    private let authority: String
    private var ready = false
    private var goawayLastStreamID: Int32?
    private var housekeeping: UInt64?
    private var pingSentAt: UInt64?

    init(core: ClientCore, transport: Transport) {
        self.core = core
        self.scheme = transport.isTLS ? "https" : "http"
        self.authority = core.configuration.port == 443 ? core.configuration.host : "\(core.configuration.host):\(core.configuration.port)"
        super.init(loop: core.loop, transport: transport, phase: .connecting, inputSlice: 16_384)
    }

    /// Whether new streams may be opened here.
    var isUsable: Bool { ready && phase == .open && goawayLastStreamID == nil }

    /// Whether another stream fits under both peers' limits.
    var hasCapacity: Bool {
        guard let session, isUsable else { return false }
        let remote = Int(nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
        return streams.count < min(remote, core.configuration.maxConcurrentStreams)
    }

    func startTimers() {
        // Strong captures (at most a second past the close): a weak reference would
        // slow every retain of the connection down.
        housekeeping = loop.schedule(after: .seconds(1)) { [self] in tick() }
    }

    override func established() {
        if transport.isTLS && core.configuration.tls?.offerALPN != false && transport.negotiatedProtocol != "h2" {
            close(HTTP2Error(.protocolNegotiation, "the server did not agree to HTTP/2 (ALPN \(transport.negotiatedProtocol ?? "none"))"))
            return
        }
        createSession(server: false) { option in
            // Until the server's SETTINGS arrive, assume the RFC's suggested minimum.
            nghttp2_option_set_peer_max_concurrent_streams(option, 100)
        }
        submitSettings([
            (NGHTTP2_SETTINGS_ENABLE_PUSH, 0),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            (NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1),
        ])
        if let session {
            nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        }
        ready = true
        core.connectionReady(self)
    }

    func submit(_ pending: PendingRequest) {
        guard let session else { return }
        let request = pending.request
        let streamID = withBodyProvider(pending) { provider in
            withNameValues(
                (":method", request.method), (":scheme", scheme), (":authority", authority), (":path", request.path),
                headers: request.headers, unindexed: core.configuration.uniqueValueHeaders
            ) { nva, count in
                nghttp2_submit_request(session, nil, nva, count, provider, nil)
            }
        }
        guard streamID > 0 else {
            pending.complete(.failure(HTTP2Error(.requestRejected, String(cString: nghttp2_strerror(streamID)))))
            return
        }
        streamsQueued += 1
        pending.beginAttempt()
        streams[streamID] = pending
    }

    override func inputSliceProcessed() {
        // Answers in this slice may have freed stream slots and queued requests.
        if isUsable { core.drain(reading: self) }
    }

    func cancel(id: UInt64) {
        // Rare: a scan instead of an index kept for every request.
        guard let (streamID, pending) = streams.first(where: { $0.value.id == id }), let session else { return }
        pending.complete(.failure(CancellationError()))
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
        flush()
    }

    /// Tells the server no new streams will come, and closes once the open ones end.
    func goAway() {
        guard let session, phase == .open else {
            close(HTTP2Error(.shutDown, "the client shut down"))
            return
        }
        nghttp2_session_terminate_session(session, NGHTTP2_NO_ERROR.rawValue)
        flush()
    }

    private func pending(_ streamID: Int32) -> PendingRequest? {
        if let last = lastStream, last.id == streamID { return last.pending }
        guard let pending = streams[streamID] else { return nil }
        lastStream = (streamID, pending)
        return pending
    }

    override func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard let pending = pending(streamID) else { return true }
        if name.first == UInt8(ascii: ":") {
            if HeaderBytes.equals(name, ":status") { pending.status = HeaderBytes.smallInteger(value) ?? 0 }
            return true
        }
        pending.answerHeaders.append((HeaderBytes.text(name), HeaderBytes.text(value)))
        return true
    }

    override func data(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        pending(streamID)?.answerBody.append(contentsOf: bytes)
    }

    override func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        switch UInt32(frame.pointee.hd.type) {
        case NGHTTP2_SETTINGS.rawValue:
            if let session {
                core.statistics.peerMaxConcurrentStreams = Int(
                    nghttp2_session_get_remote_settings(session, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS))
            }
            // The stream limit may have grown.
            let core = self.core
            loop.afterEvents { core.drain() }
        case NGHTTP2_GOAWAY.rawValue:
            goawayLastStreamID = frame.pointee.goaway.last_stream_id
            core.statistics.goawaysReceived += 1
            let core = self.core
            loop.afterEvents { [self] in core.connectionGoingAway(self) }
        case NGHTTP2_PING.rawValue:
            if frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_ACK.rawValue) != 0 && pingSentAt != nil {
                pingSentAt = nil
                core.statistics.pingsAnswered += 1
            }
        default:
            break
        }
    }

    override func streamClosed(streamID: Int32, errorCode: UInt32) {
        if lastStream?.id == streamID { lastStream = nil }
        guard let pending = streams.removeValue(forKey: streamID) else { return }
        let answer = pending.endAttempt()
        if pending.isComplete { return }
        if errorCode == NGHTTP2_NO_ERROR.rawValue && answer.status > 0 {
            core.statistics.responses += 1
            loop.answering = core
            pending.complete(.success(answer))
            loop.answering = nil
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue || isAboveGoaway(streamID) {
            core.requeue(pending)
        } else {
            pending.complete(.failure(HTTP2Error(.streamReset, "the server reset the stream", errorCode: errorCode)))
        }
        // Once per round of events, however many streams closed in it.
        core.scheduleDrain()
    }

    private func isAboveGoaway(_ streamID: Int32) -> Bool {
        guard let last = goawayLastStreamID else { return false }
        return streamID > last
    }

    override func connectionClosed(error: HTTP2Error?) {
        if let housekeeping { loop.cancelTimer(housekeeping) }
        let open = streams
        streams.removeAll()
        lastStream = nil
        for (streamID, pending) in open.sorted(by: { $0.key > $1.key }) where !pending.isComplete {
            _ = pending.endAttempt()
            if isAboveGoaway(streamID) {
                core.requeue(pending)
            } else {
                pending.complete(.failure(error ?? HTTP2Error(.connectionLost, "the connection closed with the request in flight")))
            }
        }
        core.connectionClosed(self, error: error, wasReady: ready)
    }

    /// Once a second: keep-alive PINGs, their timeout, and the idle timeout.
    private func tick() {
        guard phase != .closed else { return }
        let now = monotonicNanoseconds()
        func nanos(_ d: Duration) -> UInt64 {
            UInt64(d.components.seconds) * 1_000_000_000 + UInt64(d.components.attoseconds / 1_000_000_000)
        }
        if phase == .open, let session {
            if let sent = pingSentAt, now - sent > nanos(core.configuration.pingTimeout) {
                close(HTTP2Error(.timedOut, "the server did not answer a PING"))
                return
            }
            if pingSentAt == nil, let interval = core.configuration.pingInterval, now - lastActivity > nanos(interval) {
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
                pingSentAt = now
                flush()
            }
            if let idle = core.configuration.idleTimeout, streams.isEmpty, now - lastActivity > nanos(idle) {
                goAway()
            }
        } else if now - lastActivity > nanos(core.configuration.connectTimeout) {
            close(HTTP2Error(.timedOut, "connecting took longer than \(core.configuration.connectTimeout)"))
            return
        }
        housekeeping = loop.schedule(after: .seconds(1)) { [self] in tick() }
    }
}
