internal import CNGHTTP2
import Foundation
import Glibc

/// A server's answer body, read by nghttp2 as flow control allows. (A client's
/// request is read from its `HTTP2Exchange`.)
final class BodySource {
    let data: Data
    var offset = 0

    init(_ data: Data) { self.data = data }

    /// The data provider callback that reads a `BodySource`.
    static let read: nghttp2_data_source_read_callback = { _, _, buffer, length, flags, source, _ in
        let body = Unmanaged<BodySource>.fromOpaque(source!.pointee.ptr).takeUnretainedValue()
        return readBody(body.data, from: &body.offset, into: buffer, length: length, flags: flags)
    }
}

/// Copies what fits of `data` from `offset` into nghttp2's `buffer` of `length`
/// bytes, moves `offset` on, and flags the end: the body of every data provider.
func readBody(
    _ data: Data, from offset: inout Int, into buffer: UnsafeMutablePointer<UInt8>?, length: Int,
    flags: UnsafeMutablePointer<UInt32>?
) -> Int {
    let count = min(length, data.count - offset)
    data.withUnsafeBytes { raw in
        buffer!.update(from: raw.baseAddress!.assumingMemoryBound(to: UInt8.self) + offset, count: count)
    }
    offset += count
    if offset == data.count { flags!.pointee |= UInt32(NGHTTP2_DATA_FLAG_EOF.rawValue) }
    return count
}

/// One HTTP/2 connection: a socket (plain or TLS), an nghttp2 session, and the
/// buffers between them. Client and server connections subclass it and override the
/// stream callbacks. Confined to its event loop's thread.
class H2Connection: EventHandler {
    enum Phase { case connecting, handshaking, open, closed }

    let loop: EventLoop
    let transport: Transport
    var phase: Phase
    var session: OpaquePointer?
    private var readBuffer: UnsafeMutableRawBufferPointer
    private var pendingOutput: [UInt8] = []
    private var pendingOffset = 0
    /// Set while the connection dispatches events, so `close` from inside a callback
    /// is deferred until nghttp2 has returned.
    private var inCallback = false
    private var closeRequested: HTTP2Error??
    /// Set by `closeGracefully`: output is flushed, then the write side shut, then
    /// input discarded until the peer closes, so that nothing the peer sent last
    /// turns our close into a reset that destroys what we sent.
    private var lingering = false
    private var writeShut = false
    /// Writes made to the socket so far.
    private(set) var writes = 0
    /// When input last arrived, for idle and keep-alive checks.
    var lastActivity = monotonicNanoseconds()

    init(loop: EventLoop, transport: Transport, phase: Phase, inputSlice: Int) {
        self.inputSlice = inputSlice
        self.loop = loop
        self.transport = transport
        self.phase = phase
        self.readBuffer = .allocate(byteCount: 65_536, alignment: 16)
    }

    deinit {
        if let session { nghttp2_session_del(session) }
        readBuffer.deallocate()
    }

    // MARK: Overridables

    /// Called once TLS (if any) is up; subclasses create the session here.
    func established() {}
    /// A HEADERS frame starts on `streamID`.
    func beginHeaders(streamID: Int32, category: nghttp2_headers_category) {}
    /// One header field of `streamID`, as bytes valid only during the call (nghttp2
    /// has checked them: no uppercase in names, no control characters in values).
    func header(streamID: Int32, name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) -> Bool { true }
    /// A complete frame arrived.
    func frameReceived(_ frame: UnsafePointer<nghttp2_frame>) {}
    /// A chunk of DATA arrived on `streamID`.
    func data(streamID: Int32, bytes: UnsafeRawBufferPointer) {}
    /// `streamID` closed with `errorCode` (0 for a normal end).
    func streamClosed(streamID: Int32, errorCode: UInt32) {}
    /// The connection closed; `error` says why, nil for an orderly close.
    func connectionClosed(error: HTTP2Error?) {}

    // MARK: Session

    /// Creates the nghttp2 session with this connection's callbacks.
    func createSession(server: Bool, configure: (OpaquePointer) -> Void) {
        var callbacks: OpaquePointer?
        nghttp2_session_callbacks_new(&callbacks)
        defer { nghttp2_session_callbacks_del(callbacks) }
        nghttp2_session_callbacks_set_on_begin_headers_callback(callbacks) { _, frame, user in
            let connection = Unmanaged<H2Connection>.fromOpaque(user!).takeUnretainedValue()
            connection.beginHeaders(streamID: frame!.pointee.hd.stream_id, category: frame!.pointee.headers.cat)
            return 0
        }
        nghttp2_session_callbacks_set_on_header_callback(callbacks) { _, frame, name, nameLength, value, valueLength, _, user in
            let connection = Unmanaged<H2Connection>.fromOpaque(user!).takeUnretainedValue()
            let keep = connection.header(
                streamID: frame!.pointee.hd.stream_id, name: UnsafeRawBufferPointer(start: name, count: nameLength),
                value: UnsafeRawBufferPointer(start: value, count: valueLength))
            return keep ? 0 : NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE.rawValue
        }
        nghttp2_session_callbacks_set_on_frame_recv_callback(callbacks) { _, frame, user in
            let connection = Unmanaged<H2Connection>.fromOpaque(user!).takeUnretainedValue()
            connection.frameReceived(frame!)
            return 0
        }
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks) { _, _, streamID, data, length, user in
            let connection = Unmanaged<H2Connection>.fromOpaque(user!).takeUnretainedValue()
            connection.data(streamID: streamID, bytes: UnsafeRawBufferPointer(start: data, count: length))
            return 0
        }
        nghttp2_session_callbacks_set_on_stream_close_callback(callbacks) { _, streamID, errorCode, user in
            let connection = Unmanaged<H2Connection>.fromOpaque(user!).takeUnretainedValue()
            connection.streamClosed(streamID: streamID, errorCode: errorCode)
            return 0
        }
        var option: OpaquePointer?
        nghttp2_option_new(&option)
        defer { nghttp2_option_del(option) }
        // Closed streams are kept only for RFC 7540's priority tree, which neither
        // end uses (both send SETTINGS_NO_RFC7540_PRIORITIES).
        nghttp2_option_set_no_closed_streams(option, 1)
        configure(option!)
        let user = Unmanaged.passUnretained(self).toOpaque()
        if server {
            nghttp2_session_server_new2(&session, callbacks, user, option)
        } else {
            nghttp2_session_client_new2(&session, callbacks, user, option)
        }
    }

    /// Submits a SETTINGS frame.
    func submitSettings(_ values: [(id: nghttp2_settings_id, value: UInt32)]) {
        guard let session else { return }
        let entries = values.map { nghttp2_settings_entry(settings_id: Int32($0.id.rawValue), value: $0.value) }
        nghttp2_submit_settings(session, UInt8(NGHTTP2_FLAG_NONE.rawValue), entries, entries.count)
    }

    /// A data provider whose `read` callback serves `source` (nghttp2 hands the
    /// source back to it), or none when there is no source; the caller passes it to
    /// a submit call and keeps the source alive with its stream until the stream
    /// closes.
    func withDataProvider<R>(
        _ source: AnyObject?, read: nghttp2_data_source_read_callback, _ submit: (UnsafePointer<nghttp2_data_provider>?) -> R
    ) -> R {
        guard let source else { return submit(nil) }
        var provider = nghttp2_data_provider()
        provider.source.ptr = Unmanaged.passUnretained(source).toOpaque()
        provider.read_callback = read
        return withUnsafePointer(to: &provider) { submit($0) }
    }

    // MARK: I/O

    func handleEvents(_ events: UInt32) {
        switch phase {
        case .closed:
            return
        case .connecting:
            connectFinished()
        case .handshaking:
            continueHandshake()
        case .open:
            readAvailable()
            flush()
        }
    }

    /// A non-blocking connect completed (or failed).
    func connectFinished() {
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(transport.fd, SOL_SOCKET, SO_ERROR, &error, &length)
        if error == EINPROGRESS || error == EALREADY { return }
        guard error == 0 else {
            close(HTTP2Error(.connectFailed, String(cString: strerror(error))))
            return
        }
        phase = .handshaking
        continueHandshake()
    }

    func continueHandshake() {
        switch transport.handshake() {
        case .done:
            phase = .open
            established()
            guard phase == .open else { return }
            readAvailable()
            flush()
        case .wantRead, .wantWrite:
            return
        case .closed:
            close(HTTP2Error(.tlsFailed, "the peer closed the connection during the TLS handshake"))
        case .failed(let reason):
            close(HTTP2Error(.tlsFailed, reason))
        }
    }

    private func readAvailable() {
        guard let session else { return }
        while phase == .open {
            switch transport.read(readBuffer) {
            case .done(let count):
                if lingering { continue }
                guard consume(session, count) else { return }
            case .wantRead:
                return
            case .wantWrite:
                return  // a TLS key update wants to write; the output edge will resume us
            case .closed:
                close(nil)
                return
            case .failed(let reason):
                close(lingering ? nil : HTTP2Error(.connectionLost, reason))
                return
            }
        }
    }

    /// Feeds `count` bytes of the read buffer to nghttp2 in slices of `inputSlice`
    /// bytes. After a slice that produced at least `earlyFlushStreams` new streams'
    /// worth of output, that output is written before the rest is parsed, so the
    /// peer works on it meanwhile instead of waiting for the whole read: the two
    /// ends overlap rather than take turns. Answers false once the connection closed.
    private func consume(_ session: OpaquePointer, _ count: Int) -> Bool {
        let base = readBuffer.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var offset = 0
        while offset < count {
            let length = min(count - offset, inputSlice)
            // Once per slice rather than per frame: a clock read per push adds up.
            lastActivity = monotonicNanoseconds()
            inCallback = true
            let consumed = nghttp2_session_mem_recv(session, base + offset, length)
            inCallback = false
            if let requested = closeRequested {
                closeRequested = nil
                close(requested)
                return false
            }
            if consumed < 0 {
                let reason = String(cString: nghttp2_strerror(Int32(consumed)))
                // Tell the peer why before going away, when the session can still say it.
                flush()
                close(HTTP2Error(.protocolError, reason))
                return false
            }
            offset += length
            inputSliceProcessed()
            if streamsQueued >= Self.earlyFlushStreams {
                flush()
                guard phase == .open else { return false }
            }
        }
        return true
    }

    /// Input is parsed this many bytes at a time (see `consume`). A server answers
    /// after every 4 KB of requests, so that its client starts on the answers
    /// early; a client, whose answers only queue more requests, does better with
    /// fewer and larger writes (both measured with h2load and `islet-bench`).
    let inputSlice: Int
    /// Output for this many streams is written without waiting for the rest of a read.
    static let earlyFlushStreams = 16
    /// Streams whose frames were submitted since the last flush; subclasses count
    /// them up, `flush` resets the count.
    var streamsQueued = 0

    /// Called after each slice of input; the client submits requests queued by the
    /// answers in it.
    func inputSliceProcessed() {}

    /// Sends whatever nghttp2 has queued, batching frames into large writes.
    func flush() {
        guard phase == .open, let session else { return }
        streamsQueued = 0
        while true {
            if pendingOffset < pendingOutput.count {
                let step = pendingOutput.withUnsafeBytes { raw in
                    transport.write(UnsafeRawBufferPointer(rebasing: raw[pendingOffset...]))
                }
                switch step {
                case .done(let count):
                    writes += 1
                    pendingOffset += count
                    if pendingOffset < pendingOutput.count { continue }
                    pendingOutput.removeAll(keepingCapacity: true)
                    pendingOffset = 0
                case .wantRead, .wantWrite:
                    return
                case .closed:
                    close(nil)
                    return
                case .failed(let reason):
                    // The peer may have said why it went (a GOAWAY) before closing:
                    // read what is still buffered before giving up.
                    pendingOutput.removeAll()
                    pendingOffset = 0
                    readAvailable()
                    close(HTTP2Error(.connectionLost, reason))
                    return
                }
            }
            // Gather up to 64 KiB of frames into one write.
            inCallback = true
            while pendingOutput.count < 65_536 {
                var chunk: UnsafePointer<UInt8>?
                let length = nghttp2_session_mem_send(session, &chunk)
                if length < 0 {
                    inCallback = false
                    close(HTTP2Error(.protocolError, String(cString: nghttp2_strerror(Int32(length)))))
                    return
                }
                if length == 0 { break }
                pendingOutput.append(contentsOf: UnsafeBufferPointer(start: chunk, count: length))
            }
            inCallback = false
            if let requested = closeRequested {
                closeRequested = nil
                close(requested)
                return
            }
            if pendingOutput.isEmpty { break }
        }
        if lingering {
            if !writeShut {
                writeShut = true
                Glibc.shutdown(transport.fd, Int32(SHUT_WR))
            }
        } else if nghttp2_session_want_read(session) == 0 && nghttp2_session_want_write(session) == 0 {
            closeGracefully()
        }
    }

    /// Sends what is queued, then closes once the peer has closed its side (or after
    /// `timeout`).
    func closeGracefully(timeout: Duration = .seconds(2)) {
        guard phase == .open, !lingering else { return }
        lingering = true
        flush()
        // Holds the connection until then; `close` does nothing once it is closed.
        loop.schedule(after: timeout) { [self] in close(nil) }
    }

    /// Closes the connection now; streams still open are reported by
    /// `connectionClosed`. Safe to call more than once.
    func close(_ error: HTTP2Error?) {
        if inCallback {
            if closeRequested == nil { closeRequested = .some(error) }
            return
        }
        guard phase != .closed else { return }
        phase = .closed
        loop.unregister(transport.fd)
        shutdown(transport.fd, Int32(SHUT_RDWR))
        connectionClosed(error: error)
    }
}

