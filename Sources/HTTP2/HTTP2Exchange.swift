internal import CNGHTTP2
public import Foundation

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
    private let block: HeaderBlock
    // The fields every request of the connection shares, written once.
    private let scheme: HeaderBlock.Field
    private let authority: HeaderBlock.Field
    private let post: HeaderBlock.Field
    private let root: HeaderBlock.Field
    private var method: HeaderBlock.Field?
    private var path: HeaderBlock.Field?

    init(scheme: String, authority: String, unindexed: [String]) {
        block = HeaderBlock(unindexed: unindexed)
        self.scheme = block.write(":scheme", scheme)
        self.authority = block.write(":authority", authority)
        post = block.write(":method", "POST")
        root = block.write(":path", "/")
        block.pin()
    }

    /// `:method`, when it is not POST.
    public func method(_ method: String) {
        self.method = block.write(":method", method)
    }

    /// `:path`: `path`, or `path` followed by `suffix` (a prefix and an id, say,
    /// without joining them first).
    public func path(_ path: String, _ suffix: String? = nil) {
        self.path = block.write(":path", path, suffix)
    }

    /// A regular header field (lowercase name). A value that differs on every
    /// request (an id) should be `neverIndexed`: HPACK would only push useful
    /// entries out of both ends' tables for it.
    public func field(_ name: String, _ value: String, neverIndexed: Bool = false) {
        block.append(name, value, neverIndexed: neverIndexed)
    }

    /// A regular header field with a decimal value.
    public func field(_ name: String, _ value: Int) {
        block.append(name, value)
    }

    // MARK: The connection's side

    /// Forgets the last request's fields.
    func reset() {
        block.reset()
        method = nil
        path = nil
    }

    /// Calls `body` with the nghttp2 name/value pairs of the request written since
    /// `reset`: pseudo-header fields first, as HTTP/2 requires.
    func withNameValues<R>(_ body: (UnsafePointer<nghttp2_nv>, Int) -> R) -> R {
        block.withNameValues(leading: 4, { index in
            switch index {
            case 0: method ?? post
            case 1: scheme
            case 2: authority
            default: path ?? root
            }
        }, body)
    }
}
