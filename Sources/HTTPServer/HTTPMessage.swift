public import Foundation
// The header fields and statuses are the shared model of every transport.
@_exported public import HTTPTypes

/// A complete HTTP request, body included.
public struct HTTPRequest: Sendable {
    /// The method, upper case (`GET`, `PUT`, …).
    public var method: String
    /// The path, without the query string, percent-decoded.
    public var path: String
    /// Query parameters in order, decoded.
    public var query: [(name: String, value: String)]
    /// Header fields.
    public var headers: HTTPHeaders
    /// The body (empty when there was none).
    public var body: Data
    /// The peer's address, as `ip:port`, when known.
    public var remoteAddress: String?
    /// The peer's IP address alone (no port), when known.
    public var remoteHost: String?

    /// Creates a request.
    public init(
        method: String, path: String, query: [(name: String, value: String)] = [],
        headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(), remoteAddress: String? = nil,
        remoteHost: String? = nil
    ) {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
        self.remoteHost = remoteHost
    }

    /// The first value of query parameter `name`, if any.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.name == name }?.value
    }
}

/// An HTTP response: a complete body, or one streamed (`stream`).
public struct HTTPResponse: Sendable {
    /// The status code.
    public var status: Int
    /// Header fields. `Content-Length` and `Date` are added by the server.
    public var headers: HTTPHeaders
    /// The body (empty for a streamed response).
    public var body: Data
    /// What writes a streamed body, nil for a complete one.
    var producer: (@Sendable (HTTPBodyWriter) async -> Void)?

    /// Whether the body is streamed (made by `stream`) rather than `body`.
    public var isStreamed: Bool { producer != nil }

    /// Creates a response.
    public init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        self.body = body
    }

    /// A response with a body of `contentType`.
    public init(status: Int, contentType: String, body: Data) {
        self.init(status: status, headers: ["Content-Type": contentType], body: body)
    }

    /// A response whose body `body` writes over time, for Server-Sent Events and the
    /// like. The status and headers go out at once, the body chunked (no
    /// `Content-Length`; caching headers such as `Cache-Control: no-cache` are the
    /// caller's), each write as soon as the connection takes it. `body` runs in a
    /// task of its own once the headers are queued; the response ends when it
    /// returns. It should return soon after its writer closes (`write` answers false,
    /// `closed(within:)` true): when the client goes, the server shuts down, or the
    /// client falls more than `HTTPServerConfiguration.streamBufferBytes` behind.
    /// A HEAD request gets the status and headers, and `body` is not run.
    public static func stream(
        status: Int = 200, headers: HTTPHeaders = HTTPHeaders(),
        _ body: @escaping @Sendable (HTTPBodyWriter) async -> Void
    ) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: headers)
        response.producer = body
        return response
    }
}

extension HTTPResponse {
    /// The standard reason phrase of an HTTP status (RFC 9110), as a problem
    /// document's `title` carries it.
    public static func reasonPhrase(_ status: Int) -> String { HTTPStatus.reasonPhrase(status) }
}
