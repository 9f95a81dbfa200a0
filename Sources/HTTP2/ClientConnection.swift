internal import CNGHTTP2
import Foundation

/// One client-side HTTP/2 connection of an `HTTP2Client`.
final class ClientConnection: H2Connection {
    /// `unowned(unsafe)`: the core outlives every callback of its connections (a
    /// client going away closes them first, see `HTTP2Client.deinit`), and the
    /// timers that may fire later stop at the closed phase before reaching it.
    private unowned(unsafe) let core: ClientCore
    /// Each open stream's exchange, which also reads the answer.
    private var streams: [Int32: HTTP2Exchange] = [:]
    /// The stream whose answer is being read: its header fields arrive one after
    /// the other.
    private var lastStream: (id: Int32, pending: HTTP2Exchange)?
    /// Where requests write their header fields, `:scheme` and `:authority` in place.
    private let head: HTTP2RequestHead
    private var ready = false
    private var goawayLastStreamID: Int32?
    private var housekeeping: UInt64?
    private var pingSentAt: UInt64?

    init(core: ClientCore, transport: Transport) {
        self.core = core
        let authority = core.configuration.port == 443 ? core.configuration.host : "\(core.configuration.host):\(core.configuration.port)"
        self.head = HTTP2RequestHead(
            scheme: transport.isTLS ? "https" : "http", authority: authority, unindexed: core.configuration.uniqueValueHeaders)
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

    func submit(_ exchange: HTTP2Exchange) {
        guard let session else { return }
        head.reset()
        exchange.writeHead(head)
        exchange.bodyOffset = 0
        let streamID = head.withNameValues { nva, count in
            // The stream keeps the exchange, and so its body, until it closes.
            withDataProvider(exchange.body.isEmpty ? nil : exchange, read: Self.readExchangeBody) { provider in
                nghttp2_submit_request(session, nil, nva, count, provider, nil)
            }
        }
        guard streamID > 0 else {
            exchange.finish(.failure(HTTP2Error(.requestRejected, String(cString: nghttp2_strerror(streamID)))))
            return
        }
        streamsQueued += 1
        exchange.status = 0
        exchange.attemptStarted()
        streams[streamID] = exchange
    }

    /// The data provider callback that reads an exchange's body.
    private static let readExchangeBody: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
        let exchange = Unmanaged<HTTP2Exchange>.fromOpaque(source!.pointee.ptr).takeUnretainedValue()
        return readBody(exchange.body, from: &exchange.bodyOffset, into: buffer, length: length, flags: flags)
    }

    override func inputSliceProcessed() {
        // Answers in this slice may have freed stream slots and queued requests.
        if isUsable { core.drain(reading: self) }
    }

    func cancel(id: UInt64) {
        // Rare: a scan instead of an index kept for every request.
        guard let (streamID, pending) = streams.first(where: { $0.value.id == id && $0.value.inFlight }), let session else { return }
        // Forgotten at once: the exchange may be sent again before the stream closes.
        streams[streamID] = nil
        if lastStream?.id == streamID { lastStream = nil }
        pending.finish(.failure(CancellationError()))
        nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_CANCEL.rawValue)
        flush()
        // Its slot is free for a queued request.
        core.scheduleDrain()
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

    private func pending(_ streamID: Int32) -> HTTP2Exchange? {
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
        pending.answerField(name: name, value: value)
        return true
    }

    override func data(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        pending(streamID)?.answerData(bytes)
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
        guard let pending = streams.removeValue(forKey: streamID), pending.inFlight else { return }
        if errorCode == NGHTTP2_NO_ERROR.rawValue && pending.status > 0 {
            core.statistics.responses += 1
            loop.answering = core
            pending.finish(.success(pending.status))
            loop.answering = nil
        } else if errorCode == NGHTTP2_REFUSED_STREAM.rawValue || isAboveGoaway(streamID) {
            core.requeue(pending)
        } else {
            pending.finish(.failure(HTTP2Error(.streamReset, "the server reset the stream", errorCode: errorCode)))
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
        for (streamID, pending) in open.sorted(by: { $0.key > $1.key }) where pending.inFlight {
            if isAboveGoaway(streamID) {
                core.requeue(pending)
            } else {
                pending.finish(.failure(error ?? HTTP2Error(.connectionLost, "the connection closed with the request in flight")))
            }
        }
        core.connectionClosed(self, error: error, wasReady: ready)
    }

    /// Once a second: keep-alive PINGs, their timeout, and the idle timeout.
    private func tick() {
        guard phase != .closed else { return }
        let now = monotonicNanoseconds()
        if phase == .open, let session {
            if let sent = pingSentAt, now - sent > core.configuration.pingTimeout.nanoseconds {
                close(HTTP2Error(.timedOut, "the server did not answer a PING"))
                return
            }
            if pingSentAt == nil, let interval = core.configuration.pingInterval, now - lastActivity > interval.nanoseconds {
                nghttp2_submit_ping(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), nil)
                pingSentAt = now
                flush()
            }
            if let idle = core.configuration.idleTimeout, streams.isEmpty, now - lastActivity > idle.nanoseconds {
                goAway()
            }
        } else if now - lastActivity > core.configuration.connectTimeout.nanoseconds {
            close(HTTP2Error(.timedOut, "connecting took longer than \(core.configuration.connectTimeout)"))
            return
        }
        housekeeping = loop.schedule(after: .seconds(1)) { [self] in tick() }
    }
}
