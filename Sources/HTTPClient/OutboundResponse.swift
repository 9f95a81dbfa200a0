public import Foundation

/// The answer to an ``OutboundRequest``, whatever its status.
public struct OutboundResponse: Sendable {
    /// The most body bytes kept; the rest is read and dropped.
    public static let maxBodyBytes = 64 * 1024

    /// The HTTP status code.
    public var status: Int
    /// Header fields in order, lower-case names, repeats kept (`values(of:)`).
    public var headers: HTTPHeaders
    /// The body, or its first ``maxBodyBytes`` bytes.
    public var body: Data
    /// From the call to ``HTTPClient/send(_:)`` to the answer's end, waiting for a
    /// connection included.
    public var duration: Duration

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders, body: Data, duration: Duration) {
        self.status = status
        self.headers = headers
        self.body = body
        self.duration = duration
    }
}
