internal import CNGHTTP2
public import Foundation
import Glibc

/// One request and its answer, for callers that send many small requests. A
/// subclass writes the request's header fields straight into the connection's
/// buffer and reads the answer's fields as bytes, so a request costs no
/// `HTTP2Request`, `HTTP2Response` or `String` per field, and the subclass can be
/// the caller's own record of the request (one object per request in all).
///
/// Send it with `HTTP2Client.send(_:)`. Between that call and `completed` it
/// belongs to the client's event-loop thread; once `completed` has been called it
/// may be sent again, on any client (to retry it, say).
///
/// `@unchecked Sendable`: see above; a subclass's own state follows the same rule.
open class HTTP2Exchange: @unchecked Sendable {
    /// The request body; empty sends none.
    public let body: Data

    // The client's bookkeeping, on its loop thread.

    /// Numbers the exchange for cancellation; each `send` gives a new one.
    var id: UInt64 = 0
    /// When it was handed to the client (monotonic ns), for the connect timeout.
    var enqueuedAt: UInt64 = 0
    /// Times a GOAWAY or REFUSED_STREAM handed it back.
    var refusals = 0
    /// Between `send` and `completed`.
    var inFlight = false
    /// How much of the body nghttp2 has read.
    var bodyOffset = 0
    /// The answer's `:status`, 0 until it arrives.
    var status = 0

    /// An exchange that sends `body`.
    public init(body: Data = Data()) {
        self.body = body
    }

    /// Writes the request's `:path`, its `:method` unless it is POST, and its
    /// regular header fields. Called each time the request goes out on a stream.
    open func writeHead(_ head: HTTP2RequestHead) {}

    /// The request went out on a new stream (again, after a refusal): forget what an
    /// earlier stream's answer left.
    open func attemptStarted() {}

    /// One regular header field of the answer, as bytes valid during the call only.
    open func answerField(name: UnsafeRawBufferPointer, value: UnsafeRawBufferPointer) {}

    /// A chunk of the answer's body, valid during the call only.
    open func answerData(_ bytes: UnsafeRawBufferPointer) {}

    /// The end: the answer's `:status` once the whole answer arrived, or why none
    /// will (an `HTTP2Error`, or `CancellationError`). Called once per `send`, on
    /// the client's thread (keep it short).
    open func completed(_ outcome: Result<Int, any Error>) {}

    /// Readies the exchange for a `send`.
    func prepare(id: UInt64) {
        self.id = id
        enqueuedAt = monotonicNanoseconds()
        refusals = 0
        inFlight = true
    }

    /// Ends the exchange with `outcome`, once per `send`.
    func finish(_ outcome: Result<Int, any Error>) {
        guard inFlight else { return }
        inFlight = false
        completed(outcome)
    }
}

/// Where an `HTTP2Exchange` writes its request's header fields: one buffer the
/// connection reuses for every request, copied by nghttp2 when the request is
/// submitted. Used only during `writeHead`.
public final class HTTP2RequestHead {
    /// A field's place in `storage`.
    private struct Field {
        var nameStart: Int
        var valueStart: Int
        var end: Int
        var neverIndexed: Bool
    }

    private var storage: UnsafeMutableRawPointer
    private var capacity: Int
    private var used = 0
    /// Where the request's own bytes start: the fields every request shares stay
    /// before it.
    private var requestStart = 0
    private var scheme = Field(nameStart: 0, valueStart: 0, end: 0, neverIndexed: false)
    private var authority = Field(nameStart: 0, valueStart: 0, end: 0, neverIndexed: false)
    /// The defaults: `:method POST`, `:path /`.
    private var post = Field(nameStart: 0, valueStart: 0, end: 0, neverIndexed: false)
    private var root = Field(nameStart: 0, valueStart: 0, end: 0, neverIndexed: false)
    private var method: Field?
    private var path: Field?
    private var fields: [Field] = []
    /// Names the configuration sends as never-indexed literals.
    private let unindexed: [String]

    init(scheme: String, authority: String, unindexed: [String]) {
        self.unindexed = unindexed
        capacity = 512
        storage = .allocate(byteCount: capacity, alignment: 1)
        fields.reserveCapacity(16)
        self.scheme = append(":scheme", scheme, nil, neverIndexed: false)
        self.authority = append(":authority", authority, nil, neverIndexed: false)
        post = append(":method", "POST", nil, neverIndexed: false)
        root = append(":path", "/", nil, neverIndexed: false)
        requestStart = used
    }

    deinit {
        storage.deallocate()
    }

    /// `:method`, when it is not POST.
    public func method(_ method: String) {
        self.method = append(":method", method, nil, neverIndexed: false)
    }

    /// `:path`: `path`, or `path` followed by `suffix` (a prefix and an id, say,
    /// without joining them first).
    public func path(_ path: String, _ suffix: String? = nil) {
        self.path = append(":path", path, suffix, neverIndexed: false)
    }

    /// A regular header field (lowercase name). A value that differs on every
    /// request (an id) should be `neverIndexed`: HPACK would only push useful
    /// entries out of both ends' tables for it.
    public func field(_ name: String, _ value: String, neverIndexed: Bool = false) {
        fields.append(append(name, value, nil, neverIndexed: neverIndexed || isUnindexed(name)))
    }

    /// A regular header field with a decimal value.
    public func field(_ name: String, _ value: Int) {
        var digits: (UInt64, UInt64, UInt64) = (0, 0, 0)  // 24 bytes: any Int fits
        withUnsafeMutableBytes(of: &digits) { buffer in
            var magnitude = value.magnitude
            var index = buffer.count
            repeat {
                index -= 1
                buffer[index] = UInt8(ascii: "0") + UInt8(magnitude % 10)
                magnitude /= 10
            } while magnitude > 0
            if value < 0 {
                index -= 1
                buffer[index] = UInt8(ascii: "-")
            }
            let start = used
            copy(name)
            let valueStart = used
            copy(UnsafeRawBufferPointer(rebasing: buffer[index...]))
            fields.append(Field(nameStart: start, valueStart: valueStart, end: used, neverIndexed: isUnindexed(name)))
        }
    }

    private func isUnindexed(_ name: String) -> Bool {
        !unindexed.isEmpty && unindexed.contains(name)
    }

    // MARK: The connection's side

    /// Forgets the last request's fields.
    func reset() {
        used = requestStart
        method = nil
        path = nil
        fields.removeAll(keepingCapacity: true)
    }

    /// Calls `body` with the nghttp2 name/value pairs of the request written since
    /// `reset`: pseudo-header fields first, as HTTP/2 requires.
    func withNameValues<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        let count = 4 + fields.count
        return withUnsafeTemporaryAllocation(of: nghttp2_nv.self, capacity: count) { nva in
            let base = storage.assumingMemoryBound(to: UInt8.self)
            func nv(_ field: Field) -> nghttp2_nv {
                nghttp2_nv(
                    name: base + field.nameStart, value: base + field.valueStart, namelen: field.valueStart - field.nameStart,
                    valuelen: field.end - field.valueStart,
                    flags: UInt8((field.neverIndexed ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE).rawValue))
            }
            nva[0] = nv(method ?? post)
            nva[1] = nv(scheme)
            nva[2] = nv(authority)
            nva[3] = nv(path ?? root)
            for index in fields.indices { nva[4 + index] = nv(fields[index]) }
            return body(nva.baseAddress!, count)
        }
    }

    // MARK: Storage

    private func append(_ name: String, _ value: String, _ suffix: String?, neverIndexed: Bool) -> Field {
        let start = used
        copy(name)
        let valueStart = used
        copy(value)
        if let suffix { copy(suffix) }
        return Field(nameStart: start, valueStart: valueStart, end: used, neverIndexed: neverIndexed)
    }

    private func copy(_ text: String) {
        let count = text.utf8.count
        reserve(count)
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { bytes in
            (storage + used).copyMemory(from: bytes.baseAddress!, byteCount: count)
        }
        if copied == nil {
            for (offset, byte) in text.utf8.enumerated() { storage.storeBytes(of: byte, toByteOffset: used + offset, as: UInt8.self) }
        }
        used += count
    }

    private func copy(_ bytes: UnsafeRawBufferPointer) {
        reserve(bytes.count)
        if let source = bytes.baseAddress { (storage + used).copyMemory(from: source, byteCount: bytes.count) }
        used += bytes.count
    }

    private func reserve(_ count: Int) {
        guard used + count > capacity else { return }
        let grown = max(capacity * 2, used + count)
        let larger = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 1)
        larger.copyMemory(from: storage, byteCount: used)
        storage.deallocate()
        storage = larger
        capacity = grown
    }
}
