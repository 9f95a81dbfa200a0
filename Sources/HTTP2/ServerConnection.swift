internal import CNGHTTP2
import Foundation

/// One server-side HTTP/2 connection.
final class ServerConnection: H2Connection {
    let id: UInt64
    /// `unowned(unsafe)`: the shared state outlives every callback of the server's
    /// connections (the server stops its loops before letting it go).
    private unowned(unsafe) let shared: ServerShared
    private var streams: [Int32: IncomingStream] = [:]
    private var streamsSeen = 0
    private var goawayLastStreamID: Int32?
    private var timer: UInt64?
    private lazy var context = HTTP2ServerConnectionContext(id: id, connection: self)
    private var opened = false

    private final class IncomingStream {
        var method = ""
        var path = ""
        var authority: String?
        var fields = HTTP2HeaderFields()
        /// The response body being sent, read by nghttp2 until the stream ends.
        var source: BodySource?
        var headerBytes = 0
        var body = Data()
        var headersTooLarge = false
        var bodyTooLarge = false
        var answered = false

        /// Ready for another stream; the fields keep their storage when the last
        /// request made from them is gone.
        func reset() {
            method = ""
            path = ""
            authority = nil
            fields.removeAll()
            source = nil
            headerBytes = 0
            body = Data()
            headersTooLarge = false
            bodyTooLarge = false
            answered = false
        }
    }

    /// Streams that closed, kept for the next ones.
    private var spareStreams: [IncomingStream] = []

    /// Where answers write their header fields.
    private let responseHead: HeaderBlock

    init(id: UInt64, shared: ServerShared, loop: EventLoop, transport: Transport) {
        self.id = id
        self.shared = shared
        responseHead = HeaderBlock(unindexed: shared.configuration.uniqueValueHeaders)
        super.init(loop: loop, transport: transport, phase: .handshaking, inputSlice: 4_096)
    }

    func start() {
        timer = loop.schedule(after: shared.configuration.handshakeTimeout) { [shared, loop, id] in
            guard let connection = shared.connection(id, on: loop), connection.phase == .handshaking else { return }
            connection.close(HTTP2Error(.timedOut, "TLS handshake timed out"))
        }
        continueHandshake()
    }

    override func established() {
        if let timer { loop.cancelTimer(timer) }
        // A client that offers no ALPN at all is taken to speak HTTP/2 with prior
        // knowledge, as APNs does; one that agreed on something else is refused.
        if transport.isTLS, let agreed = transport.negotiatedProtocol, agreed != "h2" {
            close(HTTP2Error(.protocolNegotiation, "the client chose \(agreed), not h2"))
            return
        }
        let configuration = shared.configuration
        createSession(server: true) { _ in }
        submitSettings([
            (NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, configuration.initialMaxConcurrentStreams ?? configuration.maxConcurrentStreams),
            (NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, UInt32(configuration.maxHeaderListBytes)),
            (NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20),
            (NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1),
        ])
        if let session {
            nghttp2_session_set_local_window_size(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), 0, 16 << 20)
        }
        opened = true
        shared.delegate.connectionOpened(context)
        scheduleIdleCheck()
    }

    func setMaxConcurrentStreams(_ limit: UInt32) {
        submitSettings([(NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, limit)])
        loop.afterEvents { [self] in flush() }
    }

    /// Sends GOAWAY with the last stream processed; closes once open streams end.
    func goAway() {
        guard let session, phase == .open else {
            close(nil)
            return
        }
        let last = nghttp2_session_get_last_proc_stream_id(session)
        if goawayLastStreamID == nil { goawayLastStreamID = last }
        nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), last, NGHTTP2_NO_ERROR.rawValue, nil, 0)
        closeIfDrained()
        flush()
    }

    override func beginHeaders(streamID: Int32, category: nghttp2_headers_category) {
        guard category == NGHTTP2_HCAT_REQUEST else { return }
        let stream: IncomingStream
        if let spare = spareStreams.popLast() {
            stream = spare
        } else {
            stream = IncomingStream()
            stream.fields.reserveCapacity(fields: 8, bytes: 512)
        }
        streams[streamID] = stream
        lastStream = (streamID, stream)
    }

    /// The stream a header belongs to: the one whose HEADERS began last, nearly
    /// always, since a header block arrives whole before any other frame.
    private var lastStream: (id: Int32, stream: IncomingStream)?

    private func stream(_ streamID: Int32) -> IncomingStream? {
        if let last = lastStream, last.id == streamID { return last.stream }
        return streams[streamID]
    }

    override func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool {
        guard let stream = stream(streamID) else { return true }
        stream.headerBytes += name.count + value.count + 32
        if stream.headerBytes > shared.configuration.maxHeaderListBytes {
            stream.headersTooLarge = true
            return true
        }
        if name.first == UInt8(ascii: ":") {
            if HeaderBytes.equals(name, ":method") {
                stream.method = HeaderBytes.text(value)
            } else if HeaderBytes.equals(name, ":path") {
                stream.path = HeaderBytes.text(value)
            } else if HeaderBytes.equals(name, ":authority") {
                stream.authority = HeaderBytes.text(value)
            } else if !HeaderBytes.equals(name, ":scheme") {
                stream.fields.append(name: name, value: value)
            }
            return true
        }
        stream.fields.append(name: name, value: value)
        return true
    }

    override func data(streamID: Int32, bytes: UnsafeRawBufferPointer) {
        guard let stream = stream(streamID), !stream.bodyTooLarge else { return }
        if stream.body.count + bytes.count > shared.configuration.maxBodyBytes {
            stream.bodyTooLarge = true
            stream.body = Data()
            respond(streamID, stream, HTTP2Response(status: 413))
            return
        }
        stream.body.append(contentsOf: bytes)
    }

    override func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {
        let type = UInt32(frame.pointee.hd.type)
        guard type == NGHTTP2_HEADERS.rawValue || type == NGHTTP2_DATA.rawValue,
            frame.pointee.hd.flags & UInt8(NGHTTP2_FLAG_END_STREAM.rawValue) != 0
        else { return }
        let streamID = frame.pointee.hd.stream_id
        guard let stream = stream(streamID), !stream.answered else { return }
        if let last = goawayLastStreamID, streamID > last {
            // Above the GOAWAY line: the client will send it again elsewhere.
            if let session {
                nghttp2_submit_rst_stream(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_REFUSED_STREAM.rawValue)
            }
            return
        }
        if stream.headersTooLarge {
            respond(streamID, stream, HTTP2Response(status: 431))
            return
        }
        let request = HTTP2ServerRequest(
            method: stream.method, path: stream.path, authority: stream.authority,
            fields: stream.fields, body: stream.body, streamID: streamID)
        let reply = shared.delegate.handle(request, on: context)
        streamsSeen += 1
        if let limit = shared.configuration.goawayAfterStreams, streamsSeen == limit {
            goawayLastStreamID = streamID
            if let session {
                nghttp2_submit_goaway(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), streamID, NGHTTP2_NO_ERROR.rawValue, nil, 0)
            }
        }
        if let delay = reply.delay, delay > .zero {
            stream.answered = true
            answerLater(streamID, stream, reply, after: delay)
        } else if let held = reply.heldWhile, held() {
            stream.answered = true
            answerLater(streamID, stream, reply, after: Self.holdCheckInterval)
        } else {
            respond(streamID, stream, reply.response)
        }
    }

    /// How often a held answer asks whether it may go.
    private static let holdCheckInterval = Duration.milliseconds(5)

    /// Sends a delayed or held answer once its time has come and nothing holds it,
    /// unless the stream or the connection went away meanwhile.
    private func answerLater(_ streamID: Int32, _ stream: IncomingStream, _ reply: HTTP2ServerReply, after delay: Duration) {
        loop.schedule(after: delay) { [self] in
            guard phase == .open, streams[streamID] === stream else { return }
            if let held = reply.heldWhile, held() {
                answerLater(streamID, stream, reply, after: Self.holdCheckInterval)
                return
            }
            submitResponse(streamID, stream, reply.response)
            flush()
        }
    }

    private func respond(_ streamID: Int32, _ stream: IncomingStream, _ response: HTTP2Response) {
        stream.answered = true
        submitResponse(streamID, stream, response)
    }

    private func submitResponse(_ streamID: Int32, _ stream: IncomingStream, _ response: HTTP2Response) {
        guard let session else { return }
        let source = response.body.isEmpty ? nil : BodySource(response.body)
        responseHead.reset()
        let status = responseHead.write(":status", HeaderBytes.statusText(response.status))
        for index in response.headers.indices { responseHead.append(response.headers[index].name, response.headers[index].value) }
        let rc = withDataProvider(source, read: BodySource.read) { provider in
            responseHead.withNameValues(leading: 1, { _ in status }) { nva, count in
                nghttp2_submit_response(session, streamID, nva, count, provider)
            }
        }
        if rc == 0 {
            stream.source = source
            streamsQueued += 1
        }
    }

    override func streamClosed(streamID: Int32, errorCode: UInt32) {
        if let stream = streams.removeValue(forKey: streamID), spareStreams.count < 64 {
            stream.reset()
            spareStreams.append(stream)
        }
        if lastStream?.id == streamID { lastStream = nil }
        closeIfDrained()
    }

    private func closeIfDrained() {
        guard goawayLastStreamID != nil, streams.keys.allSatisfy({ $0 > goawayLastStreamID! }) else { return }
        loop.afterEvents { [self] in
            guard phase == .open else { return }
            closeGracefully()
        }
    }

    override func connectionClosed(error: HTTP2Error?) {
        if let timer { loop.cancelTimer(timer) }
        streams.removeAll()
        lastStream = nil
        if opened { shared.delegate.connectionClosed(context) }
        shared.removed(self)
    }

    private func scheduleIdleCheck() {
        timer = loop.schedule(after: .seconds(1)) { [shared, loop, id] in
            guard let connection = shared.connection(id, on: loop), connection.phase == .open else { return }
            let limit = shared.configuration.idleTimeout.nanoseconds
            if connection.streams.isEmpty && monotonicNanoseconds() - connection.lastActivity > limit {
                connection.goAway()
            } else {
                connection.scheduleIdleCheck()
            }
        }
    }
}
